"""The SYCL runtime's persistent JIT cache: is it on for this process, and what would turn it on.

SYCL binaries are loaded by the SYCL runtime, which keeps JIT results across processes only with
``SYCL_CACHE_PERSISTENT=1``; its folder is ``$SYCL_CACHE_DIR``, else
``$XDG_CACHE_HOME/libsycl_cache``, else ``$HOME/.cache/libsycl_cache`` (with none of the three set
the runtime keeps nothing). aotwheel only reports this and gives advice; it never sets the
variables (crashes with the cache on are reported against some SYCL applications), and it does
not look inside the folder (its layout is the runtime's business).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

PERSISTENT = "SYCL_CACHE_PERSISTENT"
DIR = "SYCL_CACHE_DIR"


@dataclass(frozen=True)
class SyclCache:
    """What the SYCL runtime of this process will do with JIT results."""

    persistent: bool
    folder: str | None  # where it would keep them (None: no folder can be derived)

    def advice(self) -> str:
        """One sentence for a JIT warning or ``aotwheel check``."""
        if self.persistent and self.folder:
            return f"the SYCL runtime keeps JIT results ({PERSISTENT}=1, in {self.folder}): later processes load them"
        if self.persistent:
            return (f"{PERSISTENT}=1 but none of {DIR}, XDG_CACHE_HOME, HOME is set, so the SYCL runtime keeps nothing; "
                    f"set {DIR} to a private folder")
        where = self.folder or f"${DIR}"
        return (f"the SYCL runtime's persistent cache is off, so every process JIT-compiles again; "
                f"{PERSISTENT}=1 keeps the result for the next process (in {where}); aotwheel does not set it for you")


def state(env: Mapping[str, str] | None = None) -> SyclCache:
    """The persistent cache's state in ``env`` (default: this process's environment)."""
    env = os.environ if env is None else env
    on = env.get(PERSISTENT, "").strip() == "1"
    if env.get(DIR):
        folder: str | None = env[DIR]
    elif env.get("XDG_CACHE_HOME"):
        folder = os.path.join(env["XDG_CACHE_HOME"], "libsycl_cache")
    elif env.get("HOME"):
        folder = os.path.join(env["HOME"], ".cache", "libsycl_cache")
    else:
        folder = None
    return SyclCache(on, folder)


def links_sycl(path: str) -> bool:
    """True if ``path`` is an ELF file whose dynamic section needs ``libsycl.so*``: its device code
    is loaded (and JIT-compiled) by the SYCL runtime. False for anything unreadable."""
    from aotwheel.formats.dynamic import needs

    return needs(path, "libsycl.so")
    return False
