"""The SPIR-V step's cache (clang + llvm-spirv), local and remote, in ccache's "direct mode" style.

A *manifest* object, keyed by what is known before compiling (the source's bytes and its place
under the project, the clang and llvm-spirv versions and binary hashes, every clang argument with
the project's source and build roots written as ``<src>``/``<build>``), lists up to
:data:`MAX_ENTRIES` earlier results: the dependencies the compile read (clang's depfile), each as
``(role, path, sha256)`` with role ``src``/``build`` (relative to that root) or ``abs`` (system
headers: absolute), and the sha256 of the SPIR-V, itself a second, content-addressed object. A
hit needs every recorded dependency to hash the same here and now; anything else compiles and
stores a fresh entry (first in the manifest). Both objects go through the same tiers as device
images (local cache, then the remote stores: read-through, write-back, damaged objects replaced).

Without a remote (``AOTWHEEL_REMOTE_CACHE`` in the settings file or the environment) no remote
module is imported: each build step is a process of its own, and imports are most of its cost.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from aotwheel.backends.intel.buildsteps.spirv import SpirvToolchain, clang_command, compile_to_spirv, entry_points
from aotwheel.buildsteps.cache import CacheKey, DeviceCodeCache, atomic_write, build_id
from aotwheel.buildsteps.edge import render_depfile
from aotwheel.variables import REMOTE_CACHE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (as in tiers.py)
if TYPE_CHECKING:
    from aotwheel.buildsteps.remote import Store
    from aotwheel.buildsteps.tiers import Tiers

SCHEMA = "aotwheel-spirv-manifest 1"
MAX_ENTRIES = 8  # header states remembered per key (branches, edits and back)
MANIFEST_LIMIT = 4 << 20  # the most a manifest of MAX_ENTRIES entries can take (a remote answer beyond is refused)
#: the events.log device column of the two objects; stats() counts them apart from device images
MANIFEST_TARGET, SPIRV_TARGET = "spirv-deps", "spirv"
COMPILED, LOCAL, REMOTE = "compiled", "local", "remote"

Dep = tuple[str, str, str]  # (role, path, sha256)


@dataclass(frozen=True, slots=True)
class Roots:
    """The project's source and build roots: dependencies under them are recorded relative."""

    source: str
    build: str

    def ordered(self) -> list[tuple[str, str]]:
        # The longer root first: a build tree inside the source tree is "build".
        return sorted((("src", self.source), ("build", self.build)), key=lambda r: -len(r[1]))

    def locate(self, path: str) -> tuple[str, str]:
        """``(role, path)`` of an absolute path: relative to a root, else ``("abs", path)``."""
        for role, root in self.ordered():
            if path == root or path.startswith(root.rstrip("/") + "/"):
                return role, os.path.relpath(path, root)
        return "abs", path

    def resolve(self, role: str, path: str) -> str:
        """This machine's absolute path of a recorded location."""
        return path if role == "abs" else os.path.join(self.source if role == "src" else self.build, path)

    def portable(self, arg: str) -> str:
        """``arg`` with the roots replaced by ``<src>``/``<build>`` (for the key only)."""
        for role, root in self.ordered():
            arg = re.sub(re.escape(root.rstrip("/")) + r"(?=/|$)", f"<{role}>", arg)
        return arg


def manifest_key(tc: SpirvToolchain, tool_sha: tuple[str, str], source: str, source_sha: str,
                 extra: list[str], roots: Roots) -> CacheKey:
    """The key of one source's manifest: content, tools and portable options, never machine paths."""
    template = SpirvToolchain("clang", tc.clang_version, "llvm-spirv", tc.llvm_spirv_version)
    argv = clang_command(template, "<source>", "<out>", None, [roots.portable(a) for a in extra])
    place = roots.locate(os.path.abspath(source))
    return CacheKey(input_sha256=source_sha, target=MANIFEST_TARGET, tool="clang+llvm-spirv",
                    tool_version=f"{tc.clang_version}/{tc.llvm_spirv_version}", tool_sha256="/".join(tool_sha),
                    options=json.dumps({"argv": argv[1:], "source": list(place)}), flags=(SCHEMA,))


