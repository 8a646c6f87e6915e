"""Verdicts per kernel (issue 14 item 4): a library whose kernels exist partly only as spir64_gen
(native) images and partly only as spir64 (SPIR-V) images -- seen in a vllm-xpu-kernels build,
151 + 5 -- runs native on a device its fat binary covers, yet still JIT-compiles the others.
Built for real: ocloc fat binary + clang/llvm-spirv SPIR-V, linked by gcc with a .tgtsym table."""

from __future__ import annotations

import re
import warnings

import pytest

from aotwheel.runtime import JITWarning, check, reset_memo

from _check_util import fat_binary
from _inspect_util import build_so, run, spirv


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    work = tmp_path_factory.mktemp("mixed")
    kernels = {"spir64_gen": ["add", "mul"], "spir64": ["add", "mul", "neg"]}
    return build_so(work, [("spir64_gen", fat_binary("pvc,acm-g10")), ("spir64", spirv(work))], kernels, name="libmixed.so")


def _ir_only(so) -> int:
    """Independent reading: readelf's string dump of .tgtsym."""
    names = re.findall(r"\]\s+sycl-(\S+?)-unknown-unknown\.(\S+)$", run(["readelf", "-p", ".tgtsym", str(so)]).stdout, re.M)
    by = {}
    for triple, kernel in names:
        by.setdefault(triple, set()).add(kernel)
    return len(by["spir64"] - by["spir64_gen"])


def test_native_device_still_jits_the_spirv_only_kernels(mixed):
    reset_memo()
    n = _ir_only(mixed)
    assert n == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (v,) = check(mixed, "pvc")
    assert (v.verdict, v.jit_kernels, v.summary) == ("native", n, "native, 1 kernel JIT")
    (w,) = [c for c in caught if issubclass(c.category, JITWarning)]
    assert "will JIT-compile 1 kernel that exist only as spir64 SPIR-V images" in str(w.message)


def test_devices_without_a_native_image_jit_everything(mixed):
    (gpu, cpu) = check(mixed, "acm-g11,cpu", policy="ignore")
    assert (gpu.verdict, gpu.jit_kernels, gpu.rule) == ("jit", 0, "ir")
    assert (cpu.verdict, cpu.rule) == ("jit", "cpu-ir")


def test_cli_says_native_with_kernels_jit(mixed):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(mixed), "--device", "pvc", "--jit", "ignore"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("pvc (12.60.7): native, 1 kernel JIT 64.12.60.7"), proc.stdout + proc.stderr
