"""A bounds-checked window onto file bytes, shared by every format parser."""

from __future__ import annotations

import io
import struct
import sys
from dataclasses import dataclass

from aotwheel.errors import InspectError

TYPE_CHECKING = False  # not typing's: every command that reads a binary imports this module
if TYPE_CHECKING:
    import mmap
    from typing import Any

    Buffer = bytes | bytearray | memoryview | mmap.mmap


_FIX = "the file is corrupt or truncated; rebuild or re-download it"


@dataclass(slots=True)
class Region:
    """``size`` bytes of ``buf`` starting at ``start`` (not to be changed once made).

    ``origin`` is the file offset of ``buf[0]`` and ``label`` names the file (and, for decompressed
    data, the image), so that every error can say exactly where the problem is.
    """

    buf: Buffer
    label: str
    start: int = 0
    size: int = -1  # -1: to the end of buf
    origin: int = 0

    def __post_init__(self) -> None:
        if self.size < 0:
            self.size = len(self.buf) - self.start
        if self.start < 0 or self.start + self.size > len(self.buf):
            raise InspectError(f"{self.label}: region at offset {self.origin + self.start:#x} runs past the end of the data; {_FIX}")

    def __len__(self) -> int:
        return self.size

    def where(self, off: int) -> int:
        """Absolute offset (in the file, or in the decompressed image) of region offset ``off``."""
        return self.origin + self.start + off

    def error(self, off: int, problem: str) -> InspectError:
        return InspectError(f"{self.label}: {problem} at offset {self.where(off):#x}; {_FIX}")

    def check(self, off: int, n: int, what: str) -> None:
        # Reject before any slice or allocation: claimed sizes are never trusted.
        if off < 0 or n < 0 or off + n > self.size:
            raise self.error(off, f"{what} ({n} bytes) runs past the end of its container ({self.size} bytes)")

    def view(self, off: int, n: int, what: str) -> memoryview:
        """Zero-copy view of ``n`` bytes at ``off``."""
        self.check(off, n, what)
        a = self.start + off
        return memoryview(self.buf)[a : a + n]

    def read(self, off: int, n: int, what: str) -> bytes:
        return bytes(self.view(off, n, what))

    def head(self, n: int) -> bytes:
        """Up to ``n`` leading bytes (short regions give fewer, never an error)."""
        return self.read(0, min(n, self.size), "header")

    def unpack(self, fmt: str, off: int, what: str) -> tuple[Any, ...]:
        n = struct.calcsize(fmt)
        self.check(off, n, what)
        return struct.unpack_from(fmt, self.buf, self.start + off)

    def sub(self, off: int, n: int, what: str, label: str | None = None) -> Region:
        """A child region (e.g. one ar member); offsets in errors stay file offsets."""
        self.check(off, n, what)
        return Region(self.buf, label or self.label, self.start + off, n, self.origin)

    def stream(self) -> io.RawIOBase:
        """A seekable file object over the region, for pyelftools (no copy for mmap/bytes)."""
        return _RegionIO(self)


class _RegionIO(io.RawIOBase):
    """Read-only file object over a :class:`Region` (pyelftools reads headers through it)."""

    def __init__(self, region: Region) -> None:
        self._r = region
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._r.size}[whence]
        self._pos = max(0, base + pos)
        return self._pos

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        n = max(0, min(len(b), self._r.size - self._pos))
        if n:
            a = self._r.start + self._pos
            b[:n] = memoryview(self._r.buf)[a : a + n]
        self._pos += n
        return n

    def read(self, n: int = -1) -> bytes:
        end = self._r.size if n is None or n < 0 else min(self._r.size, self._pos + n)
        if end <= self._pos:
            return b""
        a = self._r.start
        data = bytes(memoryview(self._r.buf)[a + self._pos : a + end])
        self._pos = end
        return data


def will_need(buf: object, at: int, size: int) -> None:
    """MADV_WILLNEED for ``size`` bytes at ``at`` of a map (advice only: never fails)."""
    mmap = sys.modules.get("mmap")  # not imported: no file was mapped (_mapped reads small ones)
    if mmap is None or not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_WILLNEED") or at < 0 or at + size > len(buf):
        return
    lo = at - at % mmap.PAGESIZE
    try:
        buf.madvise(mmap.MADV_WILLNEED, lo, at + size - lo)
    except (OSError, ValueError):
        pass


def advise(buf: object, at: int, size: int, advice: str) -> None:
    """``madvise(advice)`` (``"MADV_SEQUENTIAL"``, ``"MADV_RANDOM"``) for ``size`` bytes at ``at`` of
    a map; advice only: never fails, nothing for other buffers. A search that reads a range of a
    MADV_RANDOM map byte by byte asks for MADV_SEQUENTIAL first: on a cold file MADV_WILLNEED left
    it at one synchronous fault per page (1.6 s for onemkl-sycl-dft's 30 MB ``.rodata``, 65 ms so)."""
    mmap = sys.modules.get("mmap")  # not imported: no file was mapped
    if mmap is None:
        return
    flag = getattr(mmap, advice, None)
    if flag is None or not isinstance(buf, mmap.mmap) or at < 0 or size <= 0 or at + size > len(buf):
        return
    lo = at - at % mmap.PAGESIZE
    try:
        buf.madvise(flag, lo, at + size - lo)
    except (OSError, ValueError):
        pass
