"""Run-time check for NVIDIA GPUs (aotwheel.backends.nvidia.rules) on real nvcc-built libraries and wheels.

No GPU here: devices are assumed by compute capability (``sm_90``), as ``--device`` does; the
real probe path runs on the H100 (benchmarks/cuda_h100.py). Expected verdicts follow NVIDIA's
documented rules, written by hand.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from aotwheel.backends.nvidia.rules import cuda_files
from aotwheel.runtime import JITError, JITWarning, check, jit_message

from _cuda_util import REPO, VADD, nvcc_out, source

pytestmark = pytest.mark.usefixtures("nvcc")


def check_cuda(path, devices=None, *, policy=None):  # type: ignore[no-untyped-def]
    """The NVIDIA-only view of the one run-time loop (what cuda_check.check_cuda was)."""
    return check(path, devices, policy=policy, vendor="nvidia")


def lib(name: str, *gencode: str) -> Path:
    return nvcc_out(name, "-shared", "-Xcompiler", "-fPIC", *gencode, str(source("vadd.cu", VADD)))


@pytest.fixture(scope="module")
def libs() -> dict[str, Path]:
    return {
        "sm_90": lib("libcheck_sm90.so", "-gencode=arch=compute_90,code=sm_90"),
        "sm_80+ptx": lib("libcheck_sm80ptx.so", "-gencode=arch=compute_80,code=[sm_80,compute_80]"),
        "ptx": lib("libcheck_ptx80.so", "-gencode=arch=compute_80,code=compute_80"),
    }


@pytest.mark.parametrize(
    "variant, device, verdict",
    [
        ("sm_90", "sm_90", "native"),
        ("sm_80+ptx", "sm_90", "jit"),
        ("ptx", "sm_90", "jit"),
        ("sm_80+ptx", "sm_86", "native"),
        ("sm_90", "sm_100", "unsupported"),
        ("ptx", "sm_75", "unsupported"),
        ("sm_90", "sm_107", "unsupported"),  # a GPU newer than nvcc 13.0 still gets a verdict
        ("ptx", "sm_107", "jit"),
    ],
)
def test_verdicts_on_real_libraries(libs: dict[str, Path], variant: str, device: str, verdict: str) -> None:
    [v] = check_cuda(libs[variant], device, policy="ignore")
    assert v.verdict == verdict
    assert v.ip == f"cc {device[3:-1]}.{device[-1]}"


def test_rdc_library_loses_its_ptx_at_device_link() -> None:
    # -rdc=true: nvlink keeps cubins only, so the compute_90 PTX cannot serve a newer GPU.
    so = nvcc_out(
        "libcheck_rdc.so", "-shared", "-Xcompiler", "-fPIC", "-rdc=true", "-gencode=arch=compute_90,code=[sm_90,compute_90]", str(source("vadd.cu", VADD))
    )
    [v] = check_cuda(so, "sm_100", policy="ignore")
    assert v.verdict == "unsupported" and v.targets == ("sm_90",)


def test_jit_warns_once_per_device_and_binary(libs: dict[str, Path]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_cuda(libs["ptx"], "sm_90", policy="warn")
        check_cuda(libs["ptx"], "sm_90", policy="warn")
        check_cuda(libs["sm_90"], "sm_90", policy="warn")  # native: no warning
    jit = [w for w in caught if issubclass(w.category, JITWarning)]
    assert len(jit) == 1
    text = str(jit[0].message)
    assert "compute_80 PTX" in text and "USE_AOT_DEVLIST=sm_90,ptx" in text and "AOTWHEEL_JIT=ignore" in text


def test_jit_error_policy_raises_every_time(libs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTWHEEL_JIT", "error")
    for _ in range(2):
        with pytest.raises(JITError, match="will JIT-compile") as exc:
            check_cuda(libs["sm_80+ptx"], "sm_90")
        assert "AOTWHEEL_JIT=error is set: set AOTWHEEL_JIT=warn" in str(exc.value) and "to fail" not in str(exc.value)


def test_force_ptx_jit_environment(libs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_FORCE_PTX_JIT", "1")
    [v] = check_cuda(libs["sm_80+ptx"], "sm_80", policy="ignore")
    assert (v.verdict, v.image) == ("jit", "compute_80")


def test_wheel_members_are_checked(libs: dict[str, Path], tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-cp310-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(libs["sm_90"], "demo/_k.abi3.so")
        zf.writestr("demo/__init__.py", "")
    [f] = cuda_files(wheel)
    assert f.path.endswith("!demo/_k.abi3.so") and [t.name for t in f.targets] == ["sm_90"]
    [v] = check_cuda(wheel, "sm_90", policy="ignore")
    assert v.verdict == "native"


def test_no_cuda_images_and_no_gpu(libs: dict[str, Path]) -> None:
    assert check_cuda(sys.executable, "sm_90", policy="ignore") == []
    from aotwheel.backends.nvidia.probe import probe_cuda

    gpus = probe_cuda().devices  # none here (no libcuda); one verdict per GPU where there are some
    assert len(check_cuda(libs["sm_90"], None, policy="ignore")) == len(gpus)


def test_cli_exit_status_and_json(libs: dict[str, Path]) -> None:
    env = {"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin"}
    ok = subprocess.run(
        [sys.executable, "-m", "aotwheel", "check", str(libs["sm_90"]), "--device", "sm_90", "--json"], capture_output=True, text=True, env=env, check=False
    )
    assert ok.returncode == 0 and '"verdict": "native"' in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "aotwheel", "check", str(libs["sm_90"]), "--device", "sm_120"], capture_output=True, text=True, env=env, check=False
    )
    assert bad.returncode == 1 and "unsupported" in bad.stdout and "sm_120" in bad.stdout
    typo = subprocess.run(
        [sys.executable, "-m", "aotwheel", "check", str(libs["sm_90"]), "--device", "sm90"], capture_output=True, text=True, env=env, check=False
    )
    assert typo.returncode == 2 and typo.stderr.startswith("aotwheel: error: ") and "sm_90" in typo.stderr


def test_jit_message_names_the_rebuild() -> None:
    from aotwheel.results import Verdict

    v = Verdict("NVIDIA H100", "cc 9.0", "jit", "compute_80", "r", "ptx-jit", "/x/lib.so", "gpu", ("sm_80", "compute_80"), "nvidia",
                version=(9, 0))  # as rules.decide_cuda writes it: the compute capability as numbers beside ip's text
    assert "USE_AOT_DEVLIST=sm_80,sm_90,ptx" in jit_message(v)
