"""The device-code cache's key for a compiler that reads C++ sources (nvcc, hipcc): the source as
the compiler's own preprocessor sees it for one target, as ccache's preprocessor mode keys it
(standard library only: each build edge is a process of its own).

A key of the source file's bytes alone missed every ``#include``d header: edit a header, rebuild
in a fresh tree, and the cache handed back the code object of the old header. The preprocessor's
output holds every header's text, with the target's macros (``__CUDA_ARCH__``, ``__gfx90a__``)
already applied, so a header read only for one target changes only that target's key.

Line markers (``# 12 "/path/inc.h" 1``) keep their line numbers and flags but only the file's
name, so two checkouts in different folders (pip builds in a temporary one) share entries; the
markers' full paths are what the edge's depfile lists, on a hit as on a miss, so ninja rebuilds
after a header edit in the same tree too.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess

_MARKER = re.compile(rb'^# (\d+) "((?:[^"\\]|\\.)*)"(.*)$')
_PSEUDO = (b"<built-in>", b"<command-line>", b"<command line>")


class PreprocessFailed(Exception):
    """The preprocessor-only run failed: the step compiles uncached and the compiler says why."""


def preprocessed_key(cmd: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None,
                     timeout: float = 600) -> tuple[str, list[str]]:
    """``(sha256, dependencies)`` of the preprocessor-only command ``cmd`` (the compile's own
    arguments plus ``-E``): the digest of its output with each line marker's path cut to the
    file's name, and the absolute paths of the files the markers name, in first-seen order."""
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False, cwd=cwd, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PreprocessFailed(str(exc)) from None
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        raise PreprocessFailed(next((ln for ln in lines if "error" in ln), lines[0] if lines else f"exit status {proc.returncode}"))
    return digest_and_dependencies(proc.stdout, cwd or os.getcwd())


def digest_and_dependencies(text: bytes, cwd: str) -> tuple[str, list[str]]:
    """:func:`preprocessed_key` on preprocessor output ``text`` produced in folder ``cwd``."""
    h = hashlib.sha256()
    deps: dict[str, None] = {}
    for line in text.splitlines(keepends=True):
        if line.startswith(b"# ") and (m := _MARKER.match(line.rstrip(b"\r\n"))):
            path = re.sub(rb"\\(.)", rb"\1", m[2])
            if path not in _PSEUDO:
                deps.setdefault(os.path.normpath(os.path.join(cwd, os.fsdecode(path))))
            h.update(b"# " + m[1] + b' "' + os.path.basename(path) + b'"' + m[3] + b"\n")
        else:
            h.update(line)
    return h.hexdigest(), list(deps)

