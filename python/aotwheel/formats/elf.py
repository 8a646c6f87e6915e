"""ELF access for device and host binaries, and the host side of SYCL offloading: ``.tgtimg``
image tables, the relocations that fill them, image descriptors, ``.tgtsym`` kernel names.

Headers are read with ``struct`` straight from a :class:`Region` (an mmap in practice), so only the
headers, tables and small sections are touched -- never the images themselves.
"""

from __future__ import annotations

import struct
import sys
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import compress

from aotwheel.errors import InspectError
from aotwheel.formats.region import Region

TYPE_CHECKING = False  # not typing's: inspect's start-up
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

R_X86_64_RELATIVE = 8
_BUNDLE_PREFIX = "__CLANG_OFFLOAD_BUNDLE__"
_TGTIMG_ENTRY = 16  # {u64 image_vaddr, u64 image_size}
_ENTRY = struct.Struct("<QQ")
# sycl_device_binary_struct: u16 Version, u8 Kind (4 = SYCL), u8 Format, pad, DeviceTargetSpec,
# CompileOptions, LinkOptions, [ManifestStart, ManifestEnd: version <= 2 only], BinaryStart, ...
# Version 3 (dpctl 0.22.1, measured) has no manifest pointers, so BinaryStart sits at +32.
_DESC_TARGET_SPEC = 8
_DESC_COMPILE_OPTIONS = 16
_DESC_LINK_OPTIONS = 24
_MAX_OPTIONS = 4096  # option strings longer than this are cut (real ones are ~100 bytes)
# Callers read every descriptor (and so every image's build options) of tables up to this many
# entries even in the default mode; finding descriptors scans every relocation, ~0.1 s in a
# 14k-image library.
DESCRIPTORS_ALWAYS_UP_TO = 256
_DESC_BINARY_START = {3: 32, 2: 48, 1: 48}
_DESC_KIND_SYCL = 4
_DESC_FORMATS = {0: "none", 1: "native", 2: "spirv", 3: "llvmbc", 4: "zstd"}
_MAX_SMALL_SECTION = 256 << 20  # .tgtsym / relocation tables larger than this are not read


@dataclass
class Section:
    name: str
    type: int | str
    addr: int
    offset: int
    size: int
    flags: int = 0  # sh_flags (SHF_ALLOC 0x2, SHF_EXECINSTR 0x4, ...)


@dataclass(eq=False, repr=False)  # never compared or printed: a view for the readers, one per ELF
class ElfView:
    """Headers of one ELF inside a region: its sections and loadable segments."""

    region: Region
    e_type: int
    e_machine: int
    sections: list[Section]
    segments: list[tuple[int, int, int]]  # (p_vaddr, p_offset, p_filesz) of PT_LOAD
    dynamic: dict[int, int] = field(default_factory=dict)  # first value of each .dynamic tag
    # Lookups built on first use (no part of the view's value).
    _by_name: dict[str, Section] | None = field(default=None, init=False, repr=False, compare=False)
    _by_offset: tuple[list[int], list[Section]] | None = field(default=None, init=False, repr=False, compare=False)
    _last_at: Section | None = field(default=None, init=False, repr=False, compare=False)

    def section(self, name: str) -> Section | None:
        if self._by_name is None:
            self._by_name = {}
            for s in self.sections:
                self._by_name.setdefault(s.name, s)  # the first of equal names, as a scan would
        return self._by_name.get(name)

    def data(self, sec: Section, what: str | None = None) -> memoryview:
        return self.region.view(sec.offset, sec.size, what or f"section {sec.name!r}")

    def vaddr_to_offset(self, vaddr: int, size: int) -> int | None:
        """File offset of ``[vaddr, vaddr+size)`` via PT_LOAD, else via allocated sections."""
        for p_vaddr, p_offset, p_filesz in self.segments:
            if p_vaddr <= vaddr and vaddr + size <= p_vaddr + p_filesz:
                return p_offset + (vaddr - p_vaddr)
        for s in self.sections:
            if s.addr and s.type != "SHT_NOBITS" and s.addr <= vaddr and vaddr + size <= s.addr + s.size:
                return s.offset + (vaddr - s.addr)
        return None

    def load_segment(self, vaddr: int, size: int) -> tuple[int, int, int] | None:
        """The first PT_LOAD holding ``[vaddr, vaddr+size)``, as ``vaddr_to_offset`` picks it."""
        return next((seg for seg in self.segments if seg[0] <= vaddr and vaddr + size <= seg[0] + seg[2]), None)

    def section_at(self, offset: int) -> Section | None:
        """The first section (in header order) whose file bytes hold ``offset``."""
        last = self._last_at
        if last is not None and last.offset <= offset < last.offset + last.size:
            return last  # sections do not overlap (else _last_at stays None): it is the only one
        if self._by_offset is None:
            self._by_offset = self._offset_index()
        starts, secs = self._by_offset
        if not starts:  # overlapping sections: only a scan in header order gives the same answer
            return next((s for s in secs if s.offset <= offset < s.offset + s.size), None)
        i = bisect_right(starts, offset) - 1
        if i >= 0 and offset < secs[i].offset + secs[i].size:
            self._last_at = secs[i]
            return secs[i]
        return None

    def _offset_index(self) -> tuple[list[int], list[Section]]:
        # Called once per image in big binaries (14k times): bisect instead of a scan.
        secs = [s for s in self.sections if s.type != "SHT_NOBITS" and s.size]
        ordered = sorted(secs, key=lambda s: s.offset)
        if any(a.offset + a.size > b.offset for a, b in zip(ordered, ordered[1:])):
            return [], secs
        return [s.offset for s in ordered], ordered


