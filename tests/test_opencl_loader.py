"""``aotwheel.opencl.build_program`` for real on Intel's CPU OpenCL runtime: the first process
JIT-compiles the SPIR-V and stores the device binary, the second creates its program from that
binary; damaged, foreign-driver and rejected entries are rebuilt with one warning, never run."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import PYTHONPATH, REPO, compile_spirv, require
from conftest import CLANG, LLVM_SPIRV, ocloc_zebin_args, require_legacy_ocloc

KERNELS = REPO / "csrc" / "kernels"

# One process of an OpenCL package: load, run every kernel against NumPy (aotwheel.selftest's
# reference runners), and report where the program came from. ``il`` asks the runtime itself
# whether the program was created from IL (SPIR-V) or from a binary.
CHILD = r"""
import json, sys, warnings
import numpy as np, pyopencl as cl
from aotwheel.jitcache import JITCacheWarning
from aotwheel.opencl import load_program
from aotwheel.selftest import _run_program

dev = next(d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU)
ctx = cl.Context([dev]); queue = cl.CommandQueue(ctx)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    loaded = load_program(ctx, dev, sys.argv[1], options=sys.argv[2] if len(sys.argv) > 2 else "")
try:
    il = len(loaded.program.get_info(cl.program_info.IL)) > 0
except UnicodeDecodeError:  # pyopencl decodes CL_PROGRAM_IL as text; SPIR-V is not
    il = True
