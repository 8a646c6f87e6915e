"""Clang offload bundles: the ``__CLANG_OFFLOAD_BUNDLE__`` container HIP keeps in ``.hip_fatbin``
(and icpx names its device-code sections after), and its compressed form ``CCOB``.

Layouts (clang's OffloadBundler.cpp, checked on bitsandbytes 0.50.2's ROCm libraries against
clang-offload-bundler and the zstd CLI):

- plain bundle: magic (24 bytes), u64 entry count, then per entry u64 offset, u64 size, u64 id
  length and the id (``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-``); offsets are from the magic.
- ``CCOB``: magic, u16 version, u16 method (0 zlib, 1 zstd), then version 1: u32 uncompressed size;
  version 2: u32 total size, u32 uncompressed size; version 3: u64 total size, u64 uncompressed
  size; then a u64 hash (the first 8 bytes of the MD5 of the uncompressed bundle) and the
  compressed bundle. The total size counts the header.
"""

from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass

from aotwheel.formats.region import Region

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
_ENTRY_MIN = 24  # offset, size, id length (an empty id is legal: "host-..." ids are not empty)
_MAX_ID = 1024  # bundle ids are ~40 bytes; longer ones are corrupt
METHODS = {0: "zlib", 1: "zstd"}
_CCOB_HEADERS = {1: ("<IQ", 20), 2: ("<IIQ", 24), 3: ("<QQQ", 32)}


@dataclass(frozen=True)
class BundleEntry:
    """One entry: ``kind`` (``hipv4``, ``hip``, ``openmp``, ``host``, ``sycl``), the target triple
    and the target id (``gfx90a:xnack-``, empty for the host), and where its bytes lie (relative to
    the bundle)."""

    id: str
    kind: str
    triple: str
    target_id: str
    offset: int
    size: int


@dataclass(frozen=True)
class Compressed:
    """A ``CCOB`` header: ``region`` is the compressed stream, ``total_size`` the bytes the whole
    compressed bundle occupies (header included)."""

    version: int
    method: str
    total_size: int
    uncompressed_size: int
    hash: bytes
    region: Region


def split_id(bundle_id: str) -> tuple[str, str, str]:
    """``hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`` -> (``hipv4``, ``amdgcn-amd-amdhsa-``, ``gfx90a:xnack-``).

    The triple has four components (an empty environment leaves ``--``); ids written before that
    rule (``hip-amdgcn-amd-amdhsa-gfx906``) have three and a ``gfx`` target after them.
    """
    kind, _, rest = bundle_id.partition("-")
    parts = rest.split("-")
    if len(parts) >= 5:
        return kind, "-".join(parts[:4]), "-".join(parts[4:])
    if len(parts) == 4 and parts[3].startswith("gfx"):
        return kind, "-".join(parts[:3]), parts[3]
    return kind, rest, ""


def is_bundle(head: bytes) -> bool:
    return head[: len(BUNDLE_MAGIC)] == BUNDLE_MAGIC


def read_bundle(region: Region) -> list[BundleEntry]:
    """The entries of the plain bundle at the start of ``region``; every entry's bytes must lie
    inside the region."""
    if region.head(len(BUNDLE_MAGIC)) != BUNDLE_MAGIC:
        raise region.error(0, "missing __CLANG_OFFLOAD_BUNDLE__ magic")
    (count,) = region.unpack("<Q", 24, "offload bundle entry count")
    if count * _ENTRY_MIN > region.size - 32:
        raise region.error(24, f"offload bundle claims {count} entries, more than its {region.size} bytes can hold")
    entries, pos = [], 32
    for _ in range(count):
        offset, size, id_len = region.unpack("<QQQ", pos, "offload bundle entry")
        if id_len > _MAX_ID:
            raise region.error(pos + 16, f"offload bundle id of {id_len} bytes (at most {_MAX_ID})")
        bundle_id = region.read(pos + 24, id_len, "offload bundle id").decode("utf-8", "replace")
        region.check(offset, size, f"offload bundle entry {bundle_id!r}")
        kind, triple, target = split_id(bundle_id)
        entries.append(BundleEntry(bundle_id, kind, triple, target, offset, size))
        pos += 24 + id_len
    return entries


def bundle_extent(entries: list[BundleEntry], header_end: int = 32) -> int:
    """Bytes a plain bundle occupies: its header and the furthest entry's end."""
    return max([header_end] + [e.offset + e.size for e in entries])


