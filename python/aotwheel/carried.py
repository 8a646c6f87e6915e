"""Device images a library keeps as plain data and loads itself (issue 39).

A runtime registers the images of a host binary's offload sections and tables; libraries also keep
whole device binaries as data (a cubin in ``.rodata`` handed to the driver's module loader, a zebin
or SPIR-V module given to the GPU runtime at run time). This module finds them: every allocated,
non-code data section of a host ELF is searched for the magic numbers the readers declare
(``ReadSpec.carried``), outside the bytes of the images the walk already listed; each match goes
to the readers that declared its magic, which keep it only when a full parse of its header
accounts for its bytes. What they keep is a report of its own, ``FileReport.carried``.

Bounded: one file hands at most ``_MAX_CANDIDATES`` matches to the readers (a hostile file full of
magic numbers costs that many header checks, then a warning); each match's image must lie inside
the gap it was found in; gaps smaller than ``_MIN_IMAGE`` bytes are not searched. The search is one
C pass per gap when the scanner is built (``aotwheel._fastscan.find_magics``), else ``find``.
"""

from __future__ import annotations

from aotwheel.errors import InspectError
from aotwheel.formats.region import Region, advise
from aotwheel.report import CARRIED, FileReport

TYPE_CHECKING = False  # not typing's: plain `aotwheel inspect` runs this
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from aotwheel.backends.protocol import ImageWalk, Reader
    from aotwheel.formats.elf import ElfView

_MIN_IMAGE = 128  # smaller than any device image with a kernel in it (an ELF header alone is 64 bytes)
_MAX_CANDIDATES = 1 << 16  # per file: magic matches handed to the readers
_READ_AHEAD = 64 << 10  # gaps this large are read in order (smaller ones cost a few faults)
_SHF_ALLOC, _SHF_EXECINSTR = 0x2, 0x4
# Allocated sections that hold no data a library hands to a loader: tables, unwind data, the
# registered images' own tables (their images are skipped by their bytes anyway).
_NOT_DATA = frozenset({".eh_frame", ".eh_frame_hdr", ".gcc_except_table", ".got", ".got.plt", ".init_array", ".fini_array",
                       ".preinit_array", ".dynamic", ".interp", ".tgtimg", ".tgtsym", ".llvm.offloading", ".comment"})
_NOT_DATA_PREFIXES = (".debug", ".note", ".gnu", ".rela", ".rel.", ".stapsdt", "__CLANG_OFFLOAD_BUNDLE__")


def data_sections(view: ElfView, skip: frozenset[str]) -> list[Any]:
    """The sections searched: allocated, not code, with bytes in the file, not a table, not one of
    ``skip`` (the readers' own sections, which they parse whole)."""
    return [s for s in view.sections
            if s.type == "SHT_PROGBITS" and s.flags & _SHF_ALLOC and not s.flags & _SHF_EXECINSTR and s.size >= _MIN_IMAGE
            and s.name not in _NOT_DATA and s.name not in skip and not s.name.startswith(_NOT_DATA_PREFIXES)]


def scan(region: Region, view: ElfView, report: FileReport, magics: Sequence[tuple[bytes, Sequence[Reader]]], skip: frozenset[str],
         make_walk: Callable[[FileReport], ImageWalk]) -> FileReport | None:
    """The carried images of the host ELF in ``region`` (``view``), whose registered images
    ``report`` lists: a report of kind ``carried``, or ``None`` when there is none. ``magics``: each
    magic and the readers that recognise images starting with it, in the order they are asked."""
    if not magics:
        return None
    sections = data_sections(view, skip)
    if not sections:
        return None
    carried = FileReport(path=report.path, native_targets=[], ir=[], images=[], kernels=None, kind=CARRIED)
    walk = make_walk(carried)
    spans = _spans(report, region.origin, {s.name for s in sections})
    needles = tuple(m for m, _ in magics)
    budget = _MAX_CANDIDATES
    for sec in sections:
        lo = region.start + sec.offset
        for g0, g1 in _gaps(spans, lo, lo + sec.size):
            if g1 - g0 < _MIN_IMAGE:
                continue
            ahead = g1 - g0 >= _READ_AHEAD
            if ahead:  # the map is MADV_RANDOM (headers are scattered): read this gap in order, not a fault per page of a cold file
                advise(region.buf, g0, g1 - g0, "MADV_SEQUENTIAL")
            hits = _hits(region.buf, g0, g1, needles, budget + 1)
            if ahead:
                advise(region.buf, g0, g1 - g0, "MADV_RANDOM")
            consumed = g0
            for at, which in hits:
                if at < consumed:
                    continue
                if budget == 0:
                    report.warnings.append(f"more than {_MAX_CANDIDATES} possible device image headers in the data sections; "
                                           f"those after offset {region.origin + at:#x} were not examined")
                    return carried if carried.images else None
                budget -= 1
                n = _ask(walk, region, at, g1, sec.name, *magics[which])
                if n:
                    consumed = at + n
    return carried if carried.images else None


