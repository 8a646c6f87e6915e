"""Intel zebin (ELF, e_machine EM_INTELGT): the ``.note.intelgt.compat`` notes that say which
device a binary was built for."""

from __future__ import annotations

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
    version = notes.get(NT_ZEBIN_VERSION)
    return ZebinInfo(
        ip_u32=_u32(notes.get(NT_PRODUCT_CONFIG)),
        product_family=_u32(notes.get(NT_PRODUCT_FAMILY)),
        gfx_core=_u32(notes.get(NT_GFX_CORE_FAMILY)),
        version=version.rstrip(b"\0").decode("ascii", "replace") if version else None,
        has_spirv=any(s.type == _SPV_SECTION_TYPE or s.name == ".spv" for s in view.sections),
    )
