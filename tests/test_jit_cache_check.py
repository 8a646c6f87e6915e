"""``aotwheel check`` and the JIT warning about kept JIT results: ``jit (cached native build)``
after ``aotwheel.opencl`` stored one (Intel's CPU OpenCL runtime, for real), and the SYCL
runtime's persistent-cache advice for a real SYCL binary (vLLM's, which links libsycl.so.9)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel import syclcache

from _build_util import REPO, compile_spirv, require
from _check_util import opencl_cpu_env, run_cli, run_python
from conftest import CLANG, LLVM_SPIRV

VLLM = REPO / "tests" / "data" / "vllm-xpu-kernels-0.1.16.2" / "libmhc_kernels_xe_2.so.zst"


@pytest.fixture(scope="module")
def spv(tmp_path_factory) -> Path:
    """A SPIR-V module: what a CPU JIT-compiles (a GPU fat binary's generic_ir is for GPU drivers)."""
    require(CLANG, LLVM_SPIRV)
    d = tmp_path_factory.mktemp("spv")
    compile_spirv(REPO / "csrc" / "kernels" / "elementwise.cl", d / "k.spv")
    return d / "k.spv"


@pytest.fixture(scope="module")
def fatbin(tmp_path_factory) -> Path:
    require(CLANG, LLVM_SPIRV, "ocloc")
    d = tmp_path_factory.mktemp("fat")
    compile_spirv(REPO / "csrc" / "kernels" / "elementwise.cl", d / "k.spv")
    subprocess.run(["ocloc", "compile", "-file", str(d / "k.spv"), "-spirv_input", "-device", "pvc,acm-g10", "-output", "k.ar"],
                   cwd=d, check=True, capture_output=True)
    return d / "k.ar"


@pytest.fixture(scope="module")
def sycl_binary(tmp_path_factory) -> Path:
    import zstandard

    out = tmp_path_factory.mktemp("sycl") / "libmhc_kernels_xe_2.so"
    out.write_bytes(zstandard.ZstdDecompressor().decompress(VLLM.read_bytes(), max_output_size=8 << 20))
    return out


def _cpu_verdict(proc: subprocess.CompletedProcess[str]) -> dict:
    assert proc.returncode == 0, proc.stderr
    (cpu,) = [v for v in json.loads(proc.stdout)["verdicts"] if v["kind"] == "cpu"]
    return cpu


def test_check_says_cached_native_build_after_the_loader_stored_one(spv, tmp_path):
    env = {**opencl_cpu_env(), "AOTWHEEL_JIT_CACHE_DIR": str(tmp_path / "jit"), "AOTWHEEL_JIT": "ignore"}
    before = run_cli(["check", str(spv)], env)
    assert before.returncode == 0 and "[opencl]: jit spirv" in before.stdout, before.stdout
    assert "cached native build" not in before.stdout
    assert _cpu_verdict(run_cli(["check", "--json", str(spv)], env))["cached_native_build"] == {"modules": 1, "cached": 0}

    load = run_python("import pyopencl as cl\nfrom aotwheel.opencl import load_program\n"
                      "d = next(d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU)\n"
                      f"print(load_program(cl.Context([d]), d, {str(spv)!r}).source)", env)
    assert load.returncode == 0 and load.stdout.strip() == "jit", load.stderr

    after = run_cli(["check", str(spv)], env)
    assert "[opencl]: jit (cached native build) spirv" in after.stdout, after.stdout
    assert _cpu_verdict(run_cli(["check", "--json", str(spv)], env))["cached_native_build"] == {"modules": 1, "cached": 1}
    # another cache folder (or none) holds nothing for it
    other = run_cli(["check", str(spv)], {**env, "AOTWHEEL_JIT_CACHE_DIR": str(tmp_path / "empty")})
    assert "cached native build" not in other.stdout
    off = run_cli(["check", str(spv)], {**env, "AOTWHEEL_JIT_CACHE_DIR": "off"})
    assert "cached native build" not in off.stdout


# Runs `aotwheel check` in a child whose inspector entry point and device probes count their calls
# (each call goes on to the real function: the doubles only count).
_COUNTING_CHECK = """
import json, sys
import aotwheel.inspector, aotwheel.probe
from aotwheel.backends.intel.probes import opencl
from aotwheel.cli import main

calls = {"inspect": 0, "opencl": 0, "probes": 0}

def counting(key, real):
    def wrapper(*args, **kwargs):
        calls[key] += 1
        return real(*args, **kwargs)
    return wrapper

aotwheel.inspector.inspect = counting("inspect", aotwheel.inspector.inspect)
opencl.probe = counting("opencl", opencl.probe)
aotwheel.probe.run_backend = counting("probes", aotwheel.probe.run_backend)
status = main(sys.argv[1:])
print(json.dumps(calls), file=sys.stderr)
sys.exit(status)
"""


def _counted_check(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], dict[str, int]]:
    proc = subprocess.run([sys.executable, "-c", _COUNTING_CHECK, "check", *args], capture_output=True, text=True, env=env, timeout=300)
    return proc, json.loads(proc.stderr.splitlines()[-1])


