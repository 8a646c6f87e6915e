"""The per-user cache of JIT results: the native binary a driver built from SPIR-V, kept so that
the next process creates its program from that binary instead of compiling again.

Folder: ``$AOTWHEEL_JIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/aotwheel/jit``, else
``~/.cache/aotwheel/jit``; ``AOTWHEEL_JIT_CACHE_DIR=off`` disables it. The folder is created
0700 and used only while it belongs to this user and no one else can write it: a binary handed
to a driver must come from nobody else.

One file per (image sha256, device name and IP, platform, build options):
``<image+device digest>/<sha256 of all that>.bin`` (so ``aotwheel check`` can ask "any build of
this image for this device?" without knowing the options), whose first line is JSON holding the
full key (with the driver version) and the payload's sha256, then the payload. An entry that fails its hash check, or was built by another driver version, is
removed, and the caller rebuilds with one warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from aotwheel.variables import DISABLED_WORDS, JIT_CACHE_DIR

ENV = JIT_CACHE_DIR.name
_DISABLED = DISABLED_WORDS
_FORMAT = 1
_MAX_HEADER = 64 * 1024


class JITCacheWarning(UserWarning):
    """A cached JIT result was unusable (damaged, rejected, other driver) and was rebuilt, or the
    cache folder cannot be used."""


@dataclass(frozen=True)
class JitKey:
    """What a JIT result depends on. ``driver`` is checked on load rather than part of the file
    name, so a driver update replaces the entry instead of leaving stale ones behind."""

    image_sha256: str
    device: str
    ip: str | None
    platform: str
    driver: str
    options: str

    def group(self) -> str:
        """The entry's folder: the image on this device, whatever the options."""
        ident = json.dumps([self.image_sha256, self.device, self.ip, self.platform])
        return hashlib.sha256(ident.encode()).hexdigest()[:32]

    def slot(self) -> str:
        """The entry's file stem: every field but the driver version."""
        fields = asdict(self)
        fields.pop("driver")
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Lookup:
    """``data`` on a hit; else ``problem`` says why an existing entry was dropped (or is None)."""

    data: bytes | None
    problem: str | None = None


def default_root(env: Mapping[str, str] | None = None) -> Path | None:
    """The cache folder from the environment, or ``None`` when disabled."""
    value = JIT_CACHE_DIR.given(env)
    if value:
        return None if value.lower() in _DISABLED else Path(value).expanduser()
    xdg = (os.environ if env is None else env).get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "aotwheel" / "jit"


class JitCache:
    """Native JIT results on disk, private to this user. ``root=None``: a cache that never hits."""

    def __init__(self, root: Path | str | None) -> None:
        self.root = Path(root) if root is not None else None
        self.unusable: str | None = None  # why the folder was refused (set on first use)
        self.warned = False  # the caller's one warning about an unusable folder was given

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> JitCache:
        return cls(default_root(env))

    @property
    def enabled(self) -> bool:
        return self.root is not None and self.unusable is None

    def path(self, key: JitKey) -> Path | None:
        return self.root / key.group() / f"{key.slot()}.bin" if self.root is not None else None

    def _private_root(self, create: bool) -> Path | None:
        """The folder if it is ours and private (created 0700 when ``create``), else ``None``."""
        if self.root is None or self.unusable is not None:
            return None
        try:
            if create:
                self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = self.root.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.unusable = f"{self.root}: {exc.strerror or exc}"
            return None
        if not stat.S_ISDIR(st.st_mode):
            self.unusable = f"{self.root} is not a folder"
        elif st.st_uid != os.getuid():
            self.unusable = f"{self.root} belongs to another user (uid {st.st_uid})"
        elif st.st_mode & 0o077:
            try:  # ours but open to others (e.g. made by hand): close it, as ssh does for ~/.ssh
                os.chmod(self.root, 0o700)
            except OSError as exc:
                self.unusable = f"{self.root} is open to other users and cannot be made private ({exc.strerror})"
        return self.root if self.unusable is None else None

    def has_build(self, key: JitKey) -> bool:
        """True if a build of ``key``'s image for its device by its driver is stored, with any
        build options (``key.options`` is ignored); reads entry headers only."""
        root = self._private_root(create=False)
        if root is None:
            return False
        want = {k: v for k, v in asdict(key).items() if k != "options"}
        try:
            entries = sorted((root / key.group()).glob("*.bin"))
        except OSError:
            return False
        for entry in entries:
            header = self._header(entry)
            stored = header.get("key") if header else None
            if isinstance(stored, dict) and {k: v for k, v in stored.items() if k != "options"} == want:
                return True
        return False

    def get(self, key: JitKey) -> Lookup:
        """The payload for ``key``; an entry that fails its checks is removed and reported."""
        root = self._private_root(create=False)
        if root is None:
            return Lookup(None)
        path = root / key.group() / f"{key.slot()}.bin"
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return Lookup(None)
        except OSError as exc:
            return Lookup(None, f"cannot read {path} ({exc.strerror})")
        problem, data = _check(blob, key)
        if problem is not None:
            self.remove(key)
            return Lookup(None, f"{path.name}: {problem}")
        return Lookup(data)

    def put(self, key: JitKey, data: bytes) -> str | None:
        """Store ``data`` (atomically, mode 0600); returns why not, or ``None`` when stored."""
        root = self._private_root(create=True)
        if root is None:
            return self.unusable
        header = json.dumps({"format": _FORMAT, "key": asdict(key), "sha256": hashlib.sha256(data).hexdigest()},
                            sort_keys=True).encode()
        folder = root / key.group()
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".jit-", suffix=".tmp", dir=folder)  # 0600
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(header + b"\n" + data)
                os.replace(tmp, folder / f"{key.slot()}.bin")
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError as exc:
            return f"cannot write to {root} ({exc.strerror or exc})"
        return None

    def remove(self, key: JitKey) -> None:
        path = self.path(key)
        if path is not None:
            try:
                path.unlink()
            except OSError:
                pass

    @staticmethod
    def _header(path: Path) -> dict | None:
        try:
            with open(path, "rb") as fh:
                line = fh.readline(_MAX_HEADER)
            doc = json.loads(line)
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None


def _check(blob: bytes, key: JitKey) -> tuple[str | None, bytes]:
    """``(problem, payload)``: problem is None when the entry is intact and made for ``key``."""
    end = blob.find(b"\n", 0, _MAX_HEADER)
    try:
        doc = json.loads(blob[:end]) if end > 0 else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT or not isinstance(doc.get("key"), dict):
        return "unreadable entry header", b""
    data = blob[end + 1 :]
    if hashlib.sha256(data).hexdigest() != doc.get("sha256"):
        return "damaged (hash check failed)", b""
    stored = doc["key"]
    if stored.get("driver") != key.driver:
        return f"built by driver {stored.get('driver')!r}, this is {key.driver!r}", b""
    if stored != asdict(key):
        return "made for another key", b""
    return None, data
