"""A PEP 517 build backend: scikit-build-core's, with concurrent builds of one checkout taking turns.

scikit-build-core keeps its build tree at a fixed place (``build-dir = "build/{wheel_tag}"``, which
makes rebuilds incremental), so two ``pip install .`` of one checkout at the same time configure
and build in the same folder and one fails ("missing CMakeCache.txt"). With this backend
(``build-backend = "aotwheel.pep517"``, aotwheel in ``build-system.requires``) each build holds an
exclusive lock on ``build/.aotwheel-build.lock`` under the checkout for its whole run; a second
build prints that it waits, then runs when the first is done. A checkout where the lock cannot be
made (read-only) builds without it, saying so. Everything else is scikit-build-core's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from scikit_build_core import build as _skbuild
from scikit_build_core.build import (  # the hooks that need no lock, as they are
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = ["build_editable", "build_sdist", "build_wheel", "get_requires_for_build_editable",
           "get_requires_for_build_sdist", "get_requires_for_build_wheel", "locked",
           "prepare_metadata_for_build_editable", "prepare_metadata_for_build_wheel"]

LOCK = os.path.join("build", ".aotwheel-build.lock")  # under the checkout (pip runs hooks there)


@contextmanager
def locked(root: str = ".") -> Iterator[None]:
    """Hold the checkout's build lock (waiting for another build, with one line saying so)."""
    import fcntl

    path = os.path.join(root, LOCK)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        print(f"aotwheel: warning: cannot create {path} ({exc.strerror}); building without the lock that "
              "keeps concurrent builds of this checkout apart", file=sys.stderr, flush=True)
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            print(f"aotwheel: another build of this checkout is running (pid {holder}, {path}); "
                  "waiting for it to finish", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def build_wheel(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    with locked():
        return _skbuild.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    with locked():
        return _skbuild.build_editable(wheel_directory, config_settings, metadata_directory)