results = _run_program(cl, ctx, queue, loaded.program, np.random.default_rng(7))
print(json.dumps({
    "source": loaded.source, "stored": loaded.stored, "cache_path": loaded.cache_path, "il": il,
    "kernels": {r.name: r.ok for r in results},
    "warnings": [str(w.message) for w in caught if issubclass(w.category, JITCacheWarning)],
}))
"""


@pytest.fixture(scope="module")
def cpu_runtime():
    pytest.importorskip("pyopencl")
    pytest.importorskip("numpy")
    import pyopencl as cl

    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU]
    except Exception as exc:
        pytest.skip(f"no OpenCL platform ({exc}); source .venv/opencl-cpu.env")
    if not devices:
        pytest.skip("no OpenCL CPU device; source .venv/opencl-cpu.env")


@pytest.fixture(scope="module")
def gemm_spv(tmp_path_factory, cpu_runtime) -> Path:
    require(CLANG, LLVM_SPIRV)
    out = tmp_path_factory.mktemp("spv") / "gemm.spv"
    compile_spirv(KERNELS / "gemm.cl", out)
    return out


def child(images: Path | str, env: dict[str, str], *extra: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(images), *extra], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def env_with(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AOTWHEEL_JIT_CACHE_DIR", "XDG_CACHE_HOME")}
    env["PYTHONPATH"] = PYTHONPATH
    env.update(values)
    return env


def assert_correct(run: dict) -> None:
    assert run["kernels"] and all(run["kernels"].values()), run["kernels"]


def test_first_process_jits_and_stores_second_loads_the_binary(gemm_spv, tmp_path):
    env = env_with(XDG_CACHE_HOME=str(tmp_path / "xdg"))
    first = child(gemm_spv, env)
    assert first["source"] == "jit" and first["stored"] and first["il"]
    assert_correct(first)
    entry = Path(first["cache_path"])
    assert entry.parent.parent == tmp_path / "xdg" / "aotwheel" / "jit" and entry.is_file()
    assert stat.S_IMODE(entry.parent.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600

    second = child(gemm_spv, env)
    assert second["source"] == "jit-cache" and not second["il"]  # the runtime got a binary, not SPIR-V
    assert second["cache_path"] == first["cache_path"] and second["warnings"] == []
    assert_correct(second)


def test_build_options_are_part_of_the_key(gemm_spv, tmp_path):
    env = env_with(AOTWHEEL_JIT_CACHE_DIR=str(tmp_path / "jit"))
    plain = child(gemm_spv, env)
    fast = child(gemm_spv, env, "-cl-fast-relaxed-math")
    assert plain["source"] == fast["source"] == "jit" and plain["cache_path"] != fast["cache_path"]
    assert child(gemm_spv, env, "-cl-fast-relaxed-math")["source"] == "jit-cache"


def _flip(path: Path, offset_from_end: int) -> None:
    blob = bytearray(path.read_bytes())
    blob[-offset_from_end] ^= 0x40
    path.write_bytes(bytes(blob))


def test_flipped_byte_in_the_cached_binary_is_rebuilt_with_one_warning(gemm_spv, tmp_path):
    env = env_with(AOTWHEEL_JIT_CACHE_DIR=str(tmp_path / "jit"))
    entry = Path(child(gemm_spv, env)["cache_path"])
    _flip(entry, 1000)  # inside the device binary (the CPU runtime itself accepts such a binary)
    rebuilt = child(gemm_spv, env)
    assert rebuilt["source"] == "jit" and rebuilt["il"] and rebuilt["stored"]
    assert len(rebuilt["warnings"]) == 1 and "hash check failed" in rebuilt["warnings"][0]
    assert_correct(rebuilt)
    again = child(gemm_spv, env)
    assert again["source"] == "jit-cache" and again["warnings"] == []
    assert_correct(again)


def test_entry_from_another_driver_version_is_rebuilt_with_one_warning(gemm_spv, tmp_path):
    env = env_with(AOTWHEEL_JIT_CACHE_DIR=str(tmp_path / "jit"))
    first = child(gemm_spv, env)
    entry = Path(first["cache_path"])
    header, payload = entry.read_bytes().split(b"\n", 1)
    doc = json.loads(header)
    real_driver = doc["key"]["driver"]
    assert real_driver  # the CPU runtime reports one (CL_DRIVER_VERSION)
    doc["key"]["driver"] = real_driver + ".old"  # as if an older driver had built it
    entry.write_bytes(json.dumps(doc).encode() + b"\n" + payload)
    rebuilt = child(gemm_spv, env)
    assert rebuilt["source"] == "jit"
    assert len(rebuilt["warnings"]) == 1 and "driver" in rebuilt["warnings"][0]
    assert_correct(rebuilt)
    assert json.loads(entry.read_bytes().split(b"\n", 1)[0])["key"]["driver"] == real_driver


def test_entry_the_runtime_rejects_is_rebuilt_with_one_warning(gemm_spv, tmp_path):
    import hashlib

    env = env_with(AOTWHEEL_JIT_CACHE_DIR=str(tmp_path / "jit"))
    entry = Path(child(gemm_spv, env)["cache_path"])
    header, _ = entry.read_bytes().split(b"\n", 1)
    doc = json.loads(header)
    junk = b"not a device binary" * 8  # passes the hash check; clCreateProgramWithBinary refuses it
    doc["sha256"] = hashlib.sha256(junk).hexdigest()
    entry.write_bytes(json.dumps(doc).encode() + b"\n" + junk)
    rebuilt = child(gemm_spv, env)
    assert rebuilt["source"] == "jit" and len(rebuilt["warnings"]) == 1
    assert "rejected by the runtime" in rebuilt["warnings"][0]
    assert_correct(rebuilt)
    assert child(gemm_spv, env)["source"] == "jit-cache"


def test_cache_off_keeps_nothing(gemm_spv, tmp_path):
    env = env_with(AOTWHEEL_JIT_CACHE_DIR="off", XDG_CACHE_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"))
    for _ in range(2):
        run = child(gemm_spv, env)
        assert run["source"] == "jit" and not run["stored"] and run["cache_path"] is None
        assert_correct(run)
    # (pyopencl keeps its own invoker cache under XDG_CACHE_HOME/pytools; aotwheel writes nothing)
    assert not list(tmp_path.rglob("aotwheel"))


def test_folder_of_another_user_is_never_used(gemm_spv, tmp_path):
    if os.getuid() != 0:
        pytest.skip("needs root to give the folder to another user")
    shared = tmp_path / "jit"
    shared.mkdir(mode=0o777)
    os.chown(shared, 65534, 65534)
    env = env_with(AOTWHEEL_JIT_CACHE_DIR=str(shared))
    run = child(gemm_spv, env)
    assert run["source"] == "jit" and not run["stored"]
    assert len(run["warnings"]) == 1 and "another user" in run["warnings"][0]
    assert list(shared.iterdir()) == []  # nothing written into another user's folder
    assert_correct(run)


def test_open_folder_of_this_user_is_made_private(gemm_spv, tmp_path):
    mine = tmp_path / "jit"
    mine.mkdir()
    mine.chmod(0o777)
    run = child(gemm_spv, env_with(AOTWHEEL_JIT_CACHE_DIR=str(mine)))
    assert run["stored"] and stat.S_IMODE(mine.stat().st_mode) == 0o700


def test_fat_binary_without_a_matching_device_jits_its_generic_ir_and_caches_it(tmp_path, cpu_runtime):
    require(CLANG, LLVM_SPIRV, "ocloc")
    spv = tmp_path / "elementwise.spv"
    compile_spirv(KERNELS / "elementwise.cl", spv)
    subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc,acm-g10", "-output", "k.ar"],
                   cwd=tmp_path, check=True, capture_output=True)
    env = env_with(AOTWHEEL_JIT_CACHE_DIR=str(tmp_path / "jit"))
    first = child(tmp_path / "k.ar", env)  # a CPU is not an Intel GPU: the driver rules say JIT
    assert first["source"] == "jit" and first["stored"]
    second = child(tmp_path / "k.ar", env)
    assert second["source"] == "jit-cache" and not second["il"]
    assert_correct(first)
    assert_correct(second)
    # keyed by the SPIR-V: the plain .spv finds the same entry
    assert child(spv, env)["cache_path"] == first["cache_path"]


def test_bad_images_are_one_clear_error(tmp_path, cpu_runtime):
    from aotwheel.errors import AotwheelError
    from aotwheel.opencl import device_code

    (tmp_path / "x.bin").write_bytes(b"\x7fELF" + bytes(32))
    for images, words in ((tmp_path / "x.bin", "neither SPIR-V nor"), (tmp_path / "missing.spv", "no such file"),
                          ("no_such_module_xyz", "neither a file nor an importable module"), (3.5, "not float"),
                          (os.path.realpath(sys.executable), "nor an aotwheel-built extension \\(no embedded images\\)")):
        with pytest.raises(AotwheelError, match=words):
            device_code(images)  # type: ignore[arg-type]


class _RecordingProgram:
    """Stands in for pyopencl.Program where the real part cannot exist here (an Intel GPU)."""

    made: list[tuple[str, bytes]] = []

    def __init__(self, context, *args):
        if len(args) == 2:  # (devices, binaries)
            _RecordingProgram.made.append(("binary", bytes(args[1][0])))
        else:  # (IL)
            _RecordingProgram.made.append(("il", bytes(args[0])))

    def build(self, options="", devices=None):
        return self


def test_intel_gpu_double_gets_the_fat_binary_when_a_member_matches(tmp_path, monkeypatch):
    """The loader's choice on an Intel GPU (a test double: no Intel GPU exists here): a device
    whose IP has a member gets the fat binary (the driver then picks the member); another gets the SPIR-V."""
    require(CLANG, LLVM_SPIRV, "ocloc")
    pytest.importorskip("pyopencl")
    import pyopencl as cl

    from aotwheel import opencl
    from aotwheel.probe import ProbedDevice

    spv = tmp_path / "e.spv"
    compile_spirv(KERNELS / "elementwise.cl", spv)
    subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc,acm-g10", "-output", "k.ar", *ocloc_zebin_args()],
                   cwd=tmp_path, check=True, capture_output=True)  # zebin members, as aotwheel builds them
    fat = (tmp_path / "k.ar").read_bytes()
    monkeypatch.setattr(cl, "Program", _RecordingProgram)
    for ip, expected_source, expected_kind, expected_bytes in (
            ("12.60.7", opencl.NATIVE, "binary", fat),        # pvc: its member is there
            ("12.0.0", opencl.JIT, "il", spv.read_bytes())):  # tgllp: not covered -> SPIR-V
        gpu = ProbedDevice(name="Intel(R) Data Center GPU (double)", backend="opencl", kind="gpu", vendor="intel", ip=ip,
                           platform="Intel(R) OpenCL Graphics", driver="24.0", spirv=True)
        monkeypatch.setattr("aotwheel.backends.intel.probes.opencl.describe", lambda cl_, platform, device, index=0, lib_cache=None, g=gpu: g)
        _RecordingProgram.made.clear()
        device = type("Dev", (), {"platform": None})()
        loaded = opencl.load_program(None, device, tmp_path / "k.ar", cache=opencl.JitCache(None))
        assert loaded.source == expected_source
        assert _RecordingProgram.made == [(expected_kind, expected_bytes)]


def test_intel_gpu_double_gets_a_legacy_fat_binary_only_from_a_driver_before_26_18(tmp_path, monkeypatch):
    """Debian 12's ocloc's own default (legacy members): the loader hands the fat binary to a driver
    that still runs them natively (22.43), the SPIR-V to one that ignores their device code (26.18+;
    docs/formats.md §10). Test double: no Intel GPU exists here."""
    require(CLANG, LLVM_SPIRV, "ocloc")
    require_legacy_ocloc()
    pytest.importorskip("pyopencl")
    import pyopencl as cl

    from aotwheel import opencl
    from aotwheel.probe import ProbedDevice

    spv = tmp_path / "e.spv"
    compile_spirv(KERNELS / "elementwise.cl", spv)
    subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc,acm-g10", "-output", "k.ar"],
                   cwd=tmp_path, check=True, capture_output=True)
    fat = (tmp_path / "k.ar").read_bytes()
    monkeypatch.setattr(cl, "Program", _RecordingProgram)
    for driver, expected_source, expected_kind, expected_bytes in (
            ("22.43.24595", opencl.NATIVE, "binary", fat), ("26.27.039122", opencl.JIT, "il", spv.read_bytes())):
        gpu = ProbedDevice(name="Intel(R) Data Center GPU (double)", backend="opencl", kind="gpu", vendor="intel", ip="12.60.7",
                           platform="Intel(R) OpenCL Graphics", driver=driver, spirv=True)
        monkeypatch.setattr("aotwheel.backends.intel.probes.opencl.describe", lambda cl_, platform, device, index=0, lib_cache=None, g=gpu: g)
        _RecordingProgram.made.clear()
        device = type("Dev", (), {"platform": None})()
        loaded = opencl.load_program(None, device, tmp_path / "k.ar", cache=opencl.JitCache(None))
        assert loaded.source == expected_source, driver
        assert _RecordingProgram.made == [(expected_kind, expected_bytes)], driver
