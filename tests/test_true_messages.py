"""Every message issue 41 found untrue now tells the truth (item 3), each run as a user runs it:
a real `aotwheel` process against the installed tools."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, require, unbuildable_devices


def aotwheel(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "TORCH_XPU_", "AOTWHEEL_DEVICE", "AOTWHEEL_JIT"))}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, env={**clean, **env}, timeout=120)


def _unbuildable() -> list[str]:
    require("ocloc")
    names = unbuildable_devices()
    if "bmg-g21" not in names:
        pytest.skip("the installed ocloc builds bmg-g21 (newer than Debian 12's 22.43)")
    return names


@pytest.mark.parametrize("text", ["bmg-g21", "bmg", "ptl", "lnl-m", "pvc,bmg-g21"])
def test_resolve_of_a_device_this_ocloc_cannot_build_prints_the_note(text: str) -> None:
    unbuildable = _unbuildable()
    proc = aotwheel("resolve", text)
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stdout.splitlines() if line.startswith("note: the installed ocloc ")]
    assert len(notes) == 1, proc.stdout
    named = notes[0].split(" does not know ", 1)[1].split(" (", 1)[0].split(", ")
    assert named and set(named) <= set(unbuildable) and "pvc" not in named, notes[0]
    assert "a build stops at configure" in notes[0]


def test_resolve_of_devices_this_ocloc_builds_has_no_note() -> None:
    require("ocloc")
    proc = aotwheel("resolve", "pvc,acm-g10")
    assert proc.returncode == 0 and "note: the installed ocloc" not in proc.stdout, proc.stdout


def test_build_toolchain_with_a_typo_is_a_typo_error_not_a_toolchain_one() -> None:
    require("ocloc")
    for option in ("--devlist", "--devices"):  # the one name, and the older spelling kept as an alias
        proc = aotwheel("build", "toolchain", option, "pvcc")
        assert proc.returncode == 2
        assert proc.stderr.splitlines() == [f"aotwheel: error: {option}: unknown device 'pvcc'; did you mean pvc or pvc-vg?"], proc.stderr


def test_build_toolchain_of_a_device_this_ocloc_cannot_build_says_which_ocloc_does() -> None:
    _unbuildable()
    proc = aotwheel("build", "toolchain", "--devlist", "pvc,bmg-g21")
    assert proc.returncode == 2 and "cannot build bmg-g21" in proc.stderr and "24.31" in proc.stderr, proc.stderr


@pytest.mark.parametrize(("args", "env", "named"), [
    ((), {"TORCH_XPU_ARCH_LIST": "pcv"}, "TORCH_XPU_ARCH_LIST (environment)"),
    (("--torch-xpu-arch-list=pcv",), {}, "TORCH_XPU_ARCH_LIST (CMake variable)"),  # as CMake's aotwheel_resolve_devlist passes it
    ((), {"USE_AOT_DEVLIST": "pcv", "TORCH_XPU_ARCH_LIST": "pvc"}, "USE_AOT_DEVLIST"),
])
def test_a_typo_names_the_variable_the_list_came_from(args: tuple[str, ...], env: dict[str, str], named: str) -> None:
    proc = aotwheel("resolve", *args, **env)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"aotwheel: error: {named}: unknown device 'pcv'; did you mean pvc?"], proc.stderr


def test_check_jit_error_names_the_flag_not_the_variable(tmp_path: Path) -> None:
    from _build_util import compile_spirv
    from conftest import CLANG, LLVM_SPIRV

    require(CLANG, LLVM_SPIRV)
    spv = tmp_path / "k.spv"
    compile_spirv(REPO / "csrc" / "kernels" / "elementwise.cl", spv)
    flag = aotwheel("check", str(spv), "--devlist", "acm-g11", "--jit", "error")
    assert flag.returncode == 1 and flag.stderr.startswith("aotwheel: error: "), flag.stderr
    assert "AOTWHEEL_JIT=error is set" not in flag.stderr and flag.stderr.rstrip().endswith(
        "; --jit error was given: drop it (or give warn or ignore) to allow the JIT"), flag.stderr
    variable = aotwheel("check", str(spv), "--devlist", "acm-g11", AOTWHEEL_JIT="error")
    assert variable.returncode == 1 and "AOTWHEEL_JIT=error is set: set AOTWHEEL_JIT=warn" in variable.stderr, variable.stderr


# One process of a package: check() at first kernel use, recording what it is told.
_CHECK_CHILD = r"""
import json, sys, warnings
import aotwheel
from aotwheel.runtime import JITCacheNotice, JITWarning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    verdicts = aotwheel.check(sys.argv[1])
print(json.dumps({"verdicts": [v.verdict for v in verdicts if v.kind == "cpu"],
                  "jit_warnings": [str(w.message) for w in caught if issubclass(w.category, JITWarning)],
                  "notices": [str(w.message) for w in caught if issubclass(w.category, JITCacheNotice)]}))
