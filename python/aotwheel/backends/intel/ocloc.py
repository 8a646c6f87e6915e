"""Intel's offline compiler ``ocloc``: where it is, which version, which devices it can build."""

from __future__ import annotations

import os
import re

from aotwheel.backends.intel.variables import OCLOC
from aotwheel.errors import ToolchainError
from aotwheel.variables import DEVLIST

TYPE_CHECKING = False  # not typing's: a coverage plan reads FIRST_OCLOC (aotwheel resolve) and runs no ocloc
if TYPE_CHECKING:
    from aotwheel.backends.intel.ocloc_query import Ocloc

INSTALL_HINT = ("Try: apt-get install intel-opencl-icd (Debian 12; on Debian sid/testing: apt-get install intel-ocloc "
                "libigc2 libigdfcl2) or install the oneAPI Base Toolkit")
# The first ocloc release that builds a target (compute-runtime's history, docs/formats.md §10).
# Debian 12's intel-opencl-icd ships 22.43, which builds none of these.
FIRST_OCLOC = {"bmg-g21": "24.31", "lnl-m": "24.31", "ptl-h": "25.05", "ptl-u": "25.05", "bmg-g31": "25.27", "wcl": "25.27"}
# Where a current ocloc comes from (README "Toolchains"): Debian sid's intel-ocloc was 26.27 in 2026-11.
NEWEST_HINT = ("Debian sid/testing: apt-get install intel-ocloc libigc2 libigdfcl2 (26.x), "
               "or Intel's compute-runtime releases")


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:2])


def too_new_message(missing: list[tuple[str, str]], version: str, path: str, *, hint: str = DEVLIST.name) -> str:
    """One line for targets ``(name, ip)`` the installed ocloc cannot build: which ocloc first
    builds each, how to get one, and that leaving them out still works through SPIR-V JIT."""
    named = ", ".join(f"{name} ({ip}; first built by ocloc {FIRST_OCLOC[name]})" if name in FIRST_OCLOC
                      else f"{name} ({ip}; needs an ocloc newer than this one)" for name, ip in missing)
    firsts = [FIRST_OCLOC[name] for name, _ in missing if name in FIRST_OCLOC]
    need = f"ocloc {max(firsts, key=_release)} or newer" if firsts else "a newer ocloc"
    them = "it" if len(missing) == 1 else "them"
    return (f"ocloc {version} at {path} cannot build {named}: install {need} ({NEWEST_HINT}; "
            f"Debian 12's intel-opencl-icd is 22.43) and set AOTWHEEL_OCLOC to it, or leave {them} out of "
            f"{hint}: with JIT fallback on (the default) such devices still run the kernels, JIT-compiled "
            f"from the embedded SPIR-V at first use")


def build_note(names: list[str]) -> str:
    """`` (bmg-g21 needs ocloc 24.31 or newer to build)`` for advice that names targets to build,
    when a named target needs a newer ocloc than some installations have; else ``""``."""
    needs = [f"{n} needs ocloc {FIRST_OCLOC[n]} or newer" for n in names if n in FIRST_OCLOC]
    return f" ({'; '.join(needs)} to build; Debian 12's is 22.43)" if needs else ""


# Image formats (USE_AOT_IMAGE_FORMAT, aotwheel compile --legacy-images) and ocloc's word for each
# after ``--format``: ocloc 22.43 (Debian 12) offers both (its default is legacy), ocloc 26.x
# offers zebin only and writes nothing else (``ocloc compile --help`` lists them).
ZEBIN, LEGACY = "zebin", "legacy"
IMAGE_FORMATS = (ZEBIN, LEGACY)
OCLOC_FORMAT_WORD = {ZEBIN: "zebin", LEGACY: "patchtokens"}


def ocloc_path(explicit: str | None = None) -> str | None:
    """The ocloc to use, as an absolute path (links not followed): ``explicit``, else
    ``$AOTWHEEL_OCLOC``, else ``PATH``; None when none is named or found. The one reader of
    AOTWHEEL_OCLOC: configure (:mod:`.buildsteps.toolchain`), ``aotwheel compile`` and the
    resolver's ocloc check (:func:`find_ocloc`) all find the same binary here."""
    candidate = explicit or OCLOC.given() or _which("ocloc")
    return os.path.abspath(_which(candidate) or candidate) if candidate else None


def _which(cmd: str) -> str | None:
    """``shutil.which(cmd)``, on POSIX without importing shutil (bz2, lzma, fnmatch: a fifth of
    ``python -c pass``, for ``aotwheel resolve``, which runs no ocloc): ``cmd`` itself when it has
    a folder, else the first executable file of that name on ``PATH``."""
    import sys

    if sys.platform == "win32":
        import shutil

        return shutil.which(cmd)

    def runnable(name: str) -> bool:
        return os.path.exists(name) and os.access(name, os.F_OK | os.X_OK) and not os.path.isdir(name)

    if os.path.dirname(cmd):
        return cmd if runnable(cmd) else None
    path = os.environ.get("PATH")
    if path is None:
        try:
            path = os.confstr("CS_PATH")
        except (AttributeError, ValueError):
            path = os.defpath
    if not path:
        return None
    seen: set[str] = set()
    for folder in os.fsdecode(path).split(os.pathsep):
        if folder not in seen:
            seen.add(folder)
            if runnable(name := os.path.join(folder, cmd)):
                return name
    return None


def find_ocloc(explicit: str | None = None) -> Ocloc:
    """Locate ocloc (:func:`ocloc_path`: ``explicit`` path, ``$AOTWHEEL_OCLOC``, then ``PATH``) and query it.

    Raises :class:`ToolchainError` with an install hint when it is missing or unusable.
    """
    path = ocloc_path(explicit)
    if not path:
        raise ToolchainError(f"Missing ocloc (Intel's offline GPU compiler). {INSTALL_HINT}")
    from aotwheel.backends.intel.ocloc_query import query

    return query(path, INSTALL_HINT)


def image_format(text: str | None, source: str) -> str:
    """``zebin`` or ``legacy`` from a setting's text (empty or unset: zebin); anything else is one
    error line naming ``source`` (where the value came from)."""
    value = (text or "").strip().lower() or ZEBIN
    if value not in IMAGE_FORMATS:
        raise ToolchainError(f"{source}={text!r} is not an image format; use zebin (the default) or legacy")
    return value


def format_args(wanted: str, formats: frozenset[str], version: str, path: str, *, source: str) -> tuple[str, ...]:
    """The ocloc arguments that make it write ``wanted`` images: ``--format zebin`` on every ocloc
    that offers it (so that Debian 12's 22.43, whose default is legacy, writes zebin too), ``--format
    patchtokens`` for legacy images where ocloc still offers them. An ocloc whose help lists no
    ``--format`` at all writes its own default (nothing to pass). Legacy images from an ocloc that
    writes zebin only are one error line naming ``source``, how they were asked for (a variable,
    or an option such as ``--legacy-images``)."""
    word = OCLOC_FORMAT_WORD[wanted]
    if word in formats:
        return ("--format", word)
    if wanted == LEGACY and formats:
        asked, undo = (source, f"drop {source}") if source.startswith("-") else (f"{source}=legacy", f"unset {source}")
        raise ToolchainError(
            f"{asked}: ocloc {version} at {path} writes zebin images only (its --format offers "
            f"{', '.join(sorted(formats))}); legacy patch-token images need an ocloc that offers --format patchtokens, "
            f"such as Debian 12's 22.43 (AOTWHEEL_OCLOC), and compute-runtime 26.18 and newer JIT-compile them anyway: "
            f"{undo} to build zebin")
    return ()
