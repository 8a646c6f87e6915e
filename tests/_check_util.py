"""Helpers for the probe / verdict / check / selftest tests.

Device code is made here with the real tools (clang-15, llvm-spirv-15, ocloc, GNU ar) and
cached under tests/.cache/check/. Expectations come from those tools and from docs/formats.md,
never from aotwheel's own output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLANG, LLVM_SPIRV, REPO, require
from conftest import run_tool as _run

CACHE = REPO / "tests" / ".cache" / "check"
KERNELS = REPO / "csrc" / "kernels"

# docs/formats.md §2, written by hand: the ar member names ocloc gives these devices.
PVC_MEMBER = "64.12.60.7"
ACM_G10_MEMBER = "64.12.55.8"

# Any small OpenCL C kernel works for the lookup tests; the real ones are used by selftest.
TINY_KERNEL = """
__kernel void scale(__global float *x, const float a) { x[get_global_id(0)] *= a; }
__kernel void add_one(__global int *x) { x[get_global_id(0)] += 1; }
"""


def spirv(source: str | Path, name: str) -> Path:
    """SPIR-V compiled by clang-15 + llvm-spirv-15 from OpenCL C text or a .cl file."""
    require(CLANG, LLVM_SPIRV)
    CACHE.mkdir(parents=True, exist_ok=True)
    out = CACHE / f"{name}.spv"
    if out.exists():
        return out
    cl = Path(source) if isinstance(source, Path) else CACHE / f"{name}.cl"
    if not isinstance(source, Path):
        cl.write_text(source, encoding="utf-8")
    bc = CACHE / f"{name}.bc"
    _run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(cl), "-o", str(bc)])
    _run([LLVM_SPIRV, str(bc), "-o", str(out)])
    return out


def _format_args(legacy: bool) -> list[str]:
    """zebin images (``--format zebin`` where this ocloc offers it), as aotwheel builds them; or
    ocloc's own default, the legacy patch-token images of Debian 12's 22.43, when ``legacy``."""
    from conftest import ocloc_zebin_args, require_legacy_ocloc

    if legacy:
        require_legacy_ocloc()
        return []
    return ocloc_zebin_args()


def fat_binary(devices: str, *, ir: bool = True, legacy: bool = False) -> Path:
    """ocloc's fat binary (ar) of the tiny kernel for ``devices`` (e.g. "pvc,acm-g10"): zebin
    images, or (``legacy``) Debian 12's ocloc's legacy ones (skips where ocloc writes zebin only)."""
    require("ocloc")
    spv = spirv(TINY_KERNEL, "tiny")
    name = f"fat_{devices.replace(',', '_')}{'' if ir else '_noir'}{'_legacy' if legacy else '_zebin'}"
    out = CACHE / name
    fmt = _format_args(legacy)  # asked before the cache: a legacy test skips where ocloc cannot write legacy images
    if not out.exists():
        args = ["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", devices, "-output", name, *fmt]
        _run(args + ([] if ir else ["-exclude_ir"]), cwd=CACHE)  # no -out_dir: the ar lands in cwd
    return out


def single_binary(device: str, *, legacy: bool = False) -> Path:
    """GNU ar archive holding one ocloc native image as member 64.<ip> and no generic_ir: a
    fat binary "built with JIT fallback off" for one device (zebin, or ``legacy`` as fat_binary)."""
    require("ocloc", "ar")
    spv = spirv(TINY_KERNEL, "tiny")
    member = {"pvc": PVC_MEMBER, "acm-g10": ACM_G10_MEMBER}[device]
    kind = "legacy" if legacy else "zebin"
    out = CACHE / f"only_{device}_{kind}.ar"
    fmt = _format_args(legacy)
    if not out.exists():
        work = CACHE / f"only_{device}_{kind}"
        work.mkdir(exist_ok=True)
        _run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", "k",
              "-output_no_suffix", "-exclude_ir", "-out_dir", str(work), *fmt])
        (image,) = [p for p in work.iterdir() if p.name.startswith("k")]  # "k" with -output_no_suffix
        shutil.copy(image, work / member)
        _run(["ar", "rc", str(out), member], cwd=work)
    return out


def ar_members(path: Path) -> list[str]:
    """Member names as GNU ar lists them (trailing '/' of GNU names removed)."""
    require("ar")
    proc = subprocess.run(["ar", "t", str(path)], capture_output=True, text=True, check=True)
    return [line.rstrip("/") for line in proc.stdout.split()]


def kernel_names_in_sources() -> list[str]:
    """Kernel names declared in csrc/kernels/*.cl (read with a regex, not through aotwheel)."""
    names: list[str] = []
    for cl in sorted(KERNELS.glob("*.cl")):
        names += re.findall(r"__kernel\s+(?:__attribute__\(\(.*?\)\)\s*)?void\s+(\w+)", cl.read_text(), re.S)
    return names


def aotwheel_pythonpath() -> str:
    """PYTHONPATH that makes a child process import the same aotwheel as this test process."""
    import aotwheel

    return str(Path(aotwheel.__file__).resolve().parents[1])


def cpu_runtime_library() -> Path | None:
    """libintelocl.so from the PyPI package intel-opencl-rt in this environment."""
    for prefix in (sys.prefix, sys.base_prefix):
        lib = Path(prefix, "lib", "libintelocl.so")
        if lib.is_file():
            return lib
    return None


def opencl_cpu_env() -> dict[str, str]:
    """Environment whose OpenCL loader sees Intel's CPU runtime (skip when it is not installed)."""
    pytest.importorskip("pyopencl", reason="pyopencl missing (installed by ci/setup.sh)")
    pytest.importorskip("numpy", reason="numpy missing (installed by ci/setup.sh)")
    lib = cpu_runtime_library()
    if lib is None:
        pytest.skip("Intel CPU OpenCL runtime not installed (run ci/install-opencl-cpu.sh)")
    vendors = CACHE / "vendors"
    vendors.mkdir(parents=True, exist_ok=True)
    (vendors / "intel-cpu.icd").write_text(f"{lib}\n", encoding="utf-8")
    return child_env(OCL_ICD_VENDORS=str(vendors))


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("AOTWHEEL_DEVICE", "AOTWHEEL_JIT", "OCL_ICD_VENDORS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [aotwheel_pythonpath(), env.get("PYTHONPATH")]))
    env["AOTWHEEL_JIT_CACHE_DIR"] = "off"  # tests never fill the user's JIT cache; pass a folder to use one
    env.update(extra)
    return env


def run_python(code: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, env=env, timeout=300)
