"""Content-addressed cache of ocloc results (and of tool queries), shared by all builds of a user.

Layout under the cache root (``$AOTWHEEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/aotwheel``, else
``~/.cache/aotwheel``; ``AOTWHEEL_CACHE_DIR=off`` disables it)::

    v2/objects/<2 hex>/<sha256>.bin   one device binary per key (key schema 2)
    v2/tools/<sha256>.json            tool facts keyed by (path, size, mtime)
    v2/events.log                     one line per event: "<kind> <key> <device> <build> <bytes> <label>"

Keys name content, never places (schema 2): the input's sha256, the device's IP version (CUDA:
the arch), the tool's version and the sha256 of the tool binary, options and flags, so a build
on another machine with the same tool package finds the same key (locally, or in a remote store,
:mod:`aotwheel.buildsteps.remote`). Entries of layout 1 (``v1/``, keys holding the tool's path)
are ignored without error. ``<build>`` groups the events of one build (build tree and session)
for ``aotwheel build cache``; kinds are ``hit miss store corrupt`` for this cache and
``remote-hit remote-miss remote-store remote-fail`` for the remote stores. Events whose
``<device>`` is ``spirv-deps``/``spirv`` belong to the SPIR-V step's cache (its manifests and
modules, :mod:`aotwheel.backends.intel.buildsteps.spvcache`; ``spirv-hit spirv-remote-hit spirv-compiled`` are
its per-step outcomes) and are counted apart from the device images.

Writes go to a temporary file in the same directory and are renamed into place, so concurrent
builds never see a partial entry. ``events.log`` lines are appended with O_APPEND in one write.
Each object starts with a one-line header (format 2) naming the key it was stored under, the
sha256 of its payload and, for signed remote objects, an HMAC over both
(:func:`pack_object`): an entry damaged on disk, or one moved under another key's name, fails the
check, is logged as ``corrupt``, removed and rebuilt. Objects of format 1 (no key) are misses.
Writes never follow a symbolic link inside the cache root: a linked file or folder there turns
the cache off with one warning (the root itself may be a link). A cache root that cannot be
written (read-only, full, no permission) never fails a build: the first failure prints one
warning and the cache is off for the rest of the process.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from aotwheel.buildsteps.toolfacts import LAYOUT, facts_name, root_text
from aotwheel.variables import CACHE_DIR

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from aotwheel.buildsteps.stats import CacheStats

ENV = CACHE_DIR.name
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
KEY_SCHEMA = 2
# Object header (format 2): magic, the key it was stored under, the sha256 of the payload, an
# HMAC-SHA256 of both (or "-": unsigned), each 64 hex digits apart from "-", newline; then the payload.
_MAGIC = b"aotwheel-cache-object 2 "
_UNSIGNED = b"-"
_HEADER_MAX = len(_MAGIC) + 3 * 64 + 3
# Why a stored object was refused (unpack_object's second value); None: accepted.
DAMAGED, OTHER_KEY, UNSIGNED, FOREIGN = "damaged", "stored under another key", "unsigned", "signed with another secret"


@dataclass(frozen=True, slots=True)
class CacheKey:
    """Everything that determines a device binary, by content (key schema 2).

    ``input_sha256``: the SPIR-V (CUDA: source + portability header); ``target``: the device's IP
    version (CUDA: the arch); ``tool_sha256``: the tool binary's own hash, never its path.
    """

    input_sha256: str
    target: str
    tool: str
    tool_version: str
    tool_sha256: str
    options: str
    flags: tuple[str, ...] = ()

    def digest(self) -> str:
        """Hex SHA-256 of all fields and the schema: the object's name, locally and remotely."""
        blob = json.dumps({"schema": KEY_SCHEMA, **asdict(self)}, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()


def build_id(build_dir: Path | str) -> str:
    """A short id grouping the events of one build: its build tree and its session."""
    try:
        session = os.getsid(0)
    except OSError:
        session = 0
    ident = f"{os.path.realpath(build_dir)}\0{session}"
    return hashlib.sha256(ident.encode()).hexdigest()[:12]


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file (a tool binary), read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _mac(secret: bytes, key: str, sha: str) -> str:
    import hmac

    return hmac.new(secret, f"aotwheel-cache-object 2\0{key}\0{sha}".encode(), "sha256").hexdigest()


def pack_object(data: bytes, key: str, secret: bytes | None = None) -> bytes:
    """An object as stored (locally and remotely): a header binding the payload's sha256 to the
    ``key`` (hex digest) it is stored under, signed with ``secret`` (HMAC-SHA256) when given."""
    sha = hashlib.sha256(data).hexdigest()
    mac = _mac(secret, key, sha).encode() if secret else _UNSIGNED
    return _MAGIC + key.encode() + b" " + sha.encode() + b" " + mac + b"\n" + data


def unpack_object(blob: bytes, key: str, secret: bytes | None = None) -> tuple[bytes | None, str | None]:
    """``(payload, None)`` of an object stored under ``key``, or ``(None, why)``: truncated or
    damaged (:data:`DAMAGED`), written for another key (:data:`OTHER_KEY`) or, with a ``secret``,
    unsigned or signed with another one (:data:`UNSIGNED`, :data:`FOREIGN`)."""
    end = blob.find(b"\n", 0, _HEADER_MAX + 1)
    if end < 0 or not blob.startswith(_MAGIC):
        return None, DAMAGED
    fields = blob[len(_MAGIC) : end].split(b" ")
    if len(fields) != 3 or len(fields[0]) != 64 or len(fields[1]) != 64:
        return None, DAMAGED
    data = blob[end + 1 :]
    stored_key, sha, mac = (f.decode("latin-1") for f in fields)
    if hashlib.sha256(data).hexdigest() != sha:
        return None, DAMAGED
    if stored_key != key:
        return None, OTHER_KEY
    if secret:
        import hmac

        if mac == "-":
            return None, UNSIGNED
        if not hmac.compare_digest(mac, _mac(secret, key, sha)):
            return None, FOREIGN
    return data, None


def _linked(exc: OSError, path: Path) -> OSError:
    """``exc`` of opening ``path`` without following links, with a message naming the link."""
    import errno

    if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
        return OSError(exc.errno, f"{path} is a symbolic link, which the cache never writes through; remove it")
    return exc


def default_root() -> Path | None:
    """The cache root from the environment, or ``None`` when caching is disabled (:func:`aotwheel.buildsteps.toolfacts.root_text`)."""
    root = root_text()
    return Path(root) if root is not None else None


def _new_file_beside(path: Path) -> tuple[int, str]:
    """A new, exclusively created, private file next to ``path`` (tempfile.mkstemp's guarantees,
    without importing tempfile in every build step process)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name next to {path}")


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_file_beside(path)
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

    def __init__(self, root: Path | str | None, *, warn_once: Path | None = None) -> None:
        """``warn_once``: a marker file (in the build tree) that makes the unusable-cache warning
        appear once per build rather than once per build step: the step that creates it warns."""
        self.root = Path(root) / LAYOUT if root is not None else None
        self.disabled_reason: str | None = None  # set when the root turned out unusable
        self._warn_once = warn_once
        self.build = ""  # build id written into events (see build_id)

    @classmethod
    def from_env(cls, *, warn_once: Path | None = None) -> DeviceCodeCache:
        """The cache at :func:`default_root` (disabled by ``AOTWHEEL_CACHE_DIR=off``)."""
        return cls(default_root(), warn_once=warn_once)

    @property
    def enabled(self) -> bool:
        """False when caching is off."""
        return self.root is not None

    def _object(self, digest: str) -> Path:
        assert self.root is not None
        return self.root / "objects" / digest[:2] / f"{digest}.bin"

    def _degrade(self, exc: OSError) -> None:
        """Turn the cache off for this process after a failed write, with one warning line."""
        root = self.root
        if root is None:
            return
        self.disabled_reason = f"{exc.strerror or exc}"
        self.root = None
        if self._warn_once is not None:
            try:  # O_EXCL: of all the parallel steps of one build, only the first one warns
                os.close(os.open(self._warn_once, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            except FileExistsError:
                return
            except OSError:
                pass  # no marker possible: warn anyway
        print(f"aotwheel: warning: device-code cache {root.parent} is not usable ({self.disabled_reason}); "
              f"building without it (point AOTWHEEL_CACHE_DIR at a writable folder, or set it to off)",
              file=sys.stderr, flush=True)

    def get(self, key: CacheKey, label: str = "") -> bytes | None:
        """The cached binary for ``key``, or ``None``; records a hit or miss in ``events.log``.

        An entry whose hash check fails is logged as ``corrupt``, removed, and reported as a miss.
        """
        if self.root is None:
            return None
        digest = key.digest()
        path = self._object(digest)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            blob = None
        except OSError as exc:  # unreadable root (permissions): no cache, not a failed build
            self._degrade(exc)
            return None
        if blob is not None and blob.startswith(_MAGIC[:-2]) and not blob.startswith(_MAGIC):
            blob = None  # an older format (1, no key): a plain miss, replaced by the rebuilt entry
        data = unpack_object(blob, digest)[0] if blob is not None else None
        if blob is not None and data is None:
            self._event("corrupt", digest, key.target, label)
            try:
                path.unlink()
            except OSError:
                pass  # read-only: the rebuilt entry cannot replace it either; put() will say so
        self._event("hit" if data is not None else "miss", digest, key.target, label, len(data or b""))
        return data

    def put(self, key: CacheKey, data: bytes, label: str = "") -> None:
        """Store ``data`` under ``key`` atomically and record a store (never raises for an unusable root)."""
        if self.root is None:
            return
        digest = key.digest()
        try:
            self._write(self._object(digest), pack_object(data, digest))
        except OSError as exc:
            self._degrade(exc)
            return
        self._event("store", digest, key.target, label, len(data))

    def event(self, kind: str, digest: str, device: str, label: str, size: int = 0) -> None:
        """Append one event line (also used by the remote tier to record its outcomes)."""
        self._event(kind, digest, device, label, size)

    def _event(self, kind: str, digest: str, device: str, label: str, size: int = 0) -> None:
        if self.root is None:
            return
        line = f"{kind} {digest} {device} {self.build or '-'} {size} {label.replace(chr(10), ' ')}\n".encode()
        try:
            dfd = self._folder(self.root)
            try:
                fd = os.open("events.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW, 0o644, dir_fd=dfd)
            except OSError as exc:
                raise _linked(exc, self.root / "events.log") from None
            finally:
                os.close(dfd)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            self._degrade(exc)

    def _folder(self, folder: Path) -> int:
        """An open descriptor of ``folder`` (under the cache root), created as needed, reached
        without following a symbolic link below the root: a link there is an OSError naming it."""
        assert self.root is not None
        base = self.root.parent  # the root the user named: may itself be a link
        base.mkdir(parents=True, exist_ok=True)
        fd = os.open(base, os.O_RDONLY | _DIRECTORY)
        try:
            for part in folder.relative_to(base).parts:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                try:
                    sub = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    raise _linked(exc, base / part) from None
                os.close(fd)
                fd, base = sub, base / part
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _write(self, path: Path, data: bytes) -> None:
        """:func:`atomic_write` inside the cache: the folder reached by :meth:`_folder`, the
        temporary file created with O_NOFOLLOW | O_EXCL, renamed within that folder."""
        dfd = self._folder(path.parent)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            tmp = f".{path.name}.{os.urandom(6).hex()}.tmp"
            fd = os.open(tmp, flags, 0o600, dir_fd=dfd)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                raise
        finally:
            os.close(dfd)

    def stats(self, *, last_build: bool = False) -> CacheStats:
        """Counts of all events recorded so far, or (``last_build``) of the most recent build's."""
        from aotwheel.buildsteps.stats import CacheStats

        kinds = {"hit": "hits", "miss": "misses", "store": "stores", "corrupt": "corrupt",
                 "remote-hit": "remote_hits", "remote-miss": "remote_misses",
                 "remote-store": "remote_stores", "remote-fail": "remote_failures"}
        spirv_kinds = {"spirv-hit": "spirv_hits", "spirv-remote-hit": "spirv_remote_hits",
                       "spirv-compiled": "spirv_compiled", "corrupt": "spirv_corrupt",
                       "remote-fail": "spirv_remote_failures", "remote-store": "spirv_remote_stores"}
        counts = dict.fromkeys([*kinds.values(), *spirv_kinds.values()], 0)
        bytes_in = bytes_out = 0
        lines: list[list[str]] = []
        if self.root is not None:
            try:
                text = (self.root / "events.log").read_text(errors="replace")
            except OSError:
                text = ""
            lines = [line.split(" ", 5) for line in text.splitlines()]
        build = ""
        if last_build:
            build = next((f[3] for f in reversed(lines) if len(f) >= 5), "")
        for f in lines:
            if last_build and (len(f) < 5 or f[3] != build):
                continue
            if len(f) >= 3 and f[2].startswith("spirv"):  # the SPIR-V step's objects: counted apart
                if f[0] in spirv_kinds:
                    counts[spirv_kinds[f[0]]] += 1
                continue
            if f[0] not in kinds:
                continue
            counts[kinds[f[0]]] += 1
            size = int(f[4]) if len(f) >= 5 and f[4].isdigit() else 0
            if f[0] == "remote-hit":
                bytes_in += size
            elif f[0] == "remote-store":
                bytes_out += size
        return CacheStats(**counts, remote_bytes_in=bytes_in, remote_bytes_out=bytes_out, build=build)

    def tool_sha256(self, path: str) -> str:
        """SHA-256 of the tool binary at ``path``, remembered while its size and mtime are unchanged."""
        if not os.path.dirname(path):  # a bare name: where PATH finds it (a path is taken as it is)
            import shutil

            path = shutil.which(path) or path
        facts = self.tool_facts(path) or {}
        if isinstance(facts.get("sha256"), str):
            return str(facts["sha256"])
        try:
            digest = file_sha256(path)
        except OSError:  # the tool's own run will fail with the clear error; the key just misses
            return f"unreadable {path}"
        if self.root is not None:
            self.store_tool_facts(path, {**facts, "sha256": digest})
        return digest

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
            try:
                self._write(self._tool_file(path), json.dumps(facts, sort_keys=True).encode())
            except OSError as exc:
                self._degrade(exc)

    def _tool_file(self, path: str) -> Path:
        assert self.root is not None
        return self.root / "tools" / facts_name(path)  # what toolfacts.read_facts reads without this object
