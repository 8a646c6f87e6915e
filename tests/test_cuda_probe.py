"""CUDA driver probe (aotwheel.backends.nvidia.probe) and nvcc discovery (aotwheel.backends.nvidia.nvcc).

There is no NVIDIA GPU or libcuda here: the absent and not-a-driver paths run for real; the
present path runs against small fake drivers compiled with gcc (tests named test_fake_gpu_*)
and, for real, on the H100 run (benchmarks/cuda_h100.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from aotwheel.backends.nvidia import nvcc as nvcc_mod
from aotwheel.backends.nvidia.probe import CudaDevice, probe_cuda
from aotwheel.errors import ToolchainError

from _cuda_util import nvcc_path, run

pytestmark = pytest.mark.usefixtures("nvcc")

FAKE_DRIVER = r"""
/* A stand-in for libcuda.so.1 with the documented signatures (cuda.h). */
#include <string.h>
#define NDEV %(ndev)d
static const int cc[2][2] = {{9, 0}, {8, 6}};
static const char *names[2] = {"Fake H100", "Fake A10"};
int cuInit(unsigned flags) { return %(init_rc)d; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGetCount(int *n) { *n = NDEV; return 0; }
int cuDeviceGet(int *d, int ordinal) { if (ordinal >= NDEV) return 101; *d = ordinal; return 0; }
int cuDeviceGetName(char *buf, int len, int d) { strncpy(buf, names[d], len - 1); buf[len - 1] = 0; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
  if (attr == 75) { *v = cc[d][0]; return 0; }   /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
  if (attr == 76) { *v = cc[d][1]; return 0; }   /* ..._MINOR */
  return 1;
}
int cuGetErrorName(int rc, const char **s) { *s = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN"; return 0; }
"""


def fake_driver(tmp_path: Path, *, ndev: int = 2, init_rc: int = 0) -> str:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to build the fake driver")
    src = tmp_path / "fake_cuda.c"
    src.write_text(FAKE_DRIVER % {"ndev": ndev, "init_rc": init_rc})
    lib = tmp_path / f"libfakecuda_{ndev}_{init_rc}.so"
    run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)])
    return str(lib)


def test_absent_driver_gives_a_reason_not_an_error() -> None:
    result = probe_cuda("libcuda-absent-for-aotwheel-tests.so.1")
    assert result.devices == []
    assert result.reason.startswith("no CUDA driver: cannot load libcuda-absent-for-aotwheel-tests.so.1")


def test_default_library_on_this_machine_matches_the_loader() -> None:
    # Whatever the machine: with no libcuda.so.1 the probe says so; with one, devices or a reason.
    found = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    result = probe_cuda()
    if "libcuda.so.1 " not in found and not os.environ.get("LD_LIBRARY_PATH"):
        assert result.devices == [] and "cannot load libcuda.so.1" in result.reason
    else:
        assert result.devices or result.reason


def test_a_library_that_is_not_a_driver() -> None:
    result = probe_cuda("libc.so.6")  # real, loadable, has no cuInit
    assert result.devices == []
    assert "not a CUDA driver" in result.reason and "cuInit" in result.reason


def test_fake_gpu_driver_reports_devices(tmp_path: Path) -> None:
    result = probe_cuda(fake_driver(tmp_path))
    assert result.reason == ""
    assert result.devices == [CudaDevice(0, "Fake H100", (9, 0), 13000), CudaDevice(1, "Fake A10", (8, 6), 13000)]
    assert [d.target for d in result.devices] == ["sm_90", "sm_86"]
    assert result.to_dict()["devices"][0]["cc"] == "9.0"


def test_fake_gpu_driver_without_devices(tmp_path: Path) -> None:
    result = probe_cuda(fake_driver(tmp_path, ndev=0, init_rc=100))
    assert result.devices == []
    assert result.reason == "the CUDA driver found no GPU (cuInit: CUDA_ERROR_NO_DEVICE (100))"


def test_fake_gpu_driver_init_failure(tmp_path: Path) -> None:
    result = probe_cuda(fake_driver(tmp_path, ndev=1, init_rc=999))
    assert result.devices == [] and result.reason == "cuInit failed: CUDA_ERROR_UNKNOWN (999)"


# ---- nvcc discovery --------------------------------------------------------------------------

def test_find_nvcc_reports_what_nvcc_says() -> None:
    path = nvcc_path()
    text = run([path, "--version"]).stdout
    m = re.search(r"release (\d+)\.(\d+), V(\S+)", text)
    assert m
    found = nvcc_mod.find_nvcc(path)
    assert (found.release, found.version) == ((int(m[1]), int(m[2])), m[3])
    listed = {int(w.split("_")[1]) for w in run([path, "--list-gpu-code"]).stdout.split()}
    assert found.real_archs == listed
    assert Path(found.fatbinary).name == "fatbinary"


def test_env_override_wins_and_bad_values_name_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTWHEEL_NVCC", str(tmp_path / "no-nvcc"))
    with pytest.raises(ToolchainError, match=r"\$AOTWHEEL_NVCC .*not an executable"):
        nvcc_mod.find_nvcc()
    monkeypatch.delenv("AOTWHEEL_NVCC")
    monkeypatch.setenv("CUDACXX", str(tmp_path / "also-missing"))
    with pytest.raises(ToolchainError, match=r"\$CUDACXX"):
        nvcc_mod.find_nvcc()


def test_missing_nvcc_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AOTWHEEL_NVCC", "CUDACXX", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(nvcc_mod, "DEFAULT_DIRS", ())
    monkeypatch.setattr(nvcc_mod, "PIP_NVCC_DIRS", ())
    with pytest.raises(ToolchainError) as exc:
        nvcc_mod.find_nvcc()
    assert "Missing nvcc" in str(exc.value) and "AOTWHEEL_NVCC" in str(exc.value) and "\n" not in str(exc.value)
    assert "pip install 'aotwheel[cuda]'" in str(exc.value)


def _pip_nvcc() -> Path:
    """NVIDIA's nvcc wheel (nvidia-cuda-nvcc 13.x) in this interpreter's own site-packages."""
    path = Path(sysconfig.get_paths()["purelib"], "nvidia", "cu13", "bin", "nvcc")
    if not path.is_file():
        pytest.skip("NVIDIA's nvcc from PyPI is not in this environment (bash ci/setup.sh or pip install 'aotwheel[cuda]')")
    return path


def _no_cuda_env(tmp_path: Path) -> dict[str, str]:
    """This environment without any CUDA variable and with a PATH that finds no nvcc."""
    env = {k: v for k, v in os.environ.items() if k not in ("AOTWHEEL_NVCC", "CUDACXX", "CUDA_HOME", "CUDA_PATH")}
    env["PATH"] = "/usr/bin:/bin"
    assert shutil.which("nvcc", path=env["PATH"]) is None
    return env


FIND = "from aotwheel.backends.nvidia.nvcc import find_nvcc; n = find_nvcc(); print(n.path, n.version, n.fatbinary)"


def test_pip_nvcc_is_found_without_path_or_cuda_home(tmp_path: Path) -> None:
    pip_nvcc = _pip_nvcc()
    env = _no_cuda_env(tmp_path)
    out = run_env([sys.executable, "-c", FIND], env).split()
    assert out[0] == str(pip_nvcc.resolve()) and out[2] == str(pip_nvcc.parent / "fatbinary")
    # And it compiles, with nothing of CUDA on PATH (gcc from /usr/bin as the host compiler).
    cu = tmp_path / "k.cu"
    cu.write_text('extern "C" __global__ void k(float *a) { a[threadIdx.x] *= 2.0f; }\n')
    run_env([out[0], "-cubin", "-arch=sm_90", str(cu), "-o", str(tmp_path / "k.cubin")], env)
    assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"


def test_pip_nvcc_is_found_from_an_isolated_build_env(tmp_path: Path) -> None:
    # pip's build isolation runs this interpreter with its site-packages removed from sys.path.
    pip_nvcc = _pip_nvcc()
    code = "import sys, aotwheel.backends.nvidia.nvcc as m; sys.path[:] = [p for p in sys.path if 'site-packages' not in p]; " + FIND.split("; ", 1)[1].replace(
        "find_nvcc()", "m.find_nvcc()"
    )
    out = run_env([sys.executable, "-c", code], _no_cuda_env(tmp_path)).split()
    assert out[0] == str(pip_nvcc.resolve())


def test_path_and_cuda_home_come_before_the_pip_nvcc(tmp_path: Path) -> None:
    pip_nvcc = _pip_nvcc()
    env = _no_cuda_env(tmp_path)
    wrapper = tmp_path / "home" / "bin" / "nvcc"  # a real nvcc behind a wrapper that is not the pip path
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f'#!/bin/sh\nexec "{pip_nvcc}" "$@"\n')
    wrapper.chmod(0o755)
    (wrapper.parent / "fatbinary").symlink_to(pip_nvcc.parent / "fatbinary")
    assert run_env([sys.executable, "-c", FIND], {**env, "CUDA_HOME": str(tmp_path / "home")}).split()[0] == str(wrapper)
    assert run_env([sys.executable, "-c", FIND], {**env, "PATH": f"{wrapper.parent}:/usr/bin:/bin"}).split()[0] == str(wrapper)


def run_env(args: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_a_program_that_is_not_nvcc(tmp_path: Path) -> None:
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    with pytest.raises(ToolchainError, match="Cannot read the version"):
        nvcc_mod.find_nvcc(str(fake))
