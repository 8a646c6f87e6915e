"""ELF access for device and host binaries, and the host side of SYCL offloading: ``.tgtimg``
image tables, the relocations that fill them, image descriptors, ``.tgtsym`` kernel names.

pyelftools reads headers through a :class:`Region` stream (an mmap in practice), so only the
headers, tables and small sections are touched -- never the images themselves.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aotwheel.formats.region import Region

R_X86_64_RELATIVE = 8
_BUNDLE_PREFIX = "__CLANG_OFFLOAD_BUNDLE__"
_TGTIMG_ENTRY = 16  # {u64 image_vaddr, u64 image_size}
# sycl_device_binary_struct: u16 Version, u8 Kind (4 = SYCL), u8 Format, pad, DeviceTargetSpec,
# CompileOptions, LinkOptions, [ManifestStart, ManifestEnd: version <= 2 only], BinaryStart, ...
# Version 3 (dpctl 0.22.1, measured) has no manifest pointers, so BinaryStart sits at +32.
_DESC_TARGET_SPEC = 8
_DESC_BINARY_START = {3: 32, 2: 48, 1: 48}
_DESC_KIND_SYCL = 4
_DESC_FORMATS = {0: "none", 1: "native", 2: "spirv", 3: "llvmbc", 4: "zstd"}
_MAX_SMALL_SECTION = 256 << 20  # .tgtsym / relocation tables larger than this are not read


@dataclass(frozen=True)
class Section:
    name: str
    type: int | str
    addr: int
    offset: int
    size: int


@dataclass
class ElfView:
    """Headers of one ELF inside a region: its sections and loadable segments."""

    region: Region
    e_type: int
    e_machine: int
    sections: list[Section]
    segments: list[tuple[int, int, int]]  # (p_vaddr, p_offset, p_filesz) of PT_LOAD

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

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

    def section_at(self, offset: int) -> Section | None:
        for s in self.sections:
            if s.type != "SHT_NOBITS" and s.size and s.offset <= offset < s.offset + s.size:
                return s
        return None


def open_elf(region: Region) -> ElfView:
    """Read the ELF header, section headers and program headers (bounds-checked first)."""
    from elftools.common.exceptions import ELFError

    ident = region.head(16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise region.error(0, "not an ELF file (bad ELF identification)")
    is64, endian = ident[4] == 2, "<" if ident[5] == 1 else ">"
    fmt = endian + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH")
    (e_type, e_machine, _v, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum, shentsize, shnum, _shstrndx) = region.unpack(fmt, 16, "ELF header")
    # Entries smaller than the struct make "the table fits" vacuous: with e_phoff 0, e_phentsize 0
    # and 65535 entries pyelftools parses one header 65535 times (seconds for a 162-byte file).
    min_sh, min_ph = (64, 56) if is64 else (40, 32)
    if shnum and shentsize < min_sh:
        raise region.error(58, f"ELF section header entries of {shentsize} bytes (need {min_sh})")
    if phnum and phentsize < min_ph:
        raise region.error(54, f"ELF program header entries of {phentsize} bytes (need {min_ph})")
    if shnum:
        region.check(shoff, shnum * shentsize, "ELF section header table")
    if phnum:
        region.check(phoff, phnum * phentsize, "ELF program header table")
    try:
        from elftools.elf.elffile import ELFFile

        elf = ELFFile(region.stream())
        sections = []
        for sec in elf.iter_sections():
            h: Any = sec.header
            if h["sh_type"] != "SHT_NOBITS" and h["sh_size"]:
                region.check(h["sh_offset"], h["sh_size"], f"section {sec.name!r}")
            sections.append(Section(sec.name, h["sh_type"], h["sh_addr"], h["sh_offset"], h["sh_size"]))
        segments = [(s["p_vaddr"], s["p_offset"], s["p_filesz"]) for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
    except (ELFError, struct.error, ValueError, KeyError, UnicodeDecodeError) as exc:
        raise region.error(shoff, f"unreadable ELF headers ({type(exc).__name__}: {str(exc)[:80]})") from None
    except Exception as exc:  # construct's parse errors have no stable public base class
        if type(exc).__module__.startswith(("construct", "elftools")):
            raise region.error(shoff, f"unreadable ELF headers ({type(exc).__name__})") from None
        raise
    for _, p_offset, p_filesz in segments:
        region.check(p_offset, p_filesz, "PT_LOAD segment")
    return ElfView(region, e_type, e_machine, sections, segments)


@dataclass(frozen=True)
class HostImage:
    """One ``.tgtimg`` entry resolved to file bytes."""

    offset: int
    size: int
    vaddr: int
    section: str | None
    triple: str | None  # from the descriptor's DeviceTargetSpec, else the bundle section name
    desc_format: str | None  # the descriptor's Format field, when the descriptor was found


@dataclass
class HostOffload:
    images: list[HostImage] = field(default_factory=list)
    kernels_by_triple: dict[str, int] = field(default_factory=dict)
    kernels: int | None = None
    offloading_sections: list[Section] = field(default_factory=list)  # .llvm.offloading (objects)


def read_host(view: ElfView) -> HostOffload:
    """Everything the host side records about embedded device images."""
    out = HostOffload()
    tgtimg = view.section(".tgtimg")
    if tgtimg is not None and tgtimg.type != "SHT_NOBITS":
        out.images = _tgtimg_images(view, tgtimg)
    tgtsym = view.section(".tgtsym")
    if tgtsym is not None and 0 < tgtsym.size <= _MAX_SMALL_SECTION:
        out.kernels_by_triple, out.kernels = _count_tgtsym(bytes(view.data(tgtsym)))
    out.offloading_sections = [s for s in view.sections if s.name == ".llvm.offloading" and s.size]
    return out


def _count_tgtsym(data: bytes) -> tuple[dict[str, int], int]:
    """``sycl-<triple>.<kernel>`` names -> kernels per triple, and distinct kernels overall."""
    per: Counter[str] = Counter()
    names: set[bytes] = set()
    for entry in data.split(b"\0"):
        if not entry:
            continue
        prefix, dot, name = entry.partition(b".")
        triple = prefix.decode("utf-8", "replace")
        triple = triple[5:] if triple.startswith("sycl-") else triple
        per[triple] += 1
        names.add(name if dot else entry)
    return dict(per), len(names)


def _tgtimg_images(view: ElfView, tgtimg: Section) -> list[HostImage]:
    region = view.region
    if tgtimg.size % _TGTIMG_ENTRY:
        raise region.error(tgtimg.offset, f".tgtimg size {tgtimg.size} is not a multiple of {_TGTIMG_ENTRY}")
    endian = "<"
    raw = [struct.unpack_from(endian + "QQ", region.buf, region.start + tgtimg.offset + i) for i in range(0, tgtimg.size, _TGTIMG_ENTRY)]
    # In a PIC .so the loader writes each slot from its RELATIVE relocation's addend, whatever the
    # section holds (GNU ld stores the address too; some real wheels store 0): the addend wins.
    slots = {tgtimg.addr + i * _TGTIMG_ENTRY for i in range(len(raw))}
    relocs = _relative_relocs(view, want_offsets=slots, want_addends=set())
    addrs = [relocs.get(tgtimg.addr + i * _TGTIMG_ENTRY, a) for i, (a, _) in enumerate(raw)]
    table = (tgtimg.addr, tgtimg.addr + tgtimg.size)
    descs = _descriptors(view, {a for a in addrs if a}, skip=table)
    images: list[HostImage] = []
    for i, ((_, size), vaddr) in enumerate(zip(raw, addrs)):
        if vaddr == 0 and size == 0:
            continue  # empty slot
        entry_off = tgtimg.offset + i * _TGTIMG_ENTRY
        if vaddr == 0:
            raise region.error(entry_off, ".tgtimg entry has no address and no relocation supplies one")
        off = view.vaddr_to_offset(vaddr, size)
        if off is None:
            raise region.error(entry_off, f".tgtimg entry points at {vaddr:#x}+{size} outside every loaded segment")
        region.check(off, size, f"image {i} of .tgtimg")
        sec = view.section_at(off)
        triple, fmt = descs.get(vaddr, (None, None))
        if triple is None and sec is not None and sec.name.startswith(_BUNDLE_PREFIX):
            triple = sec.name[len(_BUNDLE_PREFIX) :].removeprefix("sycl-")
        images.append(HostImage(off, size, vaddr, sec.name if sec else None, triple, fmt))
    return images


def _relative_relocs(view: ElfView, *, want_offsets: set[int], want_addends: set[int], by_addend: dict[int, list[int]] | None = None) -> dict[int, int]:
    """R_X86_64_RELATIVE relocations in one pass over the raw tables: ``r_offset -> addend`` for
    wanted offsets; for wanted addends, every ``r_offset`` is appended to ``by_addend[addend]``."""
    found: dict[int, int] = {}
    if not want_offsets and not want_addends:
        return found
    for sec in view.sections:
        if sec.type != "SHT_RELA" or sec.size % 24 or sec.size > _MAX_SMALL_SECTION:
            continue
        for r_offset, r_info, addend in struct.iter_unpack("<QQq", view.data(sec)):
            if (r_info & 0xFFFFFFFF) != R_X86_64_RELATIVE:
                continue
            if r_offset in want_offsets:
                found[r_offset] = addend
            if addend in want_addends and by_addend is not None:
                by_addend.setdefault(addend, []).append(r_offset)
    return found


def _pointer_at(view: ElfView, vaddr: int, relocs: dict[int, int]) -> int:
    off = view.vaddr_to_offset(vaddr, 8)
    if off is None:
        return 0
    (value,) = view.region.unpack("<Q", off, "descriptor pointer")
    return int(relocs.get(vaddr, value))


def _descriptors(view: ElfView, image_vaddrs: set[int], skip: tuple[int, int]) -> dict[int, tuple[str | None, str | None]]:
    """Find each image's ``sycl_device_binary_struct`` (the one whose BinaryStart points at it) and
    read DeviceTargetSpec and Format. Best effort: images without a valid descriptor are omitted."""
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
    spec_slots = {d + _DESC_TARGET_SPEC for d, _ in candidates.values()}
    relocs = _relative_relocs(view, want_offsets=spec_slots, want_addends=set())
    return {img: (_cstring(view, _pointer_at(view, d + _DESC_TARGET_SPEC, relocs)), _DESC_FORMATS[fmt]) for img, (d, fmt) in candidates.items()}


def _cstring(view: ElfView, vaddr: int, limit: int = 64) -> str | None:
    if not vaddr:
        return None
    off = view.vaddr_to_offset(vaddr, 1)
    if off is None:
        return None
    raw = view.region.read(off, min(limit, view.region.size - off), "string")
    end = raw.find(b"\0")
    return raw[: end if end >= 0 else len(raw)].decode("utf-8", "replace") or None