# sh_type names as pyelftools spells them (callers compare with "SHT_NOBITS", "SHT_RELA"); other
# values stay ints, e.g. zebin's SHT_INTELGT_SPIRV 0xFF000009.
_SH_TYPES = {
    0: "SHT_NULL", 1: "SHT_PROGBITS", 2: "SHT_SYMTAB", 3: "SHT_STRTAB", 4: "SHT_RELA", 5: "SHT_HASH",
    6: "SHT_DYNAMIC", 7: "SHT_NOTE", 8: "SHT_NOBITS", 9: "SHT_REL", 10: "SHT_SHLIB", 11: "SHT_DYNSYM",
    14: "SHT_INIT_ARRAY", 15: "SHT_FINI_ARRAY", 16: "SHT_PREINIT_ARRAY", 17: "SHT_GROUP",
    18: "SHT_SYMTAB_SHNDX", 19: "SHT_RELR", 20: "SHT_NUM", 0x60000000: "SHT_LOOS",
    0x6FFFFFF3: "SHT_SUNW_LDYNSYM", 0x6FFFFFF5: "SHT_GNU_ATTRIBUTES", 0x6FFFFFF6: "SHT_GNU_HASH",
    0x6FFFFFF7: "SHT_GNU_LIBLIST", 0x6FFFFFFC: "SHT_SUNW_syminfo", 0x6FFFFFFD: "SHT_GNU_verdef",
    0x6FFFFFFE: "SHT_GNU_verneed", 0x6FFFFFFF: "SHT_GNU_versym", 0x80000000: "SHT_LOUSER",
    0xFFFFFFFF: "SHT_HIUSER",
}
_PT_LOAD = 1
_SHN_XINDEX = 0xFFFF
_PN_XNUM = 0xFFFF
_DT_RELACOUNT = 0x6FFFFFF9


