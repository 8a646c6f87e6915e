"""Helpers for the NVIDIA tests: real nvcc 13 output and real NVIDIA binaries from PyPI.

Everything is made by the real tools (nvcc, fatbinary, cuobjdump from the pinned
``nvidia-cuda-cuobjdump`` wheel) and cached under tests/.cache/cuda/. Expectations come from
those tools (cuobjdump listings, nvcc's own PTX/cubin files) or are written by hand from
NVIDIA's documentation, never from aotwheel's output.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, run_tool

CACHE = REPO / "tests" / ".cache" / "cuda"
KERNELS = REPO / "csrc" / "kernels"
HEADER = REPO / "csrc" / "aotwheel_portable.h"

# Pinned third-party wheels: (requirement, file name, sha256), all measured when pinned.
CUOBJDUMP_WHEEL = (
    "nvidia-cuda-cuobjdump==13.4.92",
    "nvidia_cuda_cuobjdump-13.4.92-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "fb72ca80d0cdd8f5e8e232ce17d3c5aa2a37c3153bb8ef4e010010ed4fdef6c5",
)
NVJPEG_WHEEL = (
    "nvidia-nvjpeg==13.2.3.58",
    "nvidia_nvjpeg-13.2.3.58-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "552b30b11ac8e2bbfb18fd8de31e48756188ebf9b84a8c342a88f07f81a6cdf1",
)
CUFFT_WHEEL = (  # 23,983 fat binary containers in .ldata (tests/test_cuda_sections.py)
    "nvidia-cufft==12.0.0.61",
    "nvidia_cufft-12.0.0.61-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "6c44f692dce8fd5ffd3e3df134b6cdb9c2f72d99cf40b62c32dde45eea9ddad3",
)

VADD = (
    'extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n)'
    " { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n"
)
VSCALE = 'extern "C" __global__ void vscale(float* c, float s, int n)' " { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] *= s; }\n"


def nvcc_path() -> str:
    """nvcc as aotwheel's own discovery finds it (ci/setup.sh installs NVIDIA's from PyPI into .venv)."""
    from aotwheel.backends.nvidia.nvcc import find_nvcc
    from aotwheel.errors import ToolchainError

    try:
        return find_nvcc().path
    except ToolchainError as exc:
        pytest.skip(f"needs nvcc (bash ci/setup.sh installs it from PyPI): {exc}")


def nvcc_link_args(nvcc: str) -> list[str]:
    """``-L <root>/lib`` for NVIDIA's PyPI nvcc, which keeps libcudart_static.a / libcudadevrt.a
    in ``nvidia/cu13/lib`` where its nvcc.profile (written for the toolkit's lib64) does not look."""
    root = Path(nvcc).resolve().parent.parent
    lib = root / "lib"
    return ["-L", str(lib)] if (lib / "libcudart_static.a").is_file() and not (root / "lib64").exists() else []


def run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A real NVIDIA tool, 5 minutes at most."""
    return run_tool(args, cwd, timeout=300)


def source(name: str, text: str) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / name
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def nvcc_out(name: str, *args: str) -> Path:
    """``nvcc <args> -o CACHE/name`` once (cached by name)."""
    out = CACHE / name
    if not out.is_file():
        tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
        nvcc = nvcc_path()
        link = nvcc_link_args(nvcc) if "-shared" in args else []
        run([nvcc, *args, *link, "-o", str(tmp)])
        tmp.replace(out)
    return out


def fetch_wheel(pin: tuple[str, str, str]) -> Path:
    """A pinned wheel from PyPI (pip download), verified by sha256, cached."""
    requirement, filename, sha256 = pin
    dest = CACHE / "wheels"
    path = dest / filename
    if not path.is_file():
        dest.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", *_platform_args(filename), "-d", str(dest), requirement],
            capture_output=True, text=True, check=False, timeout=600,
        )
        if proc.returncode != 0 or not path.is_file():
            pytest.skip(f"cannot download {requirement} from PyPI: {proc.stderr.strip().splitlines()[-1:] or 'no output'}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == sha256, f"{filename}: sha256 {digest} is not the pinned {sha256}"
    return path


def _platform_args(filename: str) -> list[str]:
    """pip download's ``--platform`` (each of the file's platform tags) and, for a CPython tag,
    ``--python-version``: what fetches exactly the pinned file on any host."""
    _name, _version, python, _abi, platform = filename.removesuffix(".whl").split("-")[-5:]
    args = [a for p in platform.split(".") for a in ("--platform", p)]
    return args + (["--python-version", f"{python[2]}.{python[3:]}"] if python.startswith("cp") else [])


def wheel_member(pin: tuple[str, str, str], member: str) -> Path:
    """One file extracted from a pinned wheel (cached)."""
    wheel = fetch_wheel(pin)
    out = CACHE / "extracted" / pin[1] / member
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zf:
            out.write_bytes(zf.read(member))
    return out


def cuobjdump() -> Path:
    """NVIDIA's cuobjdump from the pinned PyPI wheel (the toolkit here does not ship it)."""
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        pytest.skip("the pinned cuobjdump wheel is for linux x86_64")
    tool = wheel_member(CUOBJDUMP_WHEEL, "nvidia/cu13/bin/cuobjdump")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


_LIST_RE = re.compile(r"^(ELF|PTX) file\s+\d+: .*?\.(sm_\d+[af]?)\.(cubin|ptx)$")


def parse_listing(text: str) -> list[tuple[str, str]]:
    """cuobjdump ``--list-elf --list-ptx`` lines as [(kind, arch)] in order, kind "cubin"/"ptx"."""
    out = []
    for line in text.splitlines():
        m = _LIST_RE.match(line.strip())
        if m:
            out.append(("cubin" if m[1] == "ELF" else "ptx", m[2]))
    return out


def listing(path: Path) -> list[tuple[str, str]]:
    return parse_listing(run([str(cuobjdump()), "--list-elf", "--list-ptx", str(path)]).stdout)
