"""Asking an installed ocloc what it is: its version, ``-device`` words and ``--format`` values
(:func:`aotwheel.backends.intel.ocloc.find_ocloc`, which passes its install hint for the error
lines). Apart from :mod:`.ocloc`, whose paths, hints and first releases ``aotwheel resolve``
reads without running ocloc or making this record."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from aotwheel.errors import ToolchainError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess


@dataclass(frozen=True)
class Ocloc:
    path: str
    version: str
    acronyms: frozenset[str] = field(default_factory=frozenset)
    formats: frozenset[str] = field(default_factory=frozenset)  # --format values its help lists

    def supports(self, names: tuple[str, ...]) -> bool:
        """True if ocloc accepts any of ``names`` (a device's name and aliases) as ``-device``."""
        return any(n.lower() in self.acronyms for n in names)


@functools.lru_cache(maxsize=8)
def query(path: str, hint: str) -> Ocloc:
    """What the ocloc at ``path`` is; ``hint``: how to install one, for the error lines."""
    text = _compile_help(path, hint)
    return Ocloc(path=path, version=_version(path, hint), acronyms=frozenset(_acronyms(path, text)), formats=_formats(text))


def _run(args: list[str], hint: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    import subprocess

    try:
        return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise ToolchainError(f"Cannot run ocloc at {args[0]}: {exc.strerror}. {hint}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"ocloc at {args[0]} did not answer within 60 s; check the installation") from None


def _version(path: str, hint: str) -> str:
    # `ocloc query OCL_DRIVER_VERSION` writes a file named after the query into the cwd.
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="aotwheel-ocloc-") as tmp:
        proc = _run([path, "query", "OCL_DRIVER_VERSION"], hint, cwd=tmp)
        out = Path(tmp, "OCL_DRIVER_VERSION")
        if proc.returncode != 0 or not out.is_file():
            raise ToolchainError(f"ocloc at {path} failed 'ocloc query OCL_DRIVER_VERSION' (exit {proc.returncode}); reinstall it. {hint}")
        return out.read_text(errors="replace").strip(" \0\n")


_DEVICE_LIST_RE = re.compile(r"<device_type> can be:(.*?)(?:or hexadecimal|$)", re.S)


def _compile_help(path: str, hint: str) -> str:
    proc = _run([path, "compile", "--help"], hint)
    return proc.stdout + proc.stderr


def _acronyms(path: str, text: str) -> set[str]:
    """The acronyms ocloc's own ``compile --help`` (``text``) lists for ``-device``."""
    m = _DEVICE_LIST_RE.search(text)
    if not m:
        raise ToolchainError(f"Cannot read the device list from '{path} compile --help'; unsupported ocloc version?")
    words = re.split(r"[\s,]+", m.group(1))
    return {w.lower() for w in words if w and w != "version"}


# "--format zebin - Enforce generating zebin binary" (22.43 and 26.27 alike)
_FORMAT_RE = re.compile(r"^\s*--format\s+(\w+)\s+-", re.M)


def _formats(text: str) -> frozenset[str]:
    """The ``--format`` values ocloc's ``compile --help`` lists (``zebin``, ``patchtokens``)."""
    return frozenset(_FORMAT_RE.findall(text))