def open_elf(region: Region) -> ElfView:
    """Read the ELF header, section headers and program headers (bounds-checked first).

    Plain ``struct`` reads from the region: pyelftools' section objects parse whole tables (GNU
    hash, symbols) that nothing here needs, which cost ~0.2 s on a 650 MB SYCL library.
    """
    ident = region.head(16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise region.error(0, "not an ELF file (bad ELF identification)")
    is64, endian = ident[4] == 2, "<" if ident[5] == 1 else ">"
    fmt = endian + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH")
    (e_type, e_machine, _v, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum, shentsize, shnum, shstrndx) = region.unpack(fmt, 16, "ELF header")
    # Entries smaller than the struct make "the table fits" vacuous: with e_phoff 0, e_phentsize 0
    # and 65535 entries one header would be parsed 65535 times (seconds for a 162-byte file).
    min_sh, min_ph = (64, 56) if is64 else (40, 32)
    if shnum and shentsize < min_sh:
        raise region.error(58, f"ELF section header entries of {shentsize} bytes (need {min_sh})")
    if phnum and phentsize < min_ph:
        raise region.error(54, f"ELF program header entries of {phentsize} bytes (need {min_ph})")
    if shnum:
        region.check(shoff, shnum * shentsize, "ELF section header table")
    if phnum:
        region.check(phoff, phnum * phentsize, "ELF program header table")
    shfmt = endian + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")  # name type flags addr offset size link info ...

    def bad(problem: str) -> InspectError:
        return region.error(shoff, f"unreadable ELF headers ({problem})")

    def shdr(n: int) -> tuple[int, ...]:
        off = shoff + n * shentsize
        if shentsize < min_sh:  # only reachable with e_shnum 0 (extended numbering)
            raise bad(f"section header entries of {shentsize} bytes, need {min_sh}")
        if off + min_sh > region.size:
            raise bad(f"section header {n} at {off:#x} is past the end of the file")
        return struct.unpack_from(shfmt, region.buf, region.start + off)

    # gABI extended numbering: counts >= 0xff00 live in section header 0.
    count = 0 if shoff == 0 else shnum or shdr(0)[5]
    if count > shnum:
        region.check(shoff, count * shentsize, "ELF section header table")
    sections = []
    if count:
        strtab = shdr(shdr(0)[6] if shstrndx == _SHN_XINDEX else shstrndx)[4]
        buf, base, end = region.buf, region.start, region.start + region.size
        if isinstance(buf, memoryview):  # the only Buffer without .find
            buf = bytes(buf)
        for i in range(count):
            sh_name, sh_type, flags, addr, offset, size = struct.unpack_from(shfmt, buf, base + shoff + i * shentsize)[:6]
            name = ""
            a = base + strtab + sh_name
            if a < end:
                z = buf.find(b"\0", a, end)
                if z > a:
                    name = bytes(buf[a:z]).decode("utf-8", "replace")
            sec_type = _SH_TYPES.get(sh_type, sh_type)
            if sec_type != "SHT_NOBITS" and size:
                region.check(offset, size, f"section {name!r}")
            sections.append(Section(name, sec_type, addr, offset, size, flags))
    nseg = phnum if phnum < _PN_XNUM else shdr(0)[7]
    if nseg > phnum:
        region.check(phoff, nseg * phentsize, "ELF program header table")
    segments = []
    for i in range(nseg):
        if is64:
            p_type, _pf, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from(endian + "IIQQQQ", region.buf, region.start + phoff + i * phentsize)
        else:
            p_type, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from(endian + "IIIII", region.buf, region.start + phoff + i * phentsize)
        if p_type == _PT_LOAD:
            segments.append((p_vaddr, p_offset, p_filesz))
    for _, p_offset, p_filesz in segments:
        region.check(p_offset, p_filesz, "PT_LOAD segment")
    return ElfView(region, e_type, e_machine, sections, segments, _dynamic_tags(region, sections, is64, endian))


def standalone_size(region: Region, machines: tuple[int, ...]) -> int | None:
    """The bytes of the ELF file that starts at ``region``'s first byte, when its header is whole
    and consistent: identification (class, data, version 1), ``e_machine`` one of ``machines``, an
    ``e_type`` other than ET_NONE, a section header table of well-formed entries
    (its string table among them, entry 0 null) and every section's bytes inside ``region``. The
    size is the furthest byte the header, its tables and sections account for; ``None`` for a
    chance match of the magic (bytes that merely start like an ELF) or an ELF of another machine.
    Reads at most the header and the section table (``e_shnum`` below 0xff00: no extended numbering)."""
    size = region.size
    if size < 52:
        return None
    ident = region.read(0, 20, "ELF header")
    if ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2) or ident[6] != 1:
        return None
    is64, endian = ident[4] == 2, "<" if ident[5] == 1 else ">"
    fmt = endian + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH")
    if size < struct.calcsize(fmt) + 16:
        return None
    (e_type, e_machine, _version, _entry, phoff, shoff, _flags, ehsize, phentsize, phnum, shentsize, shnum, shstrndx) = \
        struct.unpack_from(fmt, region.buf, region.start + 16)
    min_sh, min_ph, min_eh = (64, 56, 64) if is64 else (40, 32, 52)
    if e_machine not in machines or e_type == 0 or ehsize != min_eh:  # (cubins put their CUDA version in e_version)
        return None
    if not 0 < shnum < 0xFF00 or shentsize != min_sh or shstrndx >= shnum or shoff < ehsize or shoff + shnum * shentsize > size:
        return None
    end = shoff + shnum * shentsize
    if phnum:
        if phentsize != min_ph or phnum >= 0xFFFF or phoff < ehsize or phoff + phnum * phentsize > size:
            return None
        end = max(end, phoff + phnum * phentsize)
    shfmt = endian + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    base = region.start + shoff
    for i in range(shnum):
        _name, sh_type, _fl, _addr, offset, sec_size = struct.unpack_from(shfmt, region.buf, base + i * shentsize)[:6]
        if i == 0:
            if sh_type != 0:
                return None
            continue
        if i == shstrndx and sh_type != 3:  # the section names: an SHT_STRTAB
            return None
        if sh_type == 8 or sh_type == 0 or not sec_size:  # SHT_NOBITS, SHT_NULL: no bytes in the file
            continue
        if offset < ehsize or offset + sec_size > size:
            return None
        end = max(end, offset + sec_size)
    return end


def _dynamic_tags(region: Region, sections: list[Section], is64: bool, endian: str) -> dict[int, int]:
    """``d_tag -> d_val`` (first occurrence) from ``.dynamic``; small, read eagerly."""
    sec = next((s for s in sections if s.type == "SHT_DYNAMIC"), None)
    entry = 16 if is64 else 8
    if sec is None or not sec.size or sec.size > _MAX_SMALL_SECTION:
        return {}
    tags: dict[int, int] = {}
    for tag, val in struct.iter_unpack(endian + ("qQ" if is64 else "iI"), bytes(region.view(sec.offset, sec.size - sec.size % entry, "section '.dynamic'"))):
        if tag == 0:
            break
        tags.setdefault(tag, val)
    return tags


@dataclass(slots=True)
class HostImage:
    """One ``.tgtimg`` entry resolved to file bytes (not frozen: a frozen init costs 4x, and large
    libraries list 14k of them)."""

    offset: int
    size: int
    vaddr: int
    section: str | None
    triple: str | None  # from the descriptor's DeviceTargetSpec, else the bundle section name
    desc_format: str | None  # the descriptor's Format field, when the descriptor was found
    listed_size: int | None = None  # the table's size when it cannot be the stored size (see _bounded_image)
    compile_options: str | None = None  # the descriptor's CompileOptions, when found and not empty
    link_options: str | None = None  # the descriptor's LinkOptions, when found and not empty
    entry: int = -1  # its position in the .tgtimg table