def spirv_key(spirv_sha: str) -> CacheKey:
    """The content-addressed key of a SPIR-V module."""
    return CacheKey(input_sha256=spirv_sha, target=SPIRV_TARGET, tool="", tool_version="", tool_sha256="",
                    options="", flags=(SCHEMA,))


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a one-rule Makefile depfile as clang writes it (``\\ ``, ``\\#``, ``$$``)."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    tokens: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in " #\t":
            cur.append(text[i + 1])
            i += 2
            continue
        if c == "$" and text[i + 1 : i + 2] == "$":
            cur.append("$")
            i += 2
            continue
        if c.isspace():
            if cur:
                tokens.append("".join(cur))
                cur = []
        else:
            cur.append(c)
        i += 1
    if cur:
        tokens.append("".join(cur))
    for n, tok in enumerate(tokens):  # the target ends with ':' (clang puts no space before it)
        if tok.endswith(":"):
            return tokens[n + 1 :]
        if tok == ":":
            return tokens[n + 1 :]
    return []


class _Hashes:
    """sha256 of files, each read once per step; ``None`` for a file that is not there."""

    def __init__(self) -> None:
        self._seen: dict[str, str | None] = {}

    def __call__(self, path: str) -> str | None:
        if path not in self._seen:
            try:
                self._seen[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                self._seen[path] = None
        return self._seen[path]


def _entries(blob: bytes | None) -> list[dict]:
    """A manifest's entries; ``[]`` for anything that is not one (an older or foreign object)."""
    if blob is None:
        return []
    try:
        doc = json.loads(blob)
        entries = doc["entries"] if doc.get("schema") == SCHEMA else []
        return [e for e in entries if isinstance(e.get("spirv"), str) and isinstance(e.get("deps"), list)
                and all(_sane_dep(d) for d in e["deps"])]
    except (ValueError, AttributeError, TypeError, KeyError):
        return []


def _sane_dep(dep: object) -> bool:
    """A recorded dependency this machine may look at: under its root (no ``..``, not absolute) for
    ``src``/``build``, absolute for ``abs``. A manifest from a shared store is not trusted to name
    files outside the project by a relative path (its entry is then skipped, as a miss)."""
    if not (isinstance(dep, list) and len(dep) == 3 and all(isinstance(x, str) for x in dep)):
        return False
    role, path, sha = dep
    if role == "abs":
        return os.path.isabs(path) and len(sha) == 64
    return role in ("src", "build") and not os.path.isabs(path) and ".." not in Path(path).parts and len(sha) == 64


def _remote_named(settings: str | None) -> bool:
    """True when a remote store is configured (the settings file CMake wrote, else the environment),
    read without importing the remote module."""
    if REMOTE_CACHE.given():
        return True
    try:
        text = Path(settings).read_text() if settings else ""
    except OSError:
        return False
    return any(line.startswith("AOTWHEEL_REMOTE_CACHE=") and line.partition("=")[2].strip()
               for line in text.splitlines())


@dataclass
class SpirvCache:
    """One SPIR-V step's view of the tiers: the local cache and, when configured, the remote stores."""

    local: DeviceCodeCache
    tiers: Tiers | None = None  # None: no remote configured (and none imported)

    @classmethod
    def for_build(cls, build_dir: Path, settings: str | None) -> SpirvCache:
        """The local cache from the environment, plus the remote stores when any is configured."""
        if _remote_named(settings):
            from aotwheel.buildsteps.tiers import Tiers, load_settings

            tiers = Tiers.for_build(build_dir, load_settings(settings))
            return cls(tiers.local, tiers)
        local = DeviceCodeCache.from_env(warn_once=build_dir / ".aotwheel-cache-warning")
        local.build = build_id(build_dir)
        return cls(local)

    @property
    def stores(self) -> list[Store]:
        return self.tiers.stores if self.tiers is not None else []

    def _manifests(self, key: CacheKey, label: str, answered: list[Store]) -> Iterator[tuple[list[dict], str]]:
        """Each tier's manifest entries with the tier's provenance, local first; a store is asked
        only when the tiers before it had no usable entry. Stores that answer are appended to
        ``answered`` (they get the updated manifest after a compile)."""
        yield _entries(self.local.get(key, label)), LOCAL
        if self.tiers is None:
            return
        for store in self.tiers.stores:
            payload, usable = self.tiers.fetch(store, key, label, MANIFEST_LIMIT)
            if not usable:
                continue
            answered.append(store)  # a miss or a refused object: the compile's manifest replaces it
            if payload is not None:
                yield _entries(payload), REMOTE

    def _spirv(self, sha: str, label: str, size: object = None) -> tuple[bytes | None, str, list[Store]]:
        """The SPIR-V with this sha256 from the first tier holding an intact copy (``size``: what
        the manifest recorded, the cap on a remote answer)."""
        key = spirv_key(sha)
        if self.tiers is not None:
            limit = size if isinstance(size, int) and 0 <= size < 1 << 31 else None
            data, provenance, writable = self.tiers.lookup(key, label, limit=limit)
        else:
            data = self.local.get(key, label)
            provenance, writable = (LOCAL if data is not None else COMPILED), []
        if data is not None and hashlib.sha256(data).hexdigest() != sha:
            return None, COMPILED, writable  # cannot happen with intact objects; never trust it
        return data, provenance, writable

    def _push(self, stores: list[Store], key: CacheKey, data: bytes, label: str) -> None:
        if self.tiers is not None and stores:
            self.tiers.push(stores, key, data, label)

    def obtain(self, tc: SpirvToolchain, source: str, output: str, depfile: str | None, extra: list[str],
               roots: Roots) -> tuple[int, str]:
        """Write ``output`` (and ``depfile``) from the cache, else by compiling; ``(size, provenance)``."""
        label = f"{Path(source).name}"
        src = os.path.abspath(source)
        hashes = _Hashes()
        source_sha = hashes(src) or ""
        tool_sha = (self.local.tool_sha256(tc.clang), self.local.tool_sha256(tc.llvm_spirv))
        key = manifest_key(tc, tool_sha, src, source_sha, extra, roots)
        answered: list[Store] = []
        local_entries: list[dict] = []
        seen: list[dict] = []
        payload_writable: list[Store] = []
        for entries, where in self._manifests(key, label, answered):
            if where == LOCAL:
                local_entries = entries
            for entry in entries:
                recorded = [tuple(d) for d in entry["deps"]]
                if not all(len(d) == 3 and hashes(roots.resolve(d[0], d[1])) == d[2] for d in recorded):
                    continue
                data, provenance, writable = self._spirv(entry["spirv"], label, entry.get("size"))
                payload_writable += writable
                if data is None:
                    continue
                paths = [roots.resolve(d[0], d[1]) for d in recorded]
                self._publish(output, depfile, data, paths)
                if where == REMOTE or provenance == REMOTE:
                    # keep the remote entry in the local manifest, first
                    self.local.put(key, self._manifest_blob(entry, local_entries), label)
                    provenance = REMOTE
                self.local.event(f"spirv-{'remote-hit' if provenance == REMOTE else 'hit'}", key.digest(),
                                 SPIRV_TARGET, label, len(data))
                return len(data), provenance
            seen += entries
        # A miss: compile, then record what this compile read.
        tmp_dep = f"{output}.clang.d"
        data = compile_to_spirv(tc, source, output, depfile=tmp_dep, extra=extra)
        try:
            paths = [os.path.abspath(p) for p in parse_depfile(Path(tmp_dep).read_text())]
        finally:
            Path(tmp_dep).unlink(missing_ok=True)
        deps: list[list[str]] = []
        for p in paths:
            role, where_ = roots.locate(p)
            deps.append([role, where_, hashes(p) or ""])
        sha = hashlib.sha256(data).hexdigest()
        entry = {"deps": deps, "spirv": sha, "size": len(data)}
        if depfile:
            atomic_write(Path(depfile), render_depfile(output, paths).encode())
        if all(d[2] for d in deps):  # a dependency that vanished mid-build: cache nothing
            manifest = self._manifest_blob(entry, seen)
            self.local.put(key, manifest, label)
            self.local.put(spirv_key(sha), data, label)
            self._push(answered, key, manifest, label)
            self._push(list({id(s): s for s in answered + payload_writable}.values()), spirv_key(sha), data, label)
        self.local.event("spirv-compiled", key.digest(), SPIRV_TARGET, label, len(data))
        return len(data), COMPILED

    @staticmethod
    def _manifest_blob(first: dict, others: list[dict]) -> bytes:
        keep = [first] + [e for e in others if e.get("deps") != first["deps"]]
        return json.dumps({"schema": SCHEMA, "entries": keep[:MAX_ENTRIES]}, sort_keys=True).encode()

    @staticmethod
    def _publish(output: str, depfile: str | None, data: bytes, paths: list[str]) -> None:
        entry_points(data)  # validates the module before anything is published
        if depfile:
            atomic_write(Path(depfile), render_depfile(output, paths).encode())
        atomic_write(Path(output), data)


def build_spirv(tc: SpirvToolchain, source: str, output: str, *, depfile: str | None, extra: list[str],
                settings: str | None = None, source_root: str | None = None,
                build_root: str | None = None) -> tuple[int, str]:
    """The SPIR-V step: ``(size, provenance)``. Roots default to the source's and output's folders."""
    out_dir = Path(output).resolve().parent
    roots = Roots(os.path.abspath(source_root or os.path.dirname(os.path.abspath(source))),
                  os.path.abspath(build_root or out_dir))
    cache = SpirvCache.for_build(out_dir, settings)
    if not cache.local.enabled and cache.tiers is None:  # no cache at all: just compile
        data = compile_to_spirv(tc, source, output, depfile=depfile, extra=extra)
        return len(data), COMPILED
    return cache.obtain(tc, source, output, depfile, extra, roots)
