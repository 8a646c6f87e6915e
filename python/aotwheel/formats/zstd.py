"""zstd-compressed device images (``--offload-compress``): peek at the head, or decompress fully
with a hard cap on the output size."""

from __future__ import annotations

from aotwheel.formats.region import Region

DEFAULT_CAP = 2 << 30  # no real device image comes close; hostile frames stop here


def content_size(region: Region) -> int | None:
    """The decompressed size the frame header declares, or ``None`` if it does not say."""
    import zstandard

    try:
        size = zstandard.frame_content_size(region.head(18))
    except zstandard.ZstdError:
        raise region.error(0, "bad zstd frame header") from None
    return None if size < 0 else size


def peek(region: Region, n: int = 64) -> bytes:
    """The first ``n`` decompressed bytes, decompressing only as far as needed."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(region.stream(), read_size=1 << 16)
    try:
        return reader.read(n)
    except zstandard.ZstdError as exc:
        raise region.error(0, f"corrupt zstd data ({exc})") from None


def decompress(region: Region, cap: int = DEFAULT_CAP) -> bytes:
    """Whole decompressed image; refuses frames that declare or produce more than ``cap`` bytes."""
    import zstandard

    declared = content_size(region)
    if declared is not None and declared > cap:
        raise region.error(0, f"zstd frame declares {declared} bytes, above the {cap}-byte cap")
    reader = zstandard.ZstdDecompressor().stream_reader(region.stream(), read_size=1 << 20)
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