class TableScan:
    """The ``.tgtimg`` table bound to the C scanner, for images ``read_host(leaf_scan=True)`` makes
    no HostImage for: ``fastscan.table_leaves`` makes their Images straight from the table."""

    def __init__(self, fs: Any, shared: tuple[Any, ...], count: int) -> None:
        self._fs, self._shared, self.count = fs, shared, count

    def leaves(self, lo: int, start: int, base: int, index: int, image_cls: type, fd: int
               ) -> tuple[list[Any], int, list[str], HostImage | None]:
        """``(images, next, kinds, host)`` from entry ``lo``: see ``table_leaves`` in csrc/_fastscan.c."""
        buf, table, count, _lo, *rest = self._shared
        return self._fs.table_leaves(buf, table, count, lo, *rest, start, base, index, image_cls, fd, HostImage)  # type: ignore[no-any-return]


@dataclass(eq=False, repr=False)  # never compared or printed: read_host's answer to the walk
class HostOffload:
    # In table order; with read_host(leaf_scan=True) only the entries ``scan`` leaves to Python.
    images: list[HostImage] = field(default_factory=list)
    scan: TableScan | None = None
    kernels_by_triple: dict[str, int] = field(default_factory=dict)
    kernels: int | None = None
    offloading_sections: list[Section] = field(default_factory=list)  # .llvm.offloading (objects)
    # The raw ``.tgtsym`` section and its distinct name prefixes, for :func:`ir_only_kernels`
    # (split and compared only when a native image exists: mkl's 26k names carry no native code).
    tgtsym_raw: bytes = b""
    tgtsym_prefixes: list[bytes] = field(default_factory=list)

    def ir_only_kernels(self, ir_triple: str, native_triples: tuple[str, ...]) -> dict[str, int]:
        """For each of ``native_triples`` present: how many kernels ``ir_triple`` has that it lacks
        (the triples as ``kernels_by_triple`` names them; a backend's reader says which)."""
        if len(self.kernels_by_triple) <= 1:  # only then can a kernel lack a native image
            return {}
        return _ir_only_kernels(_tgtsym_names(self.tgtsym_raw), self.tgtsym_prefixes, ir_triple, native_triples)


def read_host(view: ElfView, *, all_descriptors: bool = True, descriptors_up_to: int = 0, leaf_scan: bool = False) -> HostOffload:
    """Everything the host side records about embedded device images.

    With ``all_descriptors=False`` an image inside a ``__CLANG_OFFLOAD_BUNDLE__<triple>`` section
    takes its triple from that name and its descriptor is not looked for (``desc_format`` None):
    finding descriptors means scanning every relocation, ~0.1 s on a 650 MB library. Tables of at
    most ``descriptors_up_to`` entries get all their descriptors read all the same.

    ``leaf_scan=True`` (with ``all_descriptors`` off and the C scanner present): no HostImage is
    made for such an image in a bundle section; ``images`` holds the others, each with its
    ``entry``, and ``scan`` walks the whole table (14k images in mkl: one object each, not two).
    """
    out = HostOffload()
    tgtimg = view.section(".tgtimg")
    if tgtimg is not None and tgtimg.type != "SHT_NOBITS":
        if descriptors_up_to and tgtimg.size // _TGTIMG_ENTRY <= descriptors_up_to:
            all_descriptors = True
        out.images = _tgtimg_images(view, tgtimg, all_descriptors, defer=leaf_scan and not all_descriptors, out=out)
    tgtsym = view.section(".tgtsym")
    if tgtsym is not None and 0 < tgtsym.size <= _MAX_SMALL_SECTION:
        from aotwheel.formats import fastscan

        counted = fastscan.tgtsym(view.region, tgtsym.offset, tgtsym.size)  # C: ~1 ms for mkl's 26k names, not ~17
        if counted is None:
            out.tgtsym_raw = bytes(view.data(tgtsym))
            out.kernels_by_triple, out.kernels, out.tgtsym_prefixes = _count_tgtsym(_tgtsym_names(out.tgtsym_raw))
        else:
            per_prefix, _names, out.kernels = counted
            out.kernels_by_triple, out.tgtsym_prefixes = _per_triple(per_prefix), [prefix for prefix, _n in per_prefix]
            if len(out.kernels_by_triple) > 1:  # ir_only_kernels may need the names
                out.tgtsym_raw = bytes(view.data(tgtsym))
    out.offloading_sections = [s for s in view.sections if s.name == ".llvm.offloading" and s.size]
    return out


def _tgtsym_names(raw: bytes) -> list[bytes]:
    return [e for e in raw.split(b"\0") if e]


