"""Intel zebin (ELF, e_machine EM_INTELGT): the ``.note.intelgt.compat`` notes that say which
device a binary was built for."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aotwheel.formats.elf import open_elf
from aotwheel.formats.region import Region

NOTE_SECTION = ".note.intelgt.compat"
_OWNER = b"IntelGT"
NT_PRODUCT_FAMILY = 1
NT_GFX_CORE_FAMILY = 2
NT_TARGET_METADATA = 3
NT_ZEBIN_VERSION = 4
NT_PRODUCT_CONFIG = 6  # u32 IP version (arch:10 | release:8 | reserved:8 | revision:6)
_SPV_SECTION_TYPE = 0xFF000009


@dataclass(frozen=True)
class ZebinInfo:
    ip_u32: int | None  # product config note; None in zebins that predate it
    product_family: int | None
    gfx_core: int | None
    version: str | None  # zebin version note, e.g. "1.70"
    has_spirv: bool  # a .spv section lets the driver rebuild for another device


def read_notes(region: Region, sec_off: int, sec_size: int) -> dict[int, bytes]:
    """``type -> desc`` of the IntelGT notes in one note section (bounds-checked)."""
    notes: dict[int, bytes] = {}
    pos, end = sec_off, sec_off + sec_size
    while pos + 12 <= end:
        namesz, descsz, ntype = region.unpack("<III", pos, "ELF note header")
        name_off = pos + 12
        desc_off = name_off + ((namesz + 3) & ~3)
        nxt = desc_off + ((descsz + 3) & ~3)
        if nxt > end:
            raise region.error(pos, f"ELF note ({namesz}+{descsz} bytes) runs past its section")
        if region.read(name_off, namesz, "note name").rstrip(b"\0") == _OWNER:
            notes[ntype] = region.read(desc_off, descsz, "note descriptor")
        pos = nxt
    return notes


def _u32(desc: bytes | None) -> int | None:
    return int.from_bytes(desc[:4], "little") if desc is not None and len(desc) >= 4 else None


def read_zebin(region: Region) -> ZebinInfo:
    view = open_elf(region)
    sec = view.section(NOTE_SECTION)
    notes = read_notes(region, sec.offset, sec.size) if sec is not None else {}
    return _info(notes, any(s.type == _SPV_SECTION_TYPE or s.name == ".spv" for s in view.sections))


def _info(notes: dict[int, bytes], has_spirv: bool) -> ZebinInfo:
    version = notes.get(NT_ZEBIN_VERSION)
    return ZebinInfo(
        ip_u32=_u32(notes.get(NT_PRODUCT_CONFIG)),
        product_family=_u32(notes.get(NT_PRODUCT_FAMILY)),
        gfx_core=_u32(notes.get(NT_GFX_CORE_FAMILY)),
        version=version.rstrip(b"\0").decode("ascii", "replace") if version else None,
        has_spirv=has_spirv,
    )


_NOTE_NAME = NOTE_SECTION.encode() + b"\0"
_SPV_NAME = b".spv\0"
_SHDR_FIELDS = struct.Struct("<II16xQQ24x")  # sh_name, sh_type, sh_offset, sh_size of an Elf64_Shdr
_Q = struct.Struct("<Q")
_HHHH = struct.Struct("<HHHH")
_SHT_DYNAMIC = 6
_NOTE_HEADER = struct.Struct("<III")


def read_zebin_summary(region: Region) -> ZebinInfo:
    """:func:`read_zebin`'s answer from the section table and one note section, nothing else.

    Inspecting a library with a thousand zebin members spent most of its time building full
    section lists it never used. This path takes the common layout (64-bit little-endian, no
    program headers, ordinary section numbering, every name inside a NUL-terminated string table)
    with the same bounds checks as :func:`aotwheel.formats.elf.open_elf`. Anything else, and
    every error, goes through :func:`read_zebin`, so the answer and the message stay the same.
    """
    buf, base, size = region.buf, region.start, region.size
    if size < 64 or buf[base : base + 6] != b"\x7fELF\x02\x01":
        return read_zebin(region)
    (shoff,) = _Q.unpack_from(buf, base + 0x28)
    phnum, shentsize, shnum, shstrndx = _HHHH.unpack_from(buf, base + 0x38)
    if phnum or shentsize != 64 or not shnum or not shoff or shstrndx >= shnum or shoff + shnum * 64 > size:
        return read_zebin(region)
    table = base + shoff
    _n, _t, st_off, st_size = _SHDR_FIELDS.unpack_from(buf, table + shstrndx * 64)
    if not st_size or st_off + st_size > size or buf[base + st_off + st_size - 1] != 0:
        return read_zebin(region)
    strtab = bytes(buf[base + st_off : base + st_off + st_size])
    note_off = note_size = -1
    has_spirv = False
    # bytes, not a memoryview: an iterator over a memoryview kept alive by an exception's traceback
    # can crash CPython 3.11's collector (formats/elf.py, _tgtimg_images)
    for sh_name, sh_type, offset, sec_size in _SHDR_FIELDS.iter_unpack(bytes(buf[table : table + shnum * 64])):
        if offset + sec_size > size or sh_type == _SHT_DYNAMIC or sh_name >= st_size:
            return read_zebin(region)  # the full reader decides (and names the section in its error)
        if sh_type == _SPV_SECTION_TYPE or strtab.startswith(_SPV_NAME, sh_name):
            has_spirv = True
        if note_off < 0 and strtab.startswith(_NOTE_NAME, sh_name):
            note_off, note_size = offset, sec_size
    return _info(_summary_notes(region, note_off, note_size) if note_off >= 0 else {}, has_spirv)


_SUMMARY_NOTES = frozenset((NT_PRODUCT_CONFIG, NT_PRODUCT_FAMILY, NT_GFX_CORE_FAMILY, NT_ZEBIN_VERSION))
_OWNER_FIELD = _OWNER + b"\0"


def _summary_notes(region: Region, sec_off: int, sec_size: int) -> dict[int, bytes]:
    """The notes :func:`read_zebin_summary` uses, as :func:`read_notes` reads them; any doubt
    (a note running past its section) goes to :func:`read_notes` for its check and message."""
    buf, base = region.buf, region.start
    if sec_off + sec_size > region.size:
        return read_notes(region, sec_off, sec_size)
    notes: dict[int, bytes] = {}
    pos, end = base + sec_off, base + sec_off + sec_size
    while pos + 12 <= end:
        namesz, descsz, ntype = _NOTE_HEADER.unpack_from(buf, pos)
        desc = pos + 12 + ((namesz + 3) & ~3)
        nxt = desc + ((descsz + 3) & ~3)
        if nxt > end:
            return read_notes(region, sec_off, sec_size)
        if ntype in _SUMMARY_NOTES and (
            buf[pos + 12 : pos + 20] == _OWNER_FIELD if namesz == 8 else bytes(buf[pos + 12 : pos + 12 + namesz]).rstrip(b"\0") == _OWNER
        ):
            notes[ntype] = bytes(buf[desc : desc + descsz])
        pos = nxt
    return notes