def test_check_inspects_the_binary_once_and_probes_opencl_once(spv, tmp_path):
    # The cached-native-build note needs the binary's SPIR-V modules and the OpenCL device: both
    # come from the check's own inspection and probe, not from a second one.
    env = {**opencl_cpu_env(), "AOTWHEEL_JIT_CACHE_DIR": str(tmp_path / "jit"), "AOTWHEEL_JIT": "ignore"}
    proc, calls = _counted_check(["--json", str(spv)], env)
    assert _cpu_verdict(proc)["cached_native_build"] == {"modules": 1, "cached": 0}
    assert calls["inspect"] == 1 and calls["opencl"] == 1, calls


def test_check_with_device_probes_nothing(spv, tmp_path):
    env = {**opencl_cpu_env(), "AOTWHEEL_JIT_CACHE_DIR": str(tmp_path / "jit"), "AOTWHEEL_JIT": "ignore"}
    for named in (["--device", "cpu,pvc"], []):
        proc, calls = _counted_check(["--json", *named, str(spv)], {**env, **({} if named else {"AOTWHEEL_DEVICE": "cpu,pvc"})})
        assert proc.returncode == 0, proc.stderr
        verdicts = json.loads(proc.stdout)["verdicts"]
        assert [(v["device"], v["verdict"]) for v in verdicts] == [("cpu", "jit"), ("pvc", "jit")]
        assert not any("cached_native_build" in v for v in verdicts)  # a named device is no probed OpenCL device
        assert calls == {"inspect": 1, "opencl": 0, "probes": 0}, (named, calls)


def test_sycl_binary_jit_warning_and_check_advise_the_persistent_cache(sycl_binary, tmp_path):
    env = {k: v for k, v in opencl_cpu_env().items() if not k.startswith("SYCL_CACHE")}
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME="")
    # acm-g10 is not among its targets and dg2 has no compatibility fallback: the driver JITs generic_ir
    proc = run_cli(["check", "--device", "acm-g10", str(sycl_binary)], env)
    assert proc.returncode == 0, proc.stderr
    default = str(tmp_path / "home" / ".cache" / "libsycl_cache")
    advice = [line for line in proc.stdout.splitlines() if line.startswith("SYCL: ")]
    assert len(advice) == 1 and "persistent cache is off" in advice[0] and "SYCL_CACHE_PERSISTENT=1" in advice[0]
    assert default in advice[0]
    warning = [line for line in proc.stderr.splitlines() if "will JIT-compile" in line]
    assert len(warning) == 1 and "SYCL_CACHE_PERSISTENT=1 keeps the result" in warning[0]

    on = {**env, "SYCL_CACHE_PERSISTENT": "1", "SYCL_CACHE_DIR": str(tmp_path / "sycl")}
    js = run_cli(["check", "--json", "--device", "acm-g10", str(sycl_binary)], on)
    assert json.loads(js.stdout)["sycl_cache"] == {"persistent": True, "folder": str(tmp_path / "sycl"),
                                                   "advice": syclcache.state(on).advice()}
    assert "keeps JIT results" in json.loads(js.stdout)["sycl_cache"]["advice"]


def test_advice_never_sets_the_variables(sycl_binary):
    env = {k: v for k, v in opencl_cpu_env().items() if not k.startswith("SYCL_CACHE")}
    code = ("import os, warnings, aotwheel\nwarnings.simplefilter('ignore')\n"
            f"v = aotwheel.check({str(sycl_binary)!r}, devices='acm-g10')\n"
            "print(v[0].verdict, os.environ.get('SYCL_CACHE_PERSISTENT'), os.environ.get('SYCL_CACHE_DIR'))")
    proc = run_python(code, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["jit", "None", "None"]


def test_non_sycl_binary_gets_no_sycl_advice(fatbin):
    env = {**opencl_cpu_env(), "AOTWHEEL_JIT": "warn"}
    proc = run_cli(["check", "--device", "acm-g11", str(fatbin)], env)  # JIT: generic_ir, dg2 has no fallback
    assert proc.returncode == 0 and "will JIT-compile" in proc.stderr and "SYCL" not in proc.stdout + proc.stderr
    assert not syclcache.links_sycl(str(fatbin))


def test_sycl_cache_folder_follows_the_runtime_order():
    assert syclcache.state({"SYCL_CACHE_DIR": "/a", "XDG_CACHE_HOME": "/b", "HOME": "/c"}).folder == "/a"
    assert syclcache.state({"XDG_CACHE_HOME": "/b", "HOME": "/c"}).folder == "/b/libsycl_cache"
    assert syclcache.state({"HOME": "/c"}).folder == "/c/.cache/libsycl_cache"
    none = syclcache.state({"SYCL_CACHE_PERSISTENT": "1"})
    assert none.persistent and none.folder is None and "keeps nothing" in none.advice()
    assert not syclcache.state({"SYCL_CACHE_PERSISTENT": "0", "HOME": "/c"}).persistent


def test_links_sycl_is_false_for_junk(tmp_path):
    for blob in (b"", b"\x7fELF", b"\x7fELF" + bytes(60), b"not an elf at all"):
        (tmp_path / "x").write_bytes(blob)
        assert syclcache.links_sycl(str(tmp_path / "x")) is False
    assert syclcache.links_sycl(str(tmp_path / "missing")) is False
    assert syclcache.links_sycl(sys.executable) is False