def _count_tgtsym(entries: list[bytes]) -> tuple[dict[str, int], int, list[bytes]]:
    """``sycl-<triple>.<kernel>`` names -> kernels per triple, distinct kernels overall, and the
    distinct raw prefixes (``b"sycl-spir64-unknown-unknown"``). ``fastscan.tgtsym`` counts the same in C."""
    # C-speed passes over the split names (26k in mkl); no list of partition tuples is kept, as
    # 26k live tuples would cost more in garbage-collector passes than partitioning twice.
    prefixes: dict[bytes, int] = {}
    for prefix in [e.partition(b".")[0] for e in entries]:
        prefixes[prefix] = prefixes.get(prefix, 0) + 1
    distinct = len({e.partition(b".")[2] or (e if b"." not in e else b"") for e in entries})
    return _per_triple(list(prefixes.items())), distinct, list(prefixes)


def _per_triple(per_prefix: list[tuple[bytes, int]]) -> dict[str, int]:
    """Names per triple from names per raw prefix (first-seen order; each prefix decoded once)."""
    per: dict[str, int] = {}
    for prefix, n in per_prefix:
        triple = prefix.decode("utf-8", "replace")
        key = triple[5:] if triple.startswith("sycl-") else triple
        per[key] = per.get(key, 0) + n
    return per


def _ir_only_kernels(entries: list[bytes], prefixes: list[bytes], ir_triple: str, native_triples: tuple[str, ...]) -> dict[str, int]:
    """``{native triple: kernels named under ir_triple but not under it}`` from ``.tgtsym`` names
    (a vllm-xpu-kernels build had 151 kernels only as native images and 5 only as IR).
    One C-speed comprehension per relevant prefix instead of a decode per name (26k in mkl)."""
    triples = {prefix: prefix.decode("utf-8", "replace").removeprefix("sycl-").removesuffix("-unknown-unknown") for prefix in prefixes}
    if ir_triple not in triples.values() or not set(native_triples) & set(triples.values()):
        return {}  # no IR, or no native image that could lack a kernel
    names: dict[str, set[bytes]] = {}
    for prefix, triple in triples.items():
        if triple != ir_triple and triple not in native_triples:
            continue
        head = prefix + b"."
        cut = len(head)
        names.setdefault(triple, set()).update(e[cut:] for e in entries if e.startswith(head))
    ir = names.get(ir_triple, set())
    return {t: len(ir - names[t]) for t in native_triples if t in names and ir}


def _bundle_triple(sec: Section | None) -> str | None:
    if sec is None or not sec.name.startswith(_BUNDLE_PREFIX):
        return None
    return sec.name[len(_BUNDLE_PREFIX) :].removeprefix("sycl-")


def _tgtimg_images(view: ElfView, tgtimg: Section, all_descriptors: bool = True, defer: bool = False,
                   out: HostOffload | None = None) -> list[HostImage]:
    region = view.region
    if tgtimg.size % _TGTIMG_ENTRY:
        raise region.error(tgtimg.offset, f".tgtimg size {tgtimg.size} is not a multiple of {_TGTIMG_ENTRY}")
    count = tgtimg.size // _TGTIMG_ENTRY
    # In a PIC .so the loader writes each slot from its RELATIVE relocation's addend, whatever the
    # section holds (GNU ld stores the address too; some real wheels store 0): the addend wins.
    relocs = _slot_relocs(view, tgtimg.addr, count)
    if relocs is None:
        slots = {tgtimg.addr + i * _TGTIMG_ENTRY for i in range(count)}
        relocs = _relative_relocs(view, want_offsets=slots, want_addends=set())
    fast = _fast_tgtimg(view, tgtimg, count, relocs, defer, out)
    # One loop, no per-image lookups beyond the segment and section (14k images in mkl): bundle
    # section names give triples; only the other images need their descriptors.
    images: list[HostImage] = []
    pending: list[int] = []  # positions in images still waiting for their descriptor
    triples: dict[str | None, str | None] = {}  # section name -> its bundle triple
    slot, limit = tgtimg.addr, region.size
    ordered = sorted(view.segments)
    disjoint = all(a[0] + a[2] < b[0] for a, b in zip(ordered, ordered[1:]))  # strict: a 0-byte image at a shared edge fits both
    seg_lo = seg_hi = seg_delta = 0  # cached PT_LOAD: [seg_lo, seg_hi) maps to vaddr + seg_delta
    # With the C loop, this one takes only the entries it stops at (no address, no segment, past the end).
    # iter_unpack over bytes, not over a memoryview of the map: an InspectError raised in this loop
    # keeps the frame (and the iterator) in its traceback, and CPython 3.11's collector can clear
    # the iterator's memoryview first when that traceback sits in a cycle; freeing the iterator
    # then crashes (found by tests/test_fuzz_parsers.py; the table is 16 bytes an entry).
    entries = enumerate(struct.iter_unpack("<QQ", bytes(view.data(tgtimg)))) if fast is None else _left_by(fast, view.data(tgtimg), count, images)
    for i, (vaddr, size) in entries:
        vaddr = relocs.get(slot + i * _TGTIMG_ENTRY, vaddr)
        if vaddr == 0:
            if size == 0:
                continue  # empty slot
            raise region.error(tgtimg.offset + i * _TGTIMG_ENTRY, ".tgtimg entry has no address and no relocation supplies one")
        if seg_lo <= vaddr and vaddr + size <= seg_hi:
            off = vaddr + seg_delta  # the segment of the previous image (segments do not overlap)
        else:
            off = view.vaddr_to_offset(vaddr, size)
            hit = view.load_segment(vaddr, size) if disjoint else None
            if hit is not None:
                seg_lo, seg_hi, seg_delta = hit[0], hit[0] + hit[2], hit[1] - hit[0]
        listed = None
        if off is None:
            # The listed size may be the image's size *before* compression (bitsandbytes 0.50.2's
            # icpx builds): read the image within the section or segment that holds its start.
            off, stored = _bounded_image(view, vaddr, size, tgtimg.offset + i * _TGTIMG_ENTRY)
            listed, size = size, stored
        if off < 0 or off + size > limit:
            region.check(off, size, f"image {i} of .tgtimg")
        sec = view.section_at(off)
        name = sec.name if sec is not None else None
        if name not in triples:
            triples[name] = _bundle_triple(sec)
        triple = triples[name]
        if all_descriptors or triple is None:
            pending.append(len(images))
        images.append(HostImage(off, size, vaddr, name, triple, None, listed, entry=i))
    if fast is not None:  # the C loop leaves pending to here
        pending = [k for k, img in enumerate(images) if all_descriptors or img.triple is None]
    if pending:
        descs = _descriptors(view, {images[k].vaddr for k in pending}, skip=(tgtimg.addr, tgtimg.addr + tgtimg.size))
        for k in pending:
            img = images[k]
            desc = descs.get(img.vaddr)
            if desc is not None:  # the descriptor's target wins over the section name
                triple, img.desc_format, img.compile_options, img.link_options = desc
                img.triple = triple if triple is not None else img.triple
    return images


