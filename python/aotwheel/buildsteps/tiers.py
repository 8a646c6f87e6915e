"""Local cache, then the remote stores, then the compiler: one device job's lookup chain.

Read-through: a remote hit is kept locally (and written back to earlier stores that missed).
Write-back: a compiled result goes to the local cache and, unless read-only, to every store that
missed or held a damaged object. Each outcome is an event in the local ``events.log`` (the
source of ``aotwheel build cache``). A remote object is used only when it was stored under the key
asked for (and, with a signing secret, signed with it): anything else is a miss with one warning
naming it, and is overwritten. And the job's provenance (``compiled``, ``local``,
``remote``) is what ``_aot_manifest.json`` records per image.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aotwheel.buildsteps.cache import DAMAGED, CacheKey, DeviceCodeCache, build_id, pack_object, unpack_object
from aotwheel.variables import BUILD_STEP_SETTINGS, REMOTE_CACHE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~2.5 ms of each ocloc edge)
if TYPE_CHECKING:
    from aotwheel.buildsteps.remote import Store

COMPILED, LOCAL, REMOTE = "compiled", "local", "remote"
# What CMake writes into the settings file for the build steps: the remote-cache settings
# (all starting with _REMOTE) and AOTWHEEL_SHARD.
_REMOTE = REMOTE_CACHE.name
SETTING_NAMES = tuple(v.name for v in BUILD_STEP_SETTINGS)


def load_settings(path: Path | str | None) -> dict[str, str]:
    """Settings CMake wrote for the build steps (``NAME=value`` lines; a missing file is empty)."""
    if not path:
        return {}
    try:
        text = Path(path).read_text()
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name in SETTING_NAMES:
            out[name] = value
    return out


def remote_configured(environ: Mapping[str, str], settings: Mapping[str, str] | None = None) -> bool:
    """Whether any remote-cache setting is given (without importing the stores)."""
    return any(v.strip() for k, v in [*environ.items(), *(settings or {}).items()] if k.startswith(_REMOTE))


@dataclass(slots=True)
class Tiers:
    """The caches one build step consults, in order; ``build_dir`` is where the once-per-build
    warning markers live."""

    local: DeviceCodeCache
    stores: list[Store] = field(default_factory=list)
    readonly: bool = False
    build_dir: Path | None = None
    secret: bytes | None = field(default=None, repr=False, compare=False)
    quiet: bool = field(default=False, init=False)  # configure: leave the once-per-build warning to the first edge (CMake hides its stderr)
    _warned: list[bool] = field(default_factory=list, init=False, repr=False, compare=False)  # the failure warning was given in this process (threads share it)

    @classmethod
    def for_build(cls, build_dir: Path, settings: Mapping[str, str] | None = None,
                  environ: Mapping[str, str] | None = None) -> Tiers:
        """The local cache from the environment and the stores from CMake's settings/the environment."""
        local = DeviceCodeCache.from_env(warn_once=build_dir / ".aotwheel-cache-warning")
        local.build = build_id(build_dir)
        env = os.environ if environ is None else environ
        if not remote_configured(env, settings):
            # No remote setting at all: skip importing the stores (socket, urllib, ...: ~20 ms
            # of every ocloc edge's start).
            return cls(local=local, build_dir=build_dir)
        from aotwheel.buildsteps.remote import config_from

        cfg = config_from(env, settings)
        stores = cfg.stores()
        import hashlib

        for store in stores:  # a store that failed in one step is skipped by the build's others
            tag = hashlib.sha256(store.name.encode()).hexdigest()[:12]
            store.marker = build_dir / f".aotwheel-remote-down-{local.build or 'build'}-{tag}"
        return cls(local=local, stores=stores, readonly=cfg.readonly, build_dir=build_dir, secret=cfg.secret)

    def _failed(self, store: Store, key: CacheKey, label: str, reason: str) -> None:
        from aotwheel.buildsteps.remote import warn_once

        self.local.event("remote-fail", key.digest(), key.target, label)
        if self.quiet or self._warned:
            return
        self._warned.append(True)
        # One marker per build (tree and session): a later build in the same tree warns again.
        name = f".aotwheel-remote-warning-{self.local.build or 'build'}"
        marker = self.build_dir / name if self.build_dir is not None else None
        warn_once(marker, f"remote cache {reason}; building as on a miss "
                          f"(this warning shows once per build; the remote never fails a build)")

    def refused(self, store: Store, key: CacheKey, label: str, why: str, size: int) -> None:
        """A remote object not used (damaged, stored under another key, unsigned, foreign): a miss.
        A damaged one shares the once-per-build warning; the others warn once per object: each
        is what a writer without the right to it left there."""
        digest = key.digest()
        if why == DAMAGED:
            self._failed(store, key, label, f"{store.name}: damaged object {digest[:16]}… ({size} bytes)")
            return
        from aotwheel.buildsteps.remote import warn_once

        self.local.event("remote-fail", digest, key.target, label)
        name = f".aotwheel-remote-refused-{self.local.build or 'build'}-{digest[:16]}"
        warn_once(self.build_dir / name if self.build_dir is not None else None,
                  f"remote cache {store.name}: object {digest[:16]}… for {label or key.target} is {why}; "
                  "not used, building it here" + ("" if self.readonly else " and replacing it"))

    def fetch(self, store: Store, key: CacheKey, label: str, limit: int | None = None) -> tuple[bytes | None, bool]:
        """``(payload, usable)`` of one store's object for ``key``: ``(None, True)`` a miss,
        ``(None, False)`` a failed store; a refused object is a miss (and warns)."""
        from aotwheel.buildsteps.remote import DEFAULT_LIMIT, RemoteError

        digest = key.digest()
        try:
            blob = store.get(digest, DEFAULT_LIMIT if limit is None else limit + 1024)  # + the header
        except RemoteError as exc:
            self._failed(store, key, label, str(exc))
            return None, False
        if blob is None:
            self.local.event("remote-miss", digest, key.target, label)
            return None, True
        payload, why = unpack_object(blob, digest, self.secret)
        if payload is None:
            self.refused(store, key, label, why or DAMAGED, len(blob))
            return None, True
        self.local.event("remote-hit", digest, key.target, label, len(blob))
        return payload, True

    def lookup(self, key: CacheKey, label: str = "", limit: int | None = None) -> tuple[bytes | None, str, list[Store]]:
        """``(data, provenance, stores to write back to)``; ``data`` is ``None`` on a miss everywhere.
        ``limit``: the most bytes the object can have (a larger answer is refused unread)."""
        data = self.local.get(key, label)
        if data is not None:
            return data, LOCAL, []
        writable: list[Store] = []
        for store in self.stores:
            payload, usable = self.fetch(store, key, label, limit)
            if not usable:
                continue  # unreachable/refused/timeout: no write-back to it either
            if payload is None:
                writable.append(store)  # a miss, or a bad object to overwrite
                continue
            self.local.put(key, payload, label)
            self.push(writable, key, payload, label)
            return payload, REMOTE, []
        return None, COMPILED, writable

    def store(self, key: CacheKey, data: bytes, label: str, writable: list[Store]) -> None:
        """Keep a compiled result locally and push it to ``writable`` stores (unless read-only)."""
        self.local.put(key, data, label)
        self.push(writable, key, data, label)

    def push(self, stores: list[Store], key: CacheKey, data: bytes, label: str) -> None:
        """Write ``data`` to ``stores`` (not the local cache) unless read-only; failures warn."""
        if self.readonly or not stores:
            return
        from aotwheel.buildsteps.remote import RemoteError

        digest = key.digest()
        blob = pack_object(data, digest, self.secret)
        for store in stores:
            try:
                store.put(digest, blob)
            except RemoteError as exc:
                self._failed(store, key, label, str(exc))
                continue
            self.local.event("remote-store", digest, key.target, label, len(blob))

    def obtain(self, key: CacheKey, label: str, compile_fn: Callable[[], bytes]) -> tuple[bytes, str]:
        """The binary for ``key`` from the first tier that has it, else from ``compile_fn``."""
        data, provenance, writable = self.lookup(key, label)
        if data is not None:
            return data, provenance
        data = compile_fn()
        self.store(key, data, label, writable)
        return data, COMPILED
