"""Configure-time toolchain discovery for the open backend, memoised in the cache.

Asking ocloc its version and device list costs two ocloc runs; the answer is cached keyed by the
binary's path, size and mtime, so a rebuild with a warm cache runs ocloc zero times.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from aotwheel.config import OCLOC
from aotwheel.buildsteps.cache import DeviceCodeCache
from aotwheel.errors import ToolchainError
from aotwheel.backends.intel.clang import SpirvToolchain, find_spirv_toolchain


@dataclass(frozen=True)
class OpenToolchain:
    """What the build edges need: the SPIR-V pair and, when there are devices, ocloc."""

    spirv: SpirvToolchain
    ocloc: str | None = None
    ocloc_version: str | None = None
    #: canonical device name -> the spelling this ocloc accepts for ``-device``
    ocloc_names: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        """The toolchain JSON the build edges read (paths, versions, ocloc spellings)."""
        return {**self.spirv.to_dict(), "ocloc": self.ocloc, "ocloc_version": self.ocloc_version,
                "ocloc_names": dict(self.ocloc_names)}


def ocloc_facts(cache: DeviceCodeCache) -> tuple[str, str, frozenset[str]]:
    """``(path, version, acronyms)`` of the ocloc in use, from the cache when its binary is unchanged."""
    from aotwheel.backends.intel.ocloc import INSTALL_HINT, find_ocloc

    candidate = os.environ.get(OCLOC.name) or shutil.which("ocloc")
    if not candidate:
        raise ToolchainError(f"Missing ocloc (Intel's offline GPU compiler). {INSTALL_HINT}")
    path = shutil.which(candidate) or candidate
    path = os.path.abspath(path)
    facts = cache.tool_facts(path) if os.path.exists(path) else None
    if facts and "version" in facts and "acronyms" in facts:
        return path, facts["version"], frozenset(facts["acronyms"])
    found = find_ocloc(path)
    cache.store_tool_facts(path, {"version": found.version, "acronyms": sorted(found.acronyms)})
    return path, found.version, found.acronyms


def discover(devices: list[str], cache: DeviceCodeCache | None = None) -> OpenToolchain:
    """Find the tools for ``devices`` (canonical names; may be empty) and check ocloc knows each.

    Raises :class:`ToolchainError` with one line naming the missing tool or device.
    """
    cache = cache if cache is not None else DeviceCodeCache.from_env()
    spirv = find_spirv_toolchain()
    if not devices:
        return OpenToolchain(spirv=spirv)
    from aotwheel.backends.intel.catalog import load_catalog

    path, version, acronyms = ocloc_facts(cache)
    catalog = load_catalog()
    names: dict[str, str] = {}
    for name in devices:
        dev = catalog.by_name(name)
        spellings = (name,) + (dev.aliases if dev else ())
        usable = [s for s in spellings if s.lower() in acronyms]
        if not usable:
            raise ToolchainError(
                f"ocloc {version} at {path} cannot build for '{name}'; install a newer ocloc "
                f"(intel-opencl-icd / oneAPI) or remove '{name}' from USE_AOT_DEVLIST"
            )
        names[name] = usable[0]
    return OpenToolchain(spirv=spirv, ocloc=path, ocloc_version=version, ocloc_names=names)