def _left_by(fast: Callable[[int], tuple[list[HostImage], int]], table: memoryview, count: int, images: list[HostImage]
             ) -> Iterator[tuple[int, tuple[int, int]]]:
    """``enumerate`` over the table's entries that ``fast`` (the C loop) stops at; the images it
    makes before each are appended to ``images`` first, so the order stays the table's."""
    i = 0
    while i < count:
        made, i = fast(i)
        images += made
        if i < count:
            yield i, _ENTRY.unpack_from(table, i * _TGTIMG_ENTRY)
            i += 1


def _fast_tgtimg(view: ElfView, tgtimg: Section, count: int, relocs: dict[int, int] | SlotAddends, defer: bool = False,
                 out: HostOffload | None = None) -> Callable[[int], tuple[list[HostImage], int]] | None:
    """``fastscan.tgtimg`` bound to this table (None: no extension, or overlapping sections, whose
    lookup only the scan in header order answers). ``defer``: it makes no HostImage for an entry
    in a section with a triple, and ``out.scan`` is the table's :class:`TableScan`."""
    from aotwheel.formats import fastscan

    fs = fastscan.module()
    if fs is None or not count:
        return None
    if view._by_offset is None:
        view._by_offset = view._offset_index()
    starts, secs = view._by_offset
    if secs and not starts:
        return None
    region = view.region
    segments = [v for seg in view.segments for v in seg]
    ends, names = [s.offset + s.size for s in secs], [s.name for s in secs]
    triples = [_bundle_triple(s) for s in secs]
    # The relocations as one record per slot (C reads them by index, not by a dict lookup per entry and pass).
    addends = relocs.records if isinstance(relocs, SlotAddends) else fs.slot_addends(relocs, tgtimg.addr, count)
    shared = (region.buf, region.start + tgtimg.offset, count, 0, addends, tgtimg.addr, segments, starts, ends, names, triples, region.size)
    if defer and out is not None:
        out.scan = TableScan(fs, shared, count)

    def run(lo: int) -> tuple[list[HostImage], int]:
        buf, table, n, _lo, *rest = shared
        return fs.tgtimg(buf, table, n, lo, *rest, HostImage, defer)  # type: ignore[no-any-return]

    return run


# Virtual addresses a loaded library can occupy (x86-64 and AArch64 with 4-level paging: 48 bits).
_ADDRESS_SPACE = 1 << 48


