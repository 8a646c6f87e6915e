"""Configure-time toolchain discovery for the open backend, memoised in the cache.

Asking ocloc its version and device list costs two ocloc runs; the answer is cached keyed by the
binary's path, size and mtime, so a rebuild with a warm cache runs ocloc zero times (and, the same
way, clang and llvm-spirv are asked their ``--version`` once per binary, not every configure). A machine
with an empty local cache asks the remote stores (``AOTWHEEL_REMOTE_CACHE``) first, by the
binary's sha256: a fresh machine against a warm remote runs no ocloc at all, not even to ask.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from aotwheel.backends.intel.buildsteps.spirv import SpirvToolchain
from aotwheel.backends.intel.clang import find_spirv_toolchain, tool_version
from aotwheel.backends.intel.ocloc_table import installed_catalog
from aotwheel.buildsteps.cache import DeviceCodeCache
from aotwheel.errors import ToolchainError
from aotwheel.variables import DEVLIST


@dataclass(slots=True)
class OpenToolchain:
    """What the build edges need: the SPIR-V pair and, when there are devices, ocloc;
    ``ocloc_names`` maps each canonical device name to the spelling this ocloc accepts for ``-device``."""

    spirv: SpirvToolchain
    ocloc: str | None = None
    ocloc_version: str | None = None
    ocloc_names: dict[str, str] = field(default_factory=dict)
    # What the images are (USE_AOT_IMAGE_FORMAT) and the ocloc arguments that make them so.
    image_format: str = "zebin"
    ocloc_format_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.ocloc_format_args = tuple(self.ocloc_format_args)

    def to_dict(self) -> dict[str, object]:
        """The toolchain JSON the build edges read (paths, versions, ocloc spellings, image format)."""
        return {**self.spirv.to_dict(), "ocloc": self.ocloc, "ocloc_version": self.ocloc_version,
                "ocloc_names": dict(self.ocloc_names), "image_format": self.image_format,
                "ocloc_format_args": list(self.ocloc_format_args)}


def _facts_key(tool_sha256: str):  # type: ignore[no-untyped-def]
    from aotwheel.buildsteps.cache import CacheKey

    return CacheKey(input_sha256=tool_sha256, target="tool-facts", tool="ocloc", tool_version="",
                    tool_sha256=tool_sha256, options="version,acronyms,formats")


def ocloc_facts(cache: DeviceCodeCache, build_dir: Path | None = None, explicit: str | None = None) -> tuple[str, str, frozenset[str]]:
    """``(path, version, acronyms)`` of the ocloc in use (``explicit``, else ``$AOTWHEEL_OCLOC``,
    else ``PATH``), from the cache when its binary is unchanged."""
    from aotwheel.backends.intel.ocloc import ocloc_path

    path = ocloc_path(explicit)
    if path is None:
        from aotwheel.backends.intel.ocloc import INSTALL_HINT

        raise ToolchainError(f"Missing ocloc (Intel's offline GPU compiler). {INSTALL_HINT}")
    facts = cache.tool_facts(path) if os.path.exists(path) else None
    known = bool(facts and "version" in facts and "acronyms" in facts and "formats" in facts)
    if known and (build_dir is None or not _remote_configured()):
        return path, facts["version"], frozenset(facts["acronyms"])  # type: ignore[index]
    tiers = key = writable = None
    if build_dir is not None and os.path.isfile(path):
        from aotwheel.buildsteps.tiers import Tiers

        # With a remote, configure asks it even when the facts are known here: the build's first
        # request, made before its parallel steps start, so that a store that is down or hangs is
        # found once and marked down for all of them (else each would wait its own deadline).
        tiers = Tiers.for_build(build_dir)
        tiers.local, cache.build = cache, tiers.local.build  # this cache, this build's events
        # CMake shows a configure step's stderr only when it fails: leave the once-per-build
        # warning (and its marker) to the first ocloc edge, whose output ninja does show. A store
        # that fails here is still marked down for the build's steps (no second timeout).
        tiers.quiet = True
        key = _facts_key(cache.tool_sha256(path))
        data = None
        if tiers.stores:  # locally, tools/*.json above is the memo
            data, _, writable = tiers.lookup(key, "ocloc-facts", limit=1 << 20)
        if known:  # the remote lacks them (ocloc_format_args may have asked ocloc first): push them
            if data is None and writable:
                doc = {k: facts[k] for k in ("version", "acronyms", "formats")}  # type: ignore[index]
                tiers.push(writable, key, json.dumps(doc, sort_keys=True).encode(), "ocloc-facts")
            return path, facts["version"], frozenset(facts["acronyms"])  # type: ignore[index]
        if data is not None:
            try:
                remote = json.loads(data)
                version, acronyms = str(remote["version"]), frozenset(str(a) for a in remote["acronyms"])
                formats = sorted(str(f) for f in remote["formats"])
            except (ValueError, KeyError, TypeError):
                pass  # not ours: ask ocloc
            else:
                cache.store_tool_facts(path, {"version": version, "acronyms": sorted(acronyms), "formats": formats})
                return path, version, acronyms
    from aotwheel.backends.intel.ocloc import find_ocloc  # only here does configure run ocloc (a cold cache)

    found = find_ocloc(path)
    doc = {"version": found.version, "acronyms": sorted(found.acronyms), "formats": sorted(found.formats)}
    cache.store_tool_facts(path, {**(cache.tool_facts(path) or {}), **doc})  # keeps the device table
    if tiers is not None and key is not None and writable is not None:
        tiers.push(writable, key, json.dumps(doc, sort_keys=True).encode(), "ocloc-facts")
    return path, found.version, found.acronyms


def _remote_configured() -> bool:
    from aotwheel.buildsteps.tiers import remote_configured

    return remote_configured(os.environ, None)


def ocloc_format_args(cache: DeviceCodeCache, path: str, version: str, image_format: str, *, source: str) -> tuple[str, ...]:
    """The ocloc arguments that write ``image_format`` images (:func:`aotwheel.backends.intel.ocloc.format_args`),
    from the ``--format`` values :func:`ocloc_facts` recorded for this ocloc binary."""
    from aotwheel.backends.intel.ocloc import format_args

    facts = cache.tool_facts(path) or {}
    if "formats" not in facts:  # facts from before formats were recorded, or another cache
        from aotwheel.backends.intel.ocloc import find_ocloc

        facts = {**facts, "formats": sorted(find_ocloc(path).formats)}
        cache.store_tool_facts(path, facts)
    return format_args(image_format, frozenset(facts["formats"]), version, path, source=source)


def llvm_version(cache: DeviceCodeCache, path: str) -> str:
    """``maj.min.patch`` of the clang or llvm-spirv at ``path`` (:func:`tool_version`), from the
    cache while the binary's path, size and mtime are unchanged (each ``--version`` run costs
    tens of ms of every configure)."""
    facts = cache.tool_facts(path) or {}
    if isinstance(facts.get("llvm_version"), str):
        return str(facts["llvm_version"])
    version = tool_version(path)
    cache.store_tool_facts(path, {**facts, "llvm_version": version})
    return version


def discover(devices: list[str], cache: DeviceCodeCache | None = None, build_dir: Path | None = None,
             image_format: str = "zebin") -> OpenToolchain:
    """Find the tools for ``devices`` (canonical names; may be empty) and check ocloc knows each,
    and that it writes ``image_format`` images (zebin, the default, or legacy).

    ``build_dir`` (the configure step's): also look the ocloc facts up in the remote stores.

    Raises :class:`ToolchainError` with one line naming the missing tool or device.
    """
    cache = cache if cache is not None else DeviceCodeCache.from_env()
    spirv = find_spirv_toolchain(version=lambda path: llvm_version(cache, path))
    if not devices:
        return OpenToolchain(spirv=spirv)
    path, version, acronyms = ocloc_facts(cache, build_dir)
    names = ocloc_spellings(devices, path, version, acronyms, hint=DEVLIST.name)
    from aotwheel.backends.intel.variables import IMAGE_FORMAT

    args = ocloc_format_args(cache, path, version, image_format, source=IMAGE_FORMAT.name)
    return OpenToolchain(spirv=spirv, ocloc=path, ocloc_version=version, ocloc_names=names, image_format=image_format,
                         ocloc_format_args=args)


def ocloc_spellings(devices: list[str], path: str, version: str, acronyms: frozenset[str], *,
                    hint: str) -> dict[str, str]:
    """Canonical device name -> the spelling this ocloc accepts for ``-device``.

    Raises :class:`ToolchainError` naming the first device this ocloc cannot build (``hint``
    names where the device list came from, for the fix).
    """
    from aotwheel.backends.intel.catalog import load_catalog

    catalog = load_catalog()  # a device only the installed ocloc knows is named as ocloc names it
    names: dict[str, str] = {}
    missing: list[tuple[str, str]] = []
    for name in devices:
        dev = catalog.by_name(name)
        spellings = (name,) + (dev.aliases if dev else ())
        usable = [s for s in spellings if s.lower() in acronyms]
        if usable:
            names[name] = usable[0]
        elif name.count(".") == 2 and name.replace(".", "").isdigit() and installed_catalog(path).source(name) != "catalog":
            names[name] = name  # a stepping target (grammar.stepping), which this ocloc's device table lists by IP
        else:
            missing.append((name, dev.ip if dev else "?"))
    if missing:  # every target this ocloc cannot build, in one line
        from aotwheel.backends.intel.ocloc import too_new_message

        raise ToolchainError(too_new_message(missing, version, path, hint=hint))
    return names
