"""`aotwheel check` on a package that serves several vendors with separate libraries, and what it
says when there is nothing to check.

bitsandbytes 0.49.0 (pinned download, 59 MB) ships CUDA 11.8-13.0 libraries (cubins up to sm_90
per cuobjdump; 12.8+ also newer archs), ROCm libraries (AMD code objects) and one XPU library
(Intel). It loads only the library for the device's backend, so on an sm_90 GPU the ROCm and XPU
libraries are not for this device and must not fail the check.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from _inspect_util import REPO, fetch

pytestmark = pytest.mark.usefixtures("large_binaries")

WHEEL = ("bitsandbytes", "0.49.0", "bitsandbytes-0.49.0-py3-none-manylinux_2_24_x86_64.whl",
         "0c46cdef50b3174463b6bdf13715c9f1f00b360be3626e3c5d2f8d226af2cf3f")


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin", "OCL_ICD_VENDORS": "/nonexistent"}
    return subprocess.run([sys.executable, "-m", "aotwheel", "check", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_multivendor_wheel_passes_on_the_device_it_serves() -> None:
    wheel = str(fetch(*WHEEL))
    proc = _check(wheel, "--device", "sm_90")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == f"{wheel}: native on: sm_90"
    others = [ln for ln in lines if "not for this device" in ln]
    assert len(others) == 6  # 5 ROCm libraries and 1 XPU library (the wheel's file list)
    assert sum("only AMD" in ln for ln in others) == 5 and sum("only Intel" in ln for ln in others) == 1
    rows = json.loads(_check(wheel, "--device", "sm_90", "--json").stdout)["verdicts"]
    assert sorted(r["binary"].rsplit("/", 1)[-1] for r in rows if r.get("for_this_device") is False) == sorted(
        [f"libbitsandbytes_rocm{v}.so" for v in (62, 63, 64, 70, 71)] + ["libbitsandbytes_xpu.so"])
    # The libraries that serve a device still decide: the ROCm builds have no gfx1030 code object.
    proc = _check(wheel, "--device", "gfx1030")
    assert proc.returncode == 1 and proc.stdout.splitlines()[-1] == f"{wheel}: unsupported on: gfx1030"


def test_one_library_of_another_vendor_alone_is_still_unsupported() -> None:
    wheel = str(fetch(*WHEEL))
    import zipfile

    with zipfile.ZipFile(wheel) as zf, open(REPO / "tests" / ".cache" / "bnb049_rocm64.so", "wb") as out:
        out.write(zf.read("bitsandbytes/libbitsandbytes_rocm64.so"))
    proc = _check(str(REPO / "tests" / ".cache" / "bnb049_rocm64.so"), "--device", "sm_90")
    assert proc.returncode == 1 and "unsupported [rule other-vendor]" in proc.stdout, proc.stdout


def test_no_device_code_says_so() -> None:
    proc = _check(sys.executable, "--device", "sm_90")  # devices given, no GPU code in the interpreter
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"{sys.executable}: no device code (no GPU image or IR of any vendor in it): nothing to check"