def _bounded_image(view: ElfView, vaddr: int, listed: int, entry_offset: int) -> tuple[int, int]:
    """``(file offset, stored size)`` of an image whose listed size runs past every loaded segment.

    The bytes from the image's start to the end of the section (else the PT_LOAD segment) holding
    that start are all it can occupy. A zstd frame is self-delimiting: it is read by its frame
    header and block headers and must end inside that bound (its declared content size is then
    what the table listed). Other images are cut at the bound. Only when the start lies outside
    every segment, or the frame runs past its bound, is no reading consistent: then the file is
    corrupt.
    """
    region = view.region
    if vaddr + listed > _ADDRESS_SPACE:
        # No library maps an image that ends there: the entry itself is damaged (a bit flip, a
        # table overwritten), not a size before compression (bitsandbytes' case above).
        raise region.error(entry_offset, f".tgtimg entry is damaged: it lists {listed} bytes at {vaddr:#x}, past the end of any "
                           "64-bit process's address space (2^48 bytes)")
    start = view.vaddr_to_offset(vaddr, 1)
    if start is None:
        raise region.error(entry_offset, f".tgtimg entry points at {vaddr:#x}+{listed} outside every loaded segment")
    sec = view.section_at(start)
    if sec is not None:
        end = sec.offset + sec.size
    else:
        seg = view.load_segment(vaddr, 1)
        end = seg[1] + seg[2] if seg is not None else region.size
    end = min(end, region.size, start + listed)
    from aotwheel.formats.sniff import ZSTD_MAGIC

    window = region.sub(start, end - start, f".tgtimg image at {start:#x}")
    if window.head(4) == ZSTD_MAGIC:
        from aotwheel.formats import zstd

        try:
            return start, zstd.frame_size(window)
        except InspectError:
            raise region.error(entry_offset, f".tgtimg entry lists {listed} bytes at {vaddr:#x}, past the end of "
                               f"{'section ' + repr(sec.name) if sec else 'its segment'}, and the zstd frame there does not end inside it") from None
    return start, end - start


def _rela_tables(view: ElfView) -> list[Section]:
    return [s for s in view.sections if s.type == "SHT_RELA" and not s.size % 24 and s.size <= _MAX_SMALL_SECTION]


class SlotAddends:
    """The ``.tgtimg`` slots' RELATIVE addends as 16-byte records ``{u64 addend, u64 state}`` per
    slot (``fastscan.relative_records`` fills them; the C table walk reads them by index), looked
    up by slot address like the dict the Python loop makes (state 0: no relocation). A read-only
    mapping (not a ``collections.abc.Mapping`` subclass: importing collections costs start-up)."""

    def __init__(self, records: bytearray, first: int, count: int) -> None:
        self.records, self._first, self._count = records, first, count

    def __getitem__(self, addr: int) -> int:
        k, rest = divmod(addr - self._first, _TGTIMG_ENTRY)
        if rest or not 0 <= k < self._count:
            raise KeyError(addr)
        addend, state = _ENTRY.unpack_from(self.records, 16 * k)
        if not state:
            raise KeyError(addr)
        return addend - (1 << 64) if addend >> 63 else addend  # Elf64_Sxword

    def __iter__(self) -> Iterator[int]:
        return (self._first + _TGTIMG_ENTRY * k for k in range(self._count) if self.records[16 * k + 8 : 16 * k + 16] != bytes(8))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def keys(self) -> Iterator[int]:  # what dict(addends) asks of a mapping
        return iter(self)

    def items(self) -> Iterator[tuple[int, int]]:
        return ((addr, self[addr]) for addr in self)

    def __eq__(self, other: object) -> bool:  # as a Mapping's: equal to any mapping of the same items
        if not isinstance(other, (dict, SlotAddends)):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, addr: object) -> bool:
        return self.get(addr) is not None  # type: ignore[arg-type]

    def get(self, addr: int, default: Any = None) -> Any:  # int, or default (dict.get's typing)
        try:
            return self[addr]
        except KeyError:
            return default


def _slot_relocs(view: ElfView, first: int, count: int) -> dict[int, int] | SlotAddends | None:
    """RELATIVE addends for the ``count`` .tgtimg slots at ``first``, read by bisecting the sorted
    r_offsets (ld -z combreloc puts RELATIVE relocations first, sorted; DT_RELACOUNT says how many)
    instead of unpacking ~566k relocations. None when a slot is not found this way: then the caller
    scans every table, as slots without relocations (non-PIC, unsorted tables) need. With the C
    scanner the addends come as :class:`SlotAddends` records (no dict of 14k ints in mkl)."""
    if sys.byteorder != "little" or not count:
        return None
    end = first + count * _TGTIMG_ENTRY
    found: dict[int, int] = {}
    relcount = view.dynamic.get(_DT_RELACOUNT, 0)
    from aotwheel.formats import fastscan

    fs = fastscan.module() if end < 1 << 64 else None
    records, filled = bytearray(16 * count if fs is not None else 0), 0  # the C scanner's (the Python loop fills `found`)

    for sec in _rela_tables(view):
        with view.data(sec) as mv, mv.cast("Q") as table:
            n = len(table) // 3
            if sec.name == ".rela.dyn" and 0 < relcount <= n:
                n = relcount
            with table[0 : 3 * n : 3] as offsets:
                lo, hi = bisect_left(offsets, first), bisect_left(offsets, end)
            if fs is not None:  # the same loop in C (14k rows in mkl)
                filled += fs.relative_records(view.region.buf, view.region.start + sec.offset, lo, hi, first, end, _TGTIMG_ENTRY, records)
                continue
            for r_offset, r_info, addend in struct.iter_unpack("<QQq", bytes(mv[24 * lo : 24 * hi])):  # bytes: see _tgtimg_images
                if first <= r_offset < end and not (r_offset - first) % _TGTIMG_ENTRY and (r_info & 0xFFFFFFFF) == R_X86_64_RELATIVE:
                    found[r_offset] = addend
    if fs is not None:
        return SlotAddends(records, first, count) if filled == count else None
    return found if len(found) == count else None


