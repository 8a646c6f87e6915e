"""NVIDIA's CUDA compiler driver ``nvcc`` (and the ``fatbinary`` tool beside it): where, which
version, which architectures it builds."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from aotwheel.backends.nvidia.variables import NVCC
from aotwheel.errors import ToolchainError

INSTALL_HINT = ("pip install 'aotwheel[cuda]' (NVIDIA's nvcc from PyPI), install the CUDA Toolkit "
                "(https://developer.nvidia.com/cuda-downloads) or set AOTWHEEL_NVCC=/path/to/nvcc")
DEFAULT_DIRS = ("/usr/local/cuda/bin",)
# Where NVIDIA's PyPI wheels (nvidia-cuda-nvcc 13.x, `aotwheel[cuda]`) put nvcc, below site-packages.
PIP_NVCC_DIRS = ("nvidia/cu13/bin",)
_VERSION_RE = re.compile(r"release (\d+)\.(\d+), V([\d.]+)")
_ARCH_RE = re.compile(r"\b(sm|compute)_(\d+)([af]?)\b")


@dataclass(frozen=True)
class Nvcc:
    path: str
    version: str  # "13.0.88"
    release: tuple[int, int]  # (13, 0)
    real_archs: frozenset[int] = field(default_factory=frozenset)  # --list-gpu-code: 75, 80, ...
    virtual_archs: frozenset[int] = field(default_factory=frozenset)  # --list-gpu-arch

    @property
    def bin_dir(self) -> Path:
        return Path(self.path).parent

    @property
    def fatbinary(self) -> str:
        """The ``fatbinary`` tool of the same toolkit."""
        tool = self.bin_dir / "fatbinary"
        if not tool.is_file():
            raise ToolchainError(f"nvcc at {self.path} has no fatbinary beside it; reinstall the CUDA Toolkit or {INSTALL_HINT}")
        return str(tool)

    def supports(self, arch: int) -> bool:
        return arch in self.real_archs


def find_nvcc(explicit: str | None = None) -> Nvcc:
    """Locate nvcc: ``explicit``, ``$AOTWHEEL_NVCC``, ``$CUDACXX``, ``PATH``, ``$CUDA_HOME/bin``,
    NVIDIA's PyPI nvcc in this interpreter's environment (:func:`pip_nvcc_paths`),
    ``/usr/local/cuda/bin``. Raises :class:`ToolchainError` naming the fix when missing or broken."""
    for source, candidate in _candidates(explicit):
        if not candidate:
            continue
        path = shutil.which(candidate) if os.path.sep not in candidate else candidate
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return _query(str(Path(path).resolve()))
        if source != "search":
            raise ToolchainError(f"nvcc from {source} ({candidate}) is not an executable file; fix {source} or {INSTALL_HINT}")
    raise ToolchainError(f"Missing nvcc (CUDA compiler): {INSTALL_HINT}")


def _candidates(explicit: str | None) -> list[tuple[str, str | None]]:
    env = os.environ
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    out: list[tuple[str, str | None]] = [("the explicit path", explicit), (f"${NVCC.name}", NVCC.given(env)), ("$CUDACXX", env.get("CUDACXX"))]
    out.append(("search", "nvcc"))
    if home:
        out.append(("search", str(Path(home, "bin", "nvcc"))))
    out.extend(("search", path) for path in pip_nvcc_paths())
    out.extend(("search", str(Path(d, "nvcc"))) for d in DEFAULT_DIRS)
    return out


def pip_nvcc_paths() -> list[str]:
    """Where ``pip install nvidia-cuda-nvcc`` (13.x) puts nvcc for the running interpreter:
    ``<site-packages>/nvidia/cu13/bin/nvcc`` of its environment, then of each ``sys.path`` entry.
    The environment's own site-packages comes from :mod:`sysconfig`, so a venv's nvcc is still
    found from inside pip's isolated build environment (same interpreter, other ``sys.path``)."""
    paths = sysconfig.get_paths()
    roots = [paths["purelib"], paths["platlib"], *(entry for entry in sys.path if entry)]
    found: list[str] = []
    for root in roots:
        for sub in PIP_NVCC_DIRS:
            candidate = os.path.join(root, sub, "nvcc")
            if candidate not in found:
                found.append(candidate)
    return found


@functools.lru_cache(maxsize=8)
def _query(path: str) -> Nvcc:
    text = _run([path, "--version"])
    m = _VERSION_RE.search(text)
    if not m:
        raise ToolchainError(f"Cannot read the version from '{path} --version'; is it nvcc? {INSTALL_HINT}")
    real = _archs(_run([path, "--list-gpu-code"]), "sm")
    virtual = _archs(_run([path, "--list-gpu-arch"]), "compute")
    if not real:
        raise ToolchainError(f"'{path} --list-gpu-code' listed no architectures; use CUDA 11.0 or newer")
    return Nvcc(path=path, version=m[3], release=(int(m[1]), int(m[2])), real_archs=frozenset(real), virtual_archs=frozenset(virtual))


def _archs(text: str, prefix: str) -> set[int]:
    return {int(m[2]) for m in _ARCH_RE.finditer(text) if m[1] == prefix and not m[3]}


def _run(args: list[str]) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise ToolchainError(f"Cannot run nvcc at {args[0]}: {exc.strerror}; {INSTALL_HINT}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"nvcc at {args[0]} did not answer '{args[1]}' within 60 s; check the CUDA installation") from None
    if proc.returncode != 0:
        first = (proc.stderr or proc.stdout).strip().splitlines()[:1]
        raise ToolchainError(f"'{args[0]} {args[1]}' failed (exit {proc.returncode}: {first[0] if first else 'no output'}); {INSTALL_HINT}")
    return proc.stdout