def _ask(walk: ImageWalk, region: Region, at: int, end: int, section: str, magic: bytes, readers: Sequence[Reader]) -> int:
    """The size of the image a reader recognises at buffer position ``at`` (up to ``end``), 0 if
    none does. A reader that accepts a header and then finds the image damaged leaves a warning
    and nothing listed (the registered images' report is unaffected)."""
    fr = walk.report
    sub = Region(region.buf, region.label, at, end - at, region.origin)
    for reader in readers:
        marks = (len(fr.images), len(fr.native_targets), len(fr.ir))
        vendor_marks = {name: fields.mark() for name, fields in fr.vendor.items()}
        try:
            n = reader.read_carried(walk, sub, magic, section)
        except InspectError as exc:
            del fr.images[marks[0]:], fr.native_targets[marks[1]:], fr.ir[marks[2]:]
            for name in list(fr.vendor):  # a backend's fields: as they were, or none if the reader made them
                if name in vendor_marks:
                    fr.vendor[name].undo(vendor_marks[name])
                else:
                    del fr.vendor[name]
            fr.warnings.append(f"a device image in {section} at offset {sub.where(0):#x} is damaged: {exc}")
            return 0
        if n:
            if n > sub.size:
                raise RuntimeError(f"aotwheel: a reader claimed {n} bytes of a {sub.size}-byte gap; please report this with the binary")
            return n
    return 0


def _spans(report: FileReport, origin: int, names: set[str]) -> list[tuple[int, int]]:
    """The bytes of the registered images that may lie in the sections ``names`` (those of no
    known section too) as merged, sorted buffer intervals (mkl: 14k images, none in them)."""
    spans = sorted((i.offset - origin, i.offset - origin + i.size) for i in report.images if i.size and (i.section is None or i.section in names))
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            if b > merged[-1][1]:
                merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def _gaps(spans: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """[lo, hi) minus ``spans``."""
    from bisect import bisect_right

    out = []
    i = max(0, bisect_right(spans, (lo, lo)) - 1)
    pos = lo
    while i < len(spans) and spans[i][0] < hi:
        a, b = spans[i]
        if b > pos:
            if a > pos:
                out.append((pos, a))
            pos = b
        i += 1
    if pos < hi:
        out.append((pos, hi))
    return out


def _hits(buf: Any, lo: int, hi: int, needles: tuple[bytes, ...], cap: int) -> list[tuple[int, int]]:
    """(position, needle index) of every match of ``needles`` wholly inside ``buf[lo:hi]``, in
    position order, at most ``cap`` of them."""
    from aotwheel.formats import fastscan

    fs = fastscan.module()
    if fs is not None and hasattr(fs, "find_magics") and len(needles) <= 8 and all(2 <= len(n) <= 16 for n in needles):  # the C pass's limits
        return fs.find_magics(buf, lo, hi - lo, needles, cap)  # type: ignore[no-any-return]
    find = buf.find if hasattr(buf, "find") else bytes(buf).find
    out: list[tuple[int, int]] = []
    for which, needle in enumerate(needles):  # up to cap of each: the first cap of them all are among them
        pos, n = lo, 0
        while n < cap and (at := find(needle, pos, hi)) >= 0:
            out.append((at, which))
            pos, n = at + 1, n + 1
    out.sort()
    return out[:cap]
