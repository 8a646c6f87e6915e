"""zstd-compressed device images (``--offload-compress``): peek at the head, or decompress fully
with a hard cap on the output size."""

from __future__ import annotations

from aotwheel.formats.region import Region

TYPE_CHECKING = False  # not typing's: aotwheel inspect's start-up
if TYPE_CHECKING:
    from typing import Any

CHECKSUM_FAILS = "its zstd frame fails its checksum (the stored bytes changed after compression)"
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
    reader = dctx.stream_reader(region.stream(), read_size=1 << 16)
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
    reader = zstandard.ZstdDecompressor().stream_reader(region.stream(), read_size=1 << 20)  # type: ignore[arg-type]  # a binary stream
    chunks, total = [], 0
    try:
        while chunk := reader.read(1 << 22):
            total += len(chunk)
            if total > cap:
                raise region.error(0, f"zstd data expands beyond the {cap}-byte cap")
            chunks.append(chunk)
    except zstandard.ZstdError as exc:
        raise region.error(0, CHECKSUM_FAILS if "checksum" in str(exc) else f"corrupt zstd data ({exc})") from None
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


def first_block_end(buf: Any, at: int, size: int) -> int | None:
    """Bytes from the start of the zstd frame at ``buf[at : at + size]`` to the end of its first
    block, or of the whole frame (its checksum included) when that block is the last; ``None`` when
    the headers are unusual (:func:`frame_facts` says the same)."""
    if size < 6:
        return None
    fhd = buf[at + 4]
    if fhd & 0x08:
        return None
    single_segment = (fhd >> 5) & 1
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[fhd & 3] + (single_segment, 2, 4, 8)[fhd >> 6]
    if pos + 3 > size:
        return None
    header = int.from_bytes(buf[at + pos : at + pos + 3], "little")
    btype = (header >> 1) & 3
    if btype == 3:
        return None
    pos += 3 + (1 if btype == 1 else header >> 3) + (4 if header & 1 and fhd & 4 else 0)
    return pos if pos <= size else None


_WHOLE_UP_TO = 128 << 10  # a frame declaring at most this much is decompressed whole: one call, output bounded by the declaration


def peek_frame(buf: Any, at: int, size: int, dctx: Any, declared: int | None = None, n: int = 64) -> bytes:
    """The first ``n`` decompressed bytes of the ``size``-byte zstd frame at ``buf[at:]``, from its
    first block alone (at most 128 KiB of output, zstd's block limit): what tells one kind of image
    from another without decompressing the rest. A frame that ``declared`` (its header's content
    size) at most 128 KiB, or of one block, is decompressed whole, so its checksum is verified.
    Raises :class:`ValueError` with the reason for a frame that does not decode (a failed checksum
    named as such)."""
    try:
        if declared is not None and 0 < declared <= _WHOLE_UP_TO:
            return dctx.decompress(buf[at : at + size], max_output_size=declared)[:n]  # type: ignore[no-any-return]
        end = first_block_end(buf, at, size)
        if end is None:
            raise ValueError("unreadable zstd frame header")
        return bytes(dctx.decompressobj().decompress(bytes(buf[at : at + end]))[:n])
    except ValueError:
        raise
    except Exception as exc:  # zstandard.ZstdError, not imported here: this runs for 19k images
        if type(exc).__name__ != "ZstdError":
            raise
        raise ValueError(CHECKSUM_FAILS if "checksum" in str(exc) else f"corrupt zstd data ({exc})") from None


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


# --------------------------------------------------------------------------------------------
# aotwheel's own compressed images (aotwheel_add_device_code(... COMPRESS ON))

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: zstd level of the images aotwheel embeds: on this repository's kernels level 19 was 5 % smaller
#: than 9 and cost nothing at run time (benchmarks/results/compress.json); 9 keeps the build fast
#: for the 100 MB fat binaries of large projects.
IMAGE_LEVEL = 9


def compress_image(data: bytes, level: int = IMAGE_LEVEL) -> bytes:
    """One zstd frame holding ``data`` whole, with its content size and a checksum in the frame:
    the reader allocates exactly the declared size and a damaged frame fails its checksum."""
    import zstandard

    return zstandard.ZstdCompressor(level=level, write_content_size=True, write_checksum=True).compress(data)


def is_zstd(data: bytes | bytearray | memoryview) -> bool:
    """Whether ``data`` starts a zstd frame (icpx's Format 4 images, aotwheel's compressed ones)."""
    return bytes(data[:4]) == ZSTD_MAGIC


def decompress_image(data: bytes | bytearray | memoryview, label: str, cap: int = DEFAULT_CAP) -> bytes:
    """The image a single zstd frame holds, for the loaders (not the inspector's forgiving read).

    Strict: the frame must declare its content size (so the output is allocated once, at the size
    the header says), that size must be within :func:`output_cap` of the stored size, the frame
    must decompress to exactly that many bytes (checksum verified when present) and nothing may
    follow it. Anything else is one :class:`~aotwheel.errors.InspectError` naming ``label``.
    """
    import zstandard

    frame = bytes(data)
    region = Region(frame, label)
    if not is_zstd(frame):
        raise region.error(0, "not a zstd frame (magic 28b52ffd)")
    declared = content_size(region)
    if declared is None:
        raise region.error(0, "zstd frame does not declare its decompressed size; rebuild the image with aotwheel (it always writes it)")
    limit = output_cap(len(region), cap)
    if declared > limit:
        raise region.error(0, f"zstd frame declares {declared} bytes, above the {limit}-byte cap for a {len(region)}-byte frame")
    stored = frame_size(region)
    if stored != len(region):
        raise region.error(stored, f"{len(region) - stored} bytes follow the zstd frame")
    try:
        out = zstandard.ZstdDecompressor().decompress(frame, max_output_size=declared)
    except zstandard.ZstdError as exc:
        what = "the zstd frame fails its checksum" if "checksum" in str(exc) else f"corrupt zstd data ({exc})"
        raise region.error(0, f"{what}; the file is damaged: reinstall the package") from None
    if len(out) != declared:
        raise region.error(0, f"zstd frame declares {declared} bytes but holds {len(out)}")
    return out