def _relative_relocs(view: ElfView, *, want_offsets: set[int], want_addends: set[int], by_addend: dict[int, list[int]] | None = None) -> dict[int, int]:
    """R_X86_64_RELATIVE relocations over the raw tables: ``r_offset -> addend`` (the last one wins)
    for wanted offsets; for wanted addends, every ``r_offset`` is appended to ``by_addend[addend]``
    in table order."""
    found: dict[int, int] = {}
    if not want_offsets and not want_addends:
        return found
    for sec in _rela_tables(view):
        if sys.byteorder != "little":
            for r_offset, r_info, addend in struct.iter_unpack("<QQq", bytes(view.data(sec))):  # bytes: see _tgtimg_images
                if (r_info & 0xFFFFFFFF) != R_X86_64_RELATIVE:
                    continue
                if r_offset in want_offsets:
                    found[r_offset] = addend
                if addend in want_addends and by_addend is not None:
                    by_addend.setdefault(addend, []).append(r_offset)
            continue
        # Select candidate rows at C speed (compress/map over lists), then check them in Python.
        with view.data(sec) as mv, mv.cast("Q") as table:
            if want_offsets:
                with table[0::3] as col:
                    rows = list(compress(range(len(col)), map(want_offsets.__contains__, col.tolist())))
                for k in rows:
                    if (table[3 * k + 1] & 0xFFFFFFFF) == R_X86_64_RELATIVE:
                        addend = table[3 * k + 2]
                        found[table[3 * k]] = addend - (1 << 64) if addend >> 63 else addend
            if want_addends and by_addend is not None:
                with table[2::3] as col:
                    rows = list(compress(range(len(col)), map(want_addends.__contains__, col.tolist())))
                for k in rows:  # wanted addends are addresses (non-negative), so unsigned compares equal
                    if (table[3 * k + 1] & 0xFFFFFFFF) == R_X86_64_RELATIVE:
                        by_addend.setdefault(table[3 * k + 2], []).append(table[3 * k])
    return found


def _pointer_at(view: ElfView, vaddr: int, relocs: dict[int, int]) -> int:
    off = view.vaddr_to_offset(vaddr, 8)
    if off is None:
        return 0
    (value,) = view.region.unpack("<Q", off, "descriptor pointer")
    return int(relocs.get(vaddr, value))


# An image descriptor's (DeviceTargetSpec, Format, CompileOptions, LinkOptions), as read_host uses them.
_Descriptor = tuple[str | None, str | None, str | None, str | None]


def _descriptors(view: ElfView, image_vaddrs: set[int], skip: tuple[int, int]) -> dict[int, _Descriptor]:
    """Find each image's ``sycl_device_binary_struct`` (the one whose BinaryStart points at it) and
    read DeviceTargetSpec, Format and the compile/link options the runtime passes to the build.
    Best effort: images without a valid descriptor are omitted."""
    if not image_vaddrs:
        return {}
    slots: dict[int, list[int]] = {}
    _relative_relocs(view, want_offsets=set(), want_addends=image_vaddrs, by_addend=slots)
    candidates: dict[int, tuple[int, int]] = {}  # image vaddr -> (descriptor vaddr, version)
    for img, offsets in slots.items():
        for slot in offsets:
            if skip[0] <= slot < skip[1]:
                continue  # the .tgtimg entry itself
            for version, start in _DESC_BINARY_START.items():
                head_off = view.vaddr_to_offset(slot - start, 4)
                if head_off is None:
                    continue
                ver, kind, fmt = view.region.unpack("<HBB", head_off, "image descriptor")
                if ver == version and kind == _DESC_KIND_SYCL and fmt in _DESC_FORMATS:
                    candidates[img] = (slot - start, fmt)
                    break
    string_slots = {d + f for d, _ in candidates.values() for f in (_DESC_TARGET_SPEC, _DESC_COMPILE_OPTIONS, _DESC_LINK_OPTIONS)}
    relocs = _relative_relocs(view, want_offsets=string_slots, want_addends=set())
    return {
        img: (
            _cstring(view, _pointer_at(view, d + _DESC_TARGET_SPEC, relocs)), _DESC_FORMATS[fmt],
            _cstring(view, _pointer_at(view, d + _DESC_COMPILE_OPTIONS, relocs), _MAX_OPTIONS),
            _cstring(view, _pointer_at(view, d + _DESC_LINK_OPTIONS, relocs), _MAX_OPTIONS),
        )
        for img, (d, fmt) in candidates.items()
    }


def _cstring(view: ElfView, vaddr: int, limit: int = 64) -> str | None:
    if not vaddr:
        return None
    off = view.vaddr_to_offset(vaddr, 1)
    if off is None:
        return None
    raw = view.region.read(off, min(limit, view.region.size - off), "string")
    end = raw.find(b"\0")
    return raw[: end if end >= 0 else len(raw)].decode("utf-8", "replace") or None
