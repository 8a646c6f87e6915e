"""The optional C accelerator ``aotwheel._fastscan`` (csrc/_fastscan.c), imported on first use.

Each function returns ``None`` when the extension is not built, not importable (Python 3.10: it
needs the 3.11 limited API), disabled with ``AOTWHEEL_NO_FASTSCAN=1``, or not sure about the
input; the caller then runs its Python reader, so answers, warnings and error messages are the
same either way (tests/test_fastscan.py compares both paths).
"""

from __future__ import annotations

import contextlib
import sys

from aotwheel.variables import NO_FASTSCAN, off

TYPE_CHECKING = False  # not typing's: inspect's start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from aotwheel.formats.region import Region

ZebinFacts = tuple[int | None, int | None, int | None, str | None, bool]  # ip_u32, product, core, version, has_spirv
# name, offset in the archive, size, and: zebin facts, generic_ir's IR payload head (b"": none), or None
Member = tuple[str, int, int, ZebinFacts | bytes | None]

_module: Any = False  # the module, None (not importable), or False: not tried yet
# id(map) -> descriptor of the file it maps whole (from offset 0), while the caller holds both:
# the scanners pread headers from it, as page faults on thousands of scattered headers map (and
# munmap unmaps again) 16 pages around each one, costing more than the reads.
_FILES: dict[int, int] = {}


@contextlib.contextmanager
def mapped_file(buf: object, fd: int) -> Iterator[None]:
    """Within the block, ``buf`` is a map of the whole file open as ``fd``."""
    _FILES[id(buf)] = fd
    try:
        yield
    finally:
        del _FILES[id(buf)]


def file_of(buf: object) -> int:
    """The descriptor :func:`mapped_file` registered for ``buf``, else -1."""
    return _FILES.get(id(buf), -1)


def module() -> Any:
    """The extension, or ``None`` (missing, or switched off by ``AOTWHEEL_NO_FASTSCAN``)."""
    global _module
    if not off(NO_FASTSCAN.given()):  # read per call: tests switch it on and off
        return None
    if _module is False:
        _module = None
        if sys.version_info >= (3, 11):
            try:
                from aotwheel import _fastscan  # type: ignore[attr-defined]

                _module = _fastscan
            except ImportError:
                pass
    return _module


def fat_binary(region: Region) -> tuple[Member, ...] | None:
    """``read_ar``'s members of an ocloc fat binary, padding left out, each with
    ``read_zebin_summary``'s values when it is a zebin, the first 64 bytes of ``ir_payload`` for
    ``generic_ir``, else ``None``: walk that member in Python."""
    fs = module()
    return None if fs is None else scan_fat_binary(fs, region)


def scan_fat_binary(fs: Any, region: Region) -> tuple[Member, ...] | None:
    """:func:`fat_binary` with the extension ``fs`` already looked up by :func:`module` (once
    per walk, not once per fat binary)."""
    return fs.fat_binary(region.buf, region.start, region.size, file_of(region.buf))  # type: ignore[no-any-return]


def fatbin(region: Region, entry_cls: type, *, strict: bool, first_index: int = 0) -> tuple[list[Any], bytes, int] | None:
    """The NVIDIA fat binary containers in ``region``, numbered from ``first_index``: their
    entries as ``entry_cls`` (FatbinEntry), the containers as native u64 triples (offset,
    version, fat_size), and how many magic matches were rejected. ``strict`` as ``parse_fatbin``
    reads ``.nv_fatbin`` (``None`` where it would raise), else as ``scan_sections`` scans."""
    fs = module()
    if fs is None or region.where(0) < 0:
        return None
    return fs.fatbin(region.buf, region.start, region.size, region.where(0), strict, first_index, entry_cls)  # type: ignore[no-any-return]


def zebin_summary(region: Region) -> ZebinFacts | None:
    """``read_zebin_summary``'s values as a tuple (ip_u32, product, core, version, has_spirv)."""
    fs = module()
    return None if fs is None else fs.zebin_summary(region.buf, region.start, region.size)  # type: ignore[no-any-return]


def tgtsym(region: Region, offset: int, size: int) -> tuple[list[tuple[bytes, int]], int, int] | None:
    """The ``.tgtsym`` names at ``offset``: (names per prefix in first-seen order, names, distinct kernels)."""
    fs = module()
    if fs is None:
        return None
    region.check(offset, size, "section '.tgtsym'")
    return fs.tgtsym(region.buf, region.start + offset, size)  # type: ignore[no-any-return]