"""


def test_a_process_served_by_the_jit_cache_is_told_so_not_warned_of_a_jit(tmp_path: Path) -> None:
    import json

    from _build_util import compile_spirv
    from _check_util import opencl_cpu_env, run_python
    from conftest import CLANG, LLVM_SPIRV

    require(CLANG, LLVM_SPIRV)
    spv = tmp_path / "k.spv"
    compile_spirv(REPO / "csrc" / "kernels" / "elementwise.cl", spv)
    env = {**opencl_cpu_env(), "AOTWHEEL_JIT_CACHE_DIR": str(tmp_path / "jit")}
    env = {k: v for k, v in env.items() if k not in ("AOTWHEEL_JIT", "AOTWHEEL_DEVICE")}

    def child() -> dict:
        proc = subprocess.run([sys.executable, "-c", _CHECK_CHILD, str(spv)], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first = child()  # nothing cached: the CPU will JIT-compile the SPIR-V, and is warned so
    assert first["verdicts"] == ["jit"] and len(first["jit_warnings"]) == 1 and not first["notices"], first
    load = run_python("import pyopencl as cl\nfrom aotwheel.opencl import load_program\n"
                      "d = next(d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU)\n"
                      f"print(load_program(cl.Context([d]), d, {str(spv)!r}).source)", env)
    assert load.returncode == 0 and load.stdout.strip() == "jit", load.stderr
    second = child()  # the loader will create the program from the cached native build: told so, no JITWarning
    assert second["verdicts"] == ["jit"] and second["jit_warnings"] == [], second
    assert len(second["notices"]) == 1 and "from the JIT cache" in second["notices"][0] and "nothing is compiled now" in second["notices"][0]


def test_a_look_alike_letter_suggests_the_name_it_spells_first() -> None:
    for typed, meant in (("acm-g1O", "acm-g10"), ("acm-gl1", "acm-g11"), ("acm-g1o", "acm-g10")):
        proc = aotwheel("resolve", typed)
        assert proc.returncode == 2
        assert proc.stderr.startswith(f"aotwheel: error: USE_AOT_DEVLIST: unknown device '{typed}'; did you mean {meant} or "), proc.stderr


def test_an_amd_device_on_a_cuda_library_gets_no_mixed_offload_arch() -> None:
    lib = REPO / "tests" / "data" / "cuda-h100" / "libkern_sm_90.so"  # nvcc's sm_90 cubin (tests/data/cuda-h100/README.md)
    proc = aotwheel("check", str(lib), "--devlist", "gfx90a")
    assert proc.returncode == 1, proc.stderr
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("gfx90a")]
    assert "sm_90" not in line.split("; ", 1)[1] and "--offload-arch=gfx90a " in line, line
    assert "it carries no HIP code" in line, line


def test_the_cpu_remedy_of_an_open_toolchain_build_names_no_icpx_flag(tmp_path: Path) -> None:
    from _build_util import compile_spirv
    from conftest import CLANG, LLVM_SPIRV

    require(CLANG, LLVM_SPIRV, "ocloc")
    spv = tmp_path / "k.spv"
    compile_spirv(REPO / "csrc" / "kernels" / "elementwise.cl", spv)
    made = subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc,acm-g10", "-output", "k.ar"],
                          cwd=tmp_path, capture_output=True, text=True, check=False)  # what aotwheel's open toolchain runs
    assert made.returncode == 0, made.stdout
    fat = tmp_path / "k.ar"
    for binary in (spv, fat):  # SPIR-V: the CPU JITs it; the GPU-only fat binary's generic_ir is no CPU's
        proc = aotwheel("check", str(binary), "--devlist", "cpu", AOTWHEEL_JIT="ignore")
        (line,) = [line for line in proc.stdout.splitlines() if line.startswith("cpu")]
        assert "-fsycl-targets" not in line and ("open toolchain builds no native CPU code" in line or "keep JIT fallback on" in line), line
    warned = aotwheel("check", str(spv), "--devlist", "cpu")
    assert "warning:" in warned.stderr and "-fsycl-targets" not in warned.stderr and "open toolchain builds no native CPU code" in warned.stderr


def test_the_cpu_remedy_of_a_sycl_library_still_names_icpx_s_cpu_target(tmp_path: Path) -> None:
    import zstandard

    lib = tmp_path / "libmhc_kernels_xe_2.so"  # vLLM's, built by icpx; links libsycl.so.9
    src = REPO / "tests" / "data" / "vllm-xpu-kernels-0.1.16.2" / "libmhc_kernels_xe_2.so.zst"
    lib.write_bytes(zstandard.ZstdDecompressor().decompress(src.read_bytes(), max_output_size=8 << 20))
    proc = aotwheel("check", str(lib), "--devlist", "cpu")
    assert "-fsycl-targets=spir64_x86_64" in proc.stdout, proc.stdout
