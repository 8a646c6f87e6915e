"""Content-addressed cache of ocloc results (and of tool queries), shared by all builds of a user.

Layout under the cache root (``$AOTWHEEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/aotwheel``, else
``~/.cache/aotwheel``; ``AOTWHEEL_CACHE_DIR=off`` disables it)::

    v1/objects/<2 hex>/<sha256>.bin   one device binary per key
    v1/tools/<sha256>.json            tool facts keyed by (path, size, mtime)
    v1/events.log                     one line per lookup: "<hit|miss|store> <key> <device> <label>"

Writes go to a temporary file in the same directory and are renamed into place, so concurrent
builds never see a partial entry. ``events.log`` lines are appended with O_APPEND in one write.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ENV = "AOTWHEEL_CACHE_DIR"
_DISABLED = {"off", "0", "false", "no", "none", "disable", "disabled"}
_LAYOUT = "v1"


@dataclass(frozen=True)
class CacheKey:
    """Everything that determines an ocloc result."""

    spirv_sha256: str
    device: str
    ocloc_path: str
    ocloc_version: str
    options: str
    flags: tuple[str, ...] = ()

    def digest(self) -> str:
        """Hex SHA-256 of all fields: the object's file name."""
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    """Lookups recorded in ``events.log`` since the cache was created."""

    hits: int
    misses: int
    stores: int


def default_root() -> Path | None:
    """The cache root from the environment, or ``None`` when caching is disabled."""
    env = os.environ.get(ENV, "").strip()
    if env:
        return None if env.lower() in _DISABLED else Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "aotwheel"


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class DeviceCodeCache:
    """Device binaries keyed by :class:`CacheKey`. A disabled cache (``root=None``) never hits."""

    def __init__(self, root: Path | str | None) -> None:
        self.root = Path(root) / _LAYOUT if root is not None else None

    @classmethod
    def from_env(cls) -> DeviceCodeCache:
        """The cache at :func:`default_root` (disabled by ``AOTWHEEL_CACHE_DIR=off``)."""
        return cls(default_root())

    @property
    def enabled(self) -> bool:
        """False when caching is off."""
        return self.root is not None

    def _object(self, digest: str) -> Path:
        assert self.root is not None
        return self.root / "objects" / digest[:2] / f"{digest}.bin"

    def get(self, key: CacheKey, label: str = "") -> bytes | None:
        """The cached binary for ``key``, or ``None``; records a hit or miss in ``events.log``."""
        if self.root is None:
            return None
        digest = key.digest()
        try:
            data = self._object(digest).read_bytes()
        except OSError:
            data = None
        self._event("hit" if data is not None else "miss", digest, key.device, label)
        return data

    def put(self, key: CacheKey, data: bytes, label: str = "") -> None:
        """Store ``data`` under ``key`` atomically and record a store."""
        if self.root is None:
            return
        digest = key.digest()
        atomic_write(self._object(digest), data)
        self._event("store", digest, key.device, label)

    def _event(self, kind: str, digest: str, device: str, label: str) -> None:
        assert self.root is not None
        self.root.mkdir(parents=True, exist_ok=True)
        line = f"{kind} {digest} {device} {label.replace(chr(10), ' ')}\n".encode()
        fd = os.open(self.root / "events.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def stats(self) -> CacheStats:
        """Counts of hits, misses and stores recorded so far."""
        counts = {"hit": 0, "miss": 0, "store": 0}
        if self.root is not None:
            try:
                text = (self.root / "events.log").read_text(errors="replace")
            except OSError:
                text = ""
            for line in text.splitlines():
                kind = line.split(" ", 1)[0]
                if kind in counts:
                    counts[kind] += 1
        return CacheStats(hits=counts["hit"], misses=counts["miss"], stores=counts["store"])

    def tool_facts(self, path: str) -> dict | None:
        """Cached facts about the tool at ``path`` while its size and mtime are unchanged."""
        if self.root is None:
            return None
        try:
            return json.loads(self._tool_file(path).read_text())
        except (OSError, ValueError):
            return None

    def store_tool_facts(self, path: str, facts: dict) -> None:
        """Remember ``facts`` about the tool at ``path`` (see :meth:`tool_facts`)."""
        if self.root is not None:
            atomic_write(self._tool_file(path), json.dumps(facts, sort_keys=True).encode())

    def _tool_file(self, path: str) -> Path:
        assert self.root is not None
        st = os.stat(path)
        ident = f"{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}"
        return self.root / "tools" / f"{hashlib.sha256(ident.encode()).hexdigest()}.json"
