"""The cache's event counts (``aotwheel build cache``, the manifest): a module of its own so that
the build steps, which only record events, do not import dataclasses (see values.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class CacheStats:
    """Lookups recorded in ``events.log`` (all builds, or one build's)."""

    hits: int
    misses: int
    stores: int
    corrupt: int = 0  # entries that failed the hash check (each was removed and rebuilt)
    remote_hits: int = 0
    remote_misses: int = 0
    remote_stores: int = 0
    remote_failures: int = 0  # unreachable, refused, bad status, timeout, damaged object
    remote_bytes_in: int = 0
    remote_bytes_out: int = 0
    # The SPIR-V step's cache (buildsteps.spvcache), apart from the device images' counts above:
    # steps served from the local cache / a remote store, steps that compiled, and its objects'
    # damaged entries, remote failures and remote stores.
    spirv_hits: int = 0
    spirv_remote_hits: int = 0
    spirv_compiled: int = 0
    spirv_corrupt: int = 0
    spirv_remote_failures: int = 0
    spirv_remote_stores: int = 0
    build: str = ""  # the build these counts belong to ("" = all builds)

    def to_dict(self) -> dict[str, object]:
        """The counters as JSON-ready dict."""
        return asdict(self)