def read_ccob(region: Region) -> Compressed:
    """The ``CCOB`` header at the start of ``region`` (versions 1-3)."""
    magic, version, method = region.unpack("<4sHH", 0, "CCOB header")
    if magic != CCOB_MAGIC:
        raise region.error(0, "missing CCOB magic")
    if version not in _CCOB_HEADERS:
        raise region.error(4, f"unsupported compressed offload bundle version {version} (known: 1, 2, 3)")
    if method not in METHODS:
        raise region.error(6, f"unknown compressed offload bundle method {method} (0 zlib, 1 zstd)")
    fmt, header = _CCOB_HEADERS[version]
    fields = region.unpack(fmt, 8, "CCOB header")
    if version == 1:  # no total size: the stream runs to the end of the region
        (uncompressed, digest), total = fields, region.size
    else:
        total, uncompressed, digest = fields
    if total < header:
        raise region.error(8, f"compressed offload bundle of {total} bytes, smaller than its {header}-byte header")
    region.check(0, total, "compressed offload bundle")
    return Compressed(version, METHODS[method], total, uncompressed, struct.pack("<Q", digest),
                      region.sub(header, total - header, "compressed offload bundle"))


def decompress_ccob(ccob: Compressed, cap: int | None = None) -> bytes:
    """The plain bundle inside; its size and MD5 prefix must match the header's."""
    from aotwheel.formats import zstd

    region = ccob.region
    limit = zstd.output_cap(region.size) if cap is None else cap
    if ccob.uncompressed_size > limit:
        raise region.error(0, f"compressed offload bundle declares {ccob.uncompressed_size} bytes, above the {limit}-byte cap")
    if ccob.method == "zstd":
        data = zstd.decompress(region, cap=limit)
    else:
        data = _inflate(region, limit)
    if len(data) != ccob.uncompressed_size:
        raise region.error(0, f"compressed offload bundle declares {ccob.uncompressed_size} bytes but holds {len(data)}")
    if hashlib.md5(data, usedforsecurity=False).digest()[:8] != ccob.hash:
        raise region.error(0, "compressed offload bundle does not match its hash")
    return data


def _inflate(region: Region, cap: int) -> bytes:
    import zlib

    d = zlib.decompressobj()
    try:
        data = d.decompress(region.view(0, region.size, "zlib stream"), cap + 1)
    except zlib.error as exc:
        raise region.error(0, f"corrupt zlib data ({exc})") from None
    if len(data) > cap:
        raise region.error(0, f"zlib data expands beyond the {cap}-byte cap")
    if not d.eof:
        raise region.error(0, "truncated zlib stream")
    return data


@dataclass(frozen=True)
class FatbinBundle:
    """One bundle found in a ``.hip_fatbin`` section: where it starts, how it was stored, and the
    plain bundle (decompressed when it was a ``CCOB``)."""

    offset: int  # relative to the section
    stored_size: int
    compressed: Compressed | None
    bundle: Region  # the plain bundle (a region over decompressed bytes for CCOB)
    entries: list[BundleEntry]


def read_hip_fatbin(region: Region, cap: int | None = None) -> list[FatbinBundle]:
    """Every bundle in a ``.hip_fatbin`` section: one per translation unit, each at an aligned
    offset (4096 in practice) with zero padding between; anything else between them is corrupt."""
    out: list[FatbinBundle] = []
    pos = 0
    while pos < region.size:
        rest = region.sub(pos, region.size - pos, ".hip_fatbin")
        head = rest.head(len(BUNDLE_MAGIC))
        if head.startswith(CCOB_MAGIC):
            ccob = read_ccob(rest)
            data = decompress_ccob(ccob, cap)
            inner = Region(data, f"{region.label} (bundle at {region.where(pos):#x}, decompressed)")
            out.append(FatbinBundle(pos, ccob.total_size, ccob, inner, read_bundle(inner)))
            pos += ccob.total_size
        elif head == BUNDLE_MAGIC:
            entries = read_bundle(rest)
            size = bundle_extent(entries)
            out.append(FatbinBundle(pos, size, None, rest.sub(0, size, "offload bundle"), entries))
            pos += size
        elif not any(head):
            pos = _next_nonzero(region, pos)
        else:
            raise region.error(pos, f"neither an offload bundle nor padding in .hip_fatbin (bytes {head[:8].hex()})")
    return out


_NONZERO = re.compile(rb"[^\x00]")


def _next_nonzero(region: Region, pos: int) -> int:
    """Offset of the first non-zero byte at or after ``pos`` (the region's size if none)."""
    with region.view(0, region.size, ".hip_fatbin") as view:
        m = _NONZERO.search(view, pos)
    return m.start() if m else region.size
