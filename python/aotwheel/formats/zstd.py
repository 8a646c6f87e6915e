"""zstd-compressed device images (``--offload-compress``): peek at the head, or decompress fully
with a hard cap on the output size."""

from __future__ import annotations

from typing import IO, Any, cast

from aotwheel.formats.region import Region

DEFAULT_CAP = 2 << 30  # no real device image comes close; hostile frames stop here
# Device code compresses a few times over; a frame claiming more than this ratio is a bomb.
# The floor keeps small, highly regular images (padding, tables) decompressible.
MAX_RATIO = 1024
RATIO_FLOOR = 64 << 20


def output_cap(compressed_size: int, cap: int = DEFAULT_CAP) -> int:
    """The most bytes a frame of ``compressed_size`` may expand to."""
    return min(cap, max(RATIO_FLOOR, MAX_RATIO * compressed_size))


def content_size(region: Region) -> int | None:
    """The decompressed size the frame header declares, or ``None`` if it does not say."""
    import zstandard

    try:
        size = zstandard.frame_content_size(region.head(18))
    except zstandard.ZstdError:
        raise region.error(0, "bad zstd frame header") from None
    return None if size < 0 else size


def peek(region: Region, n: int = 64, dctx: Any = None) -> bytes:
    """The first ``n`` decompressed bytes, decompressing only as far as needed.

    ``dctx``: a ``zstandard.ZstdDecompressor`` to reuse (an inspect walk peeks at thousands of
    onemkl images; a new context each time was half the cost).
    """
    import zstandard

    if dctx is None:
        dctx = zstandard.ZstdDecompressor()
    reader = dctx.stream_reader(cast(IO[bytes], region.stream()), read_size=1 << 16)
    try:
        return bytes(reader.read(n))
    except zstandard.ZstdError as exc:
        raise region.error(0, f"corrupt zstd data ({exc})") from None


def decompress(region: Region, cap: int = DEFAULT_CAP) -> bytes:
    """Whole decompressed image; refuses frames that declare or produce more than ``cap`` bytes
    (and more than :data:`MAX_RATIO` times their stored size, above :data:`RATIO_FLOOR`)."""
    import zstandard

    cap = output_cap(len(region), cap)
    declared = content_size(region)
    if declared is not None and declared > cap:
        raise region.error(0, f"zstd frame declares {declared} bytes, above the {cap}-byte cap")
    reader = zstandard.ZstdDecompressor().stream_reader(cast(IO[bytes], region.stream()), read_size=1 << 20)
    chunks, total = [], 0
    try:
        while chunk := reader.read(1 << 22):
            total += len(chunk)
            if total > cap:
                raise region.error(0, f"zstd data expands beyond the {cap}-byte cap")
            chunks.append(chunk)
    except zstandard.ZstdError as exc:
        raise region.error(0, f"corrupt zstd data ({exc})") from None
    if declared is not None and total != declared:
        raise region.error(0, f"zstd frame declares {declared} bytes but holds {total}")
    return b"".join(chunks)


def frame_facts(buf: Any, at: int, size: int) -> tuple[int, int | None] | None:
    """``(stored size, declared content size or None)`` of the zstd frame at ``buf[at : at + size]``,
    from its frame and block headers alone, for the inspect loop over thousands of images.

    ``None`` whenever anything is unusual (reserved bits, a header or block past ``size``): the
    Region-based :func:`frame_size` and :func:`content_size` then decide and word the error.
    """
    end = at + size
    if size < 6:
        return None
    fhd = buf[at + 4]
    if fhd & 0x08:  # reserved bit: zstd itself rejects the frame
        return None
    single_segment = (fhd >> 5) & 1
    if not single_segment and (buf[at + 5] >> 3) + 10 > 31:  # window log past ZSTD_WINDOWLOG_MAX: rejected
        return None
    pos = at + 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3]
    fcs = (single_segment, 2, 4, 8)[fhd >> 6]
    if pos + fcs > end:
        return None
    declared = int.from_bytes(buf[pos : pos + fcs], "little") + (256 if fcs == 2 else 0) if fcs else None
    if declared is not None and declared >= (1 << 64) - 2:  # zstd's "unknown" and "error" codes
        return None
    pos += fcs
    while True:
        if pos + 3 > end:
            return None
        header = int.from_bytes(buf[pos : pos + 3], "little")
        btype = (header >> 1) & 3
        if btype == 3:
            return None
        pos += 3 + (1 if btype == 1 else header >> 3)
        if header & 1:
            break
    pos += 4 if fhd & 4 else 0
    return (pos - at, declared) if pos <= end else None


def frame_size(region: Region) -> int:
    """Bytes the zstd frame at the start of ``region`` occupies, from its block headers only.

    Needed because some producers record the *decompressed* size in ``.tgtimg`` (onemkl-sycl
    2026.2: 980 stored bytes listed as 2560), so the table's size overlaps the next image.
    """
    (fhd,) = region.unpack("<B", 4, "zstd frame header")
    single_segment = (fhd >> 5) & 1
    pos = 5 + (0 if single_segment else 1)
    pos += (0, 1, 2, 4)[fhd & 3]  # dictionary id
    pos += (single_segment, 2, 4, 8)[fhd >> 6]  # frame content size
    while True:
        (b0, b1, b2) = region.unpack("<3B", pos, "zstd block header")
        header = b0 | (b1 << 8) | (b2 << 16)
        last, btype, bsize = header & 1, (header >> 1) & 3, header >> 3
        if btype == 3:
            raise region.error(pos, "reserved zstd block type")
        pos += 3 + (1 if btype == 1 else bsize)
        region.check(0, pos, "zstd block")
        if last:
            break
    pos += 4 if (fhd >> 2) & 1 else 0  # content checksum
    region.check(0, pos, "zstd checksum")
    return pos
