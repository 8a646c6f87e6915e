"""Finding a clang + llvm-spirv pair that turns OpenCL C into SPIR-V (stdlib only).

clang and the SPIR-V translator must share an LLVM major version: llvm-spirv-N reads only
the bitcode of LLVM N. We therefore look for matching pairs, newest first.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable

# The pair's record lives with the build step that uses it, so that each `spirv` step process
# need not import this backend package (aotwheel.model, aotwheel.config, typing, ...).
from aotwheel.backends.intel.buildsteps.spirv import SpirvToolchain as SpirvToolchain
from aotwheel.backends.intel.variables import CLANG, LLVM_SPIRV
from aotwheel.errors import ToolchainError

#: LLVM majors we try, newest first (clang-N with llvm-spirv-N).
SUPPORTED_MAJORS = tuple(range(19, 14, -1))

CLANG_HINT = "Try: apt-get install clang-15 llvm-spirv-15 (or set AOTWHEEL_CLANG and AOTWHEEL_LLVM_SPIRV)"

_VERSION_RE = re.compile(r"version\s+(\d+)\.(\d+)\.(\d+)")


def tool_version(path: str) -> str:
    """``maj.min.patch`` from ``<path> --version``; raises :class:`ToolchainError` if it does not run."""
    import subprocess

    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"Cannot run {path} --version ({exc}); reinstall it. {CLANG_HINT}") from None
    m = _VERSION_RE.search(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not m:
        raise ToolchainError(f"{path} --version did not report an LLVM version (exit {proc.returncode}). {CLANG_HINT}")
    return ".".join(m.groups())


def find_spirv_toolchain(clang: str | None = None, llvm_spirv: str | None = None, *,
                         version: Callable[[str], str] = tool_version) -> SpirvToolchain:
    """Locate clang and llvm-spirv of the same LLVM major.

    Explicit arguments win, then ``$AOTWHEEL_CLANG`` / ``$AOTWHEEL_LLVM_SPIRV``, then
    ``clang-N`` + ``llvm-spirv-N`` on ``PATH`` for N in :data:`SUPPORTED_MAJORS`. ``version``
    answers a tool's ``maj.min.patch`` (default :func:`tool_version`: runs it; configure's is
    memoised in the cache). Raises :class:`ToolchainError` naming the missing tool and the package
    to install.
    """
    clang = clang or CLANG.given()
    llvm_spirv = llvm_spirv or LLVM_SPIRV.given()
    if clang and llvm_spirv:
        return _pair(_which(clang, "clang"), _which(llvm_spirv, "llvm-spirv"), version)

    found_clang: list[int] = []
    for major in SUPPORTED_MAJORS:
        c = clang or shutil.which(f"clang-{major}")
        if not c:
            continue
        found_clang.append(major)
        s = llvm_spirv or shutil.which(f"llvm-spirv-{major}")
        if s:
            pair = _pair(_which(c, "clang"), _which(s, "llvm-spirv"), version)
            if clang or llvm_spirv or pair.major == major:
                return pair
    if not found_clang:
        raise ToolchainError(f"Missing clang (clang-15 ... clang-19) to compile OpenCL C to SPIR-V. {CLANG_HINT}")
    major = found_clang[0]
    raise ToolchainError(
        f"Missing llvm-spirv-{major} (the SPIR-V translator matching clang-{major}). "
        f"Try: apt-get install llvm-spirv-{major} (or set AOTWHEEL_LLVM_SPIRV)"
    )


def _which(name: str, what: str) -> str:
    path = shutil.which(name)
    if not path:
        raise ToolchainError(f"Missing {what} at '{name}'. {CLANG_HINT}")
    return os.path.abspath(path)


def _pair(clang: str, llvm_spirv: str, version: Callable[[str], str] = tool_version) -> SpirvToolchain:
    cv, sv = _both(version, clang, llvm_spirv)
    if cv.split(".")[0] != sv.split(".")[0]:
        raise ToolchainError(
            f"clang {cv} ({clang}) and llvm-spirv {sv} ({llvm_spirv}) differ in LLVM major version; "
            f"install the matching llvm-spirv-{cv.split('.')[0]}"
        )
    return SpirvToolchain(clang=clang, clang_version=cv, llvm_spirv=llvm_spirv, llvm_spirv_version=sv)


def _both(version: Callable[[str], str], first: str, second: str) -> tuple[str, str]:
    """``version`` of both tools, asked at the same time: on a machine whose cache has not seen
    them yet, each ``--version`` run is ~40 ms of the configure step. The first error is raised."""
    import threading

    answers: list[str | BaseException] = []

    def ask() -> None:
        try:
            answers.append(version(second))
        except BaseException as exc:  # re-raised below, in the caller's thread
            answers.append(exc)

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    try:
        cv = version(first)
    finally:
        worker.join()
    sv = answers[0]
    if isinstance(sv, BaseException):
        raise sv
    return cv, sv

