"""The cached compile edge of a compiler that reads C++ sources (nvcc, hipcc) and its key: the
source as the compiler's own preprocessor sees it for one target, as ccache's preprocessor mode
keys it (standard library only: each build edge is a process of its own).

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
import sys
from pathlib import Path

TYPE_CHECKING = False  # not typing's: each build edge is a process, typing ~2.5 ms of it
if TYPE_CHECKING:
    from collections.abc import Callable

    from aotwheel.buildsteps.cache import CacheKey
    from aotwheel.buildsteps.tiers import Tiers

_MARKER = re.compile(rb'^# (\d+) "((?:[^"\\]|\\.)*)"(.*)$')


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
            if not path.startswith(b"<"):  # <built-in>, <command line>: no file
                deps.setdefault(os.path.normpath(os.path.join(cwd, os.fsdecode(path))))
            h.update(b"# " + m[1] + b' "' + os.path.basename(path) + b'"' + m[3] + b"\n")
        else:
            h.update(line)
    return h.hexdigest(), list(deps)


def compile_cached(*, tool: str, install: str, command: list[str], source: Path, target: str, out: Path, depfile: str,
                   tiers: Tiers, key: Callable[[str], CacheKey], env: dict[str, str] | None = None, timeout: float = 600) -> None:
    """One (source, target) edge of a C++-source compiler: ``out`` from the cache, else from
    ``[*command, source, "-o", <tmp>]``, keyed by ``key(<the preprocessed source's sha256>)``
    (the same ``command`` with ``-E``). The depfile lists the preprocessor's files, hit or miss.
    Without a key (no cache configured, or the preprocessing failed: noted on stderr) the
    compile writes its own depfile (``-MD``), else the source alone stands in it. ``tool``,
    ``install``: the compiler's name and what to check when it does not run."""
    from aotwheel.buildsteps.cache import atomic_write
    from aotwheel.buildsteps.edge import render_depfile
    from aotwheel.errors import ToolchainError

    sha, deps = None, [str(source)]
    if tiers.local.enabled or tiers.stores:  # AOTWHEEL_CACHE_DIR=off and no remote: no key to make
        try:
            sha, deps = preprocessed_key([*command, "-E", str(source)], env=env, timeout=timeout)
        except PreprocessFailed as exc:  # the compile below says what is wrong, or builds uncached
            print(f"aotwheel: {source.name} ({target}): not cached: {tool} -E failed ({exc})", file=sys.stderr)
    cache_key = None if sha is None else key(sha)
    cached, _, writable = (None, "", []) if cache_key is None else tiers.lookup(cache_key, label=source.name)
    if cached is not None:
        atomic_write(out, cached)
        if depfile:
            atomic_write(Path(depfile), render_depfile(str(out), deps).encode())
        return
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    cmd = [*command, str(source), "-o", str(tmp)]
    if depfile and cache_key is None:
        cmd += ["-MD", "-MF", depfile, "-MT", str(out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"{tool} failed to run for {source.name} ({target}): {exc}; check {install}") from None
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        sys.stderr.write(proc.stderr)
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), (proc.stderr.strip().splitlines() or ["no output"])[0])
        raise ToolchainError(f"{tool} could not compile {source.name} for {target}: {first.strip()[:200]}")
    data = tmp.read_bytes()
    tmp.unlink()
    atomic_write(out, data)
    if depfile and (cache_key is not None or not Path(depfile).is_file()):  # clang 16+ writes none for a device-only job
        atomic_write(Path(depfile), render_depfile(str(out), deps).encode())
    if cache_key is not None:
        tiers.store(cache_key, data, source.name, writable)
