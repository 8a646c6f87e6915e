"""Intel's offline compiler ``ocloc``: where it is, which version, which devices it can build."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from aotwheel.config import OCLOC
from aotwheel.errors import ToolchainError

INSTALL_HINT = "Try: apt-get install intel-opencl-icd (Debian/Ubuntu) or install the oneAPI Base Toolkit"


@dataclass(frozen=True)
class Ocloc:
    path: str
    version: str
    acronyms: frozenset[str] = field(default_factory=frozenset)

    def supports(self, names: tuple[str, ...]) -> bool:
        """True if ocloc accepts any of ``names`` (a device's name and aliases) as ``-device``."""
        return any(n.lower() in self.acronyms for n in names)


def find_ocloc(explicit: str | None = None) -> Ocloc:
    """Locate ocloc (``explicit`` path, ``$AOTWHEEL_OCLOC``, then ``PATH``) and query it.

    Raises :class:`ToolchainError` with an install hint when it is missing or unusable.
    """
    candidate = explicit or os.environ.get(OCLOC.name) or shutil.which("ocloc")
    if not candidate:
        raise ToolchainError(f"Missing ocloc (Intel's offline GPU compiler). {INSTALL_HINT}")
    path = str(Path(candidate).resolve()) if os.path.sep in candidate else (shutil.which(candidate) or candidate)
    return _query(path)


@functools.lru_cache(maxsize=8)
def _query(path: str) -> Ocloc:
    return Ocloc(path=path, version=_version(path), acronyms=frozenset(_acronyms(path)))


def _run(args: list[str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise ToolchainError(f"Cannot run ocloc at {args[0]}: {exc.strerror}. {INSTALL_HINT}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"ocloc at {args[0]} did not answer within 60 s; check the installation") from None


def _version(path: str) -> str:
    # `ocloc query OCL_DRIVER_VERSION` writes a file named after the query into the cwd.
    with tempfile.TemporaryDirectory(prefix="aotwheel-ocloc-") as tmp:
        proc = _run([path, "query", "OCL_DRIVER_VERSION"], cwd=tmp)
        out = Path(tmp, "OCL_DRIVER_VERSION")
        if proc.returncode != 0 or not out.is_file():
            raise ToolchainError(f"ocloc at {path} failed 'ocloc query OCL_DRIVER_VERSION' (exit {proc.returncode}); reinstall it. {INSTALL_HINT}")
        return out.read_text(errors="replace").strip(" \0\n")


_DEVICE_LIST_RE = re.compile(r"<device_type> can be:(.*?)(?:or hexadecimal|$)", re.S)


def _acronyms(path: str) -> set[str]:
    """The acronyms ocloc's own ``compile --help`` lists for ``-device``."""
    proc = _run([path, "compile", "--help"])
    m = _DEVICE_LIST_RE.search(proc.stdout + proc.stderr)
    if not m:
        raise ToolchainError(f"Cannot read the device list from '{path} compile --help'; unsupported ocloc version?")
    words = re.split(r"[\s,]+", m.group(1))
    return {w.lower() for w in words if w and w != "version"}
