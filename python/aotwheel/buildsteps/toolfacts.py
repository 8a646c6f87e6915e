"""Where the device-code cache keeps its facts about a tool binary, and reading them back, with
``os`` and ``json`` alone.

:class:`aotwheel.buildsteps.cache.DeviceCodeCache` writes ``v2/tools/<sha256>.json`` per tool
binary (keyed by its real path, size and mtime: :func:`facts_name`); ``aotwheel resolve`` reads
the installed ocloc's device table there (:func:`read_facts`) without the cache object's imports
(pathlib, hashlib: a fifth of ``python -c pass`` here, on Python 3.14 more than all of it).
"""

from __future__ import annotations

import json
import os
import sys

from aotwheel.variables import CACHE_DIR, DISABLED_WORDS

TYPE_CHECKING = False  # not typing's: aotwheel resolve imports this module
if TYPE_CHECKING:
    from collections.abc import Callable

LAYOUT = "v2"  # the cache's layout folder under its root (cache.py: keys of schema 2)


def root_text() -> str | None:
    """The cache root from the environment (``$AOTWHEEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/aotwheel``,
    else ``~/.cache/aotwheel``), without its layout folder; ``None`` when caching is disabled."""
    env = CACHE_DIR.given()
    if env:
        return None if env.lower() in DISABLED_WORDS else os.path.expanduser(env)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return os.path.join(xdg if xdg else os.path.join(os.path.expanduser("~"), ".cache"), "aotwheel")


def _sha256() -> Callable[[bytes], object]:
    """``hashlib.sha256`` without importing hashlib: its built-in implementation (the one hashlib
    itself falls back to without OpenSSL: ``_sha2`` from Python 3.12, ``_sha256`` before), whose
    digests are the same; hashlib's where neither exists. Loading OpenSSL for one 60-byte hash
    costs ``aotwheel resolve`` 4 ms (Python 3.11) to 16 ms (3.14)."""
    try:
        return __import__("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256  # type: ignore[no-any-return]
    except ImportError:
        from hashlib import sha256

    return sha256


def facts_name(path: str) -> str:
    """The file name of the facts about the tool at ``path`` (``OSError`` when it cannot be
    stat'ed): a hash of its real path, size and mtime, so a replaced binary gets new facts."""
    st = os.stat(path)
    ident = f"{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}"
    return f"{_sha256()(ident.encode()).hexdigest()}.json"  # type: ignore[attr-defined]


def read_facts(path: str) -> dict | None:  # type: ignore[type-arg]
    """The cached facts about the tool at ``path`` in the cache the environment names (as
    ``DeviceCodeCache.from_env().tool_facts(path)`` reads them); ``None`` when there are none,
    caching is off or the file is unreadable."""
    root = root_text()
    if root is None:
        return None
    try:
        with open(os.path.join(root, LAYOUT, "tools", facts_name(path)), "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
