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


ZE_INFO_SECTION = ".ze_info"
_ZE_INFO_LIMIT = 16 << 20  # a .ze_info larger than this is not read for poisoned kernels
# .ze_info (YAML) of a kernel IGC removed for lack of fp64 (-cl-poison-unsupported-fp64-kernels;
# ocloc 22.43 --format zebin and 26.27 -device acm-g10 alike):
#   - name:            axpy64
#     user_attributes:
#       invalid_kernel:  uses-fp64-math
_KERNEL_NAME = rb"^ *- name: *'?([^'\s]+)'? *$"
_POISONED = rb"^ *invalid_kernel: *['\"]?uses-fp64-math"


def poisoned_kernels(region: Region) -> tuple[str, ...]:
    """Names of the kernels a zebin holds only as fp64 poison stubs (its ``.ze_info`` marks them
    ``invalid_kernel: uses-fp64-math``): each marker's kernel is the nearest ``- name:`` before it."""
    view = open_elf(region)
    sec = view.section(ZE_INFO_SECTION)
    if sec is None or not sec.size or sec.size > _ZE_INFO_LIMIT:
        return ()
    text = region.read(sec.offset, sec.size, "section '.ze_info'")
    if b"invalid_kernel" not in text:
        return ()
    import re  # only for a zebin that has such a kernel

    names = [(m.start(), m.group(1)) for m in re.finditer(_KERNEL_NAME, text, re.M)]
    found: list[str] = []
    for marker in re.finditer(_POISONED, text, re.M):
        before = [name for at, name in names if at < marker.start()]
        if before and before[-1].decode("utf-8", "replace") not in found:
            found.append(before[-1].decode("utf-8", "replace"))
    return tuple(found)


# --------------------------------------------------------------------------------------------
# --deep: is the zebin one the driver's zebin decoder (compute-runtime's decodeZebin) would take?

_ZE_INFO_MAX = 64 << 20  # bounds the parse; ocloc's largest seen are a few MB
_ZE_INFO_MAX_DEPTH = 64
_ZE_INFO_TYPE = 0xFF000011  # SHT_ZEBIN_ZEINFO
_YAML_KEY = rb"(?:[A-Za-z0-9_.$-]+|'[^'\n]*'|\"[^\"\n]*\")"


def validate_zebin(region: Region) -> None:
    """Raise one :class:`~aotwheel.errors.InspectError` naming the problem unless the zebin at
    ``region`` is well formed as the driver's decoder (compute-runtime's ``decodeZebin``) reads
    it: a 64-bit little-endian ELF whose sections lie inside it (:func:`open_elf`), at most one
    ``.ze_info`` section (type SHT_ZEBIN_ZEINFO; none is a module without kernels), holding the
    block-style YAML ocloc writes (a bounded line parser: indentation, ``key: value`` and ``- item``
    lines, up to ``kernels_misc_info`` as the driver cuts it) with a top-level ``version`` and
    ``kernels``, and a ``.text.<name>`` section for each kernel it names."""
    if region.head(6) != b"\x7fELF\x02\x01":
        raise region.error(4, "a zebin must be a 64-bit little-endian ELF")
    view = open_elf(region)
    infos = [s for s in view.sections if s.type == _ZE_INFO_TYPE]
    if len(infos) > 1:
        raise region.error(0, f"a zebin holds at most one {ZE_INFO_SECTION} section, this one {len(infos)}")
    if not infos:
        return  # the driver takes it (a warning): a module without kernels (icpx writes such zebins)
    sec = infos[0]
    if sec.size > _ZE_INFO_MAX:
        raise region.error(sec.offset, f"{ZE_INFO_SECTION} of {sec.size} bytes, above {_ZE_INFO_MAX}")
    text = region.read(sec.offset, sec.size, f"section '{ZE_INFO_SECTION}'")
    text = text.split(b"kernels_misc_info", 1)[0]  # the driver parses what comes before it
    top, kernels, problem = _ze_info_outline(text)
    if problem is not None:
        raise region.error(sec.offset, f"{ZE_INFO_SECTION} is not the YAML a driver reads ({problem})")
    for key in ("version", "kernels"):
        if key not in top:
            raise region.error(sec.offset, f"{ZE_INFO_SECTION} has no top-level '{key}'")
    sections = {s.name for s in view.sections}
    for name in kernels:
        if f".text.{name}" not in sections:
            raise region.error(sec.offset, f"kernel {name!r} of {ZE_INFO_SECTION} has no .text.{name} section")


def _ze_info_outline(text: bytes) -> tuple[set[str], list[str], str | None]:
    """The top-level keys and the kernel names of a ``.ze_info``, or the first problem (``line N:
    ...``). One pass over the lines; the open levels are a stack of columns bounded by
    ``_ZE_INFO_MAX_DEPTH``. Values are not parsed (flow ``[1, 1, 1]`` and quoted scalars stay text)."""
    import re

    line_re = re.compile(rb"( *)((?:- +)*)(?:(" + _YAML_KEY + rb") *:(?: +(.*))?|(.*))")
    top: set[str] = set()
    kernels: list[str] = []
    levels = [0]  # columns of the open block levels
    opens = False  # the previous line opened a block ("key:" or "-" with nothing after it)
    section = None  # the top-level key whose block this is
    item_column = body_column = -1  # columns of the dash of a kernel item and of the keys inside it
    for n, raw in enumerate(text.split(b"\n"), 1):
        line = raw.rstrip(b"\r")
        stripped = line.strip(b" ")
        if not stripped or stripped.startswith(b"#") or (line[:1] != b" " and stripped in (b"---", b"...")):
            continue
        m = line_re.fullmatch(line)
        if m is None or b"\t" in m.group(1) + m.group(2):
            return top, kernels, f"line {n}: neither 'key: value' nor '- item'"
        column, dashes, key, value, scalar = len(m.group(1)), m.group(2), m.group(3), (m.group(4) or b"").strip(), m.group(5)
        if column > levels[-1]:
            if not opens:
                return top, kernels, f"line {n}: indented deeper than a value allows"
            levels.append(column)
        else:
            while levels[-1] > column:
                levels.pop()
            if levels[-1] != column:
                return top, kernels, f"line {n}: its indentation matches no open level"
        if dashes:  # each "- " opens an item whose keys start at the column after it
            levels.append(column + len(dashes))
        if len(levels) > _ZE_INFO_MAX_DEPTH:
            return top, kernels, f"line {n}: nested more than {_ZE_INFO_MAX_DEPTH} levels"
        if key is None and not dashes:
            return top, kernels, f"line {n}: a scalar outside a list"
        if column == 0 and not dashes:
            section = key.strip(b"'\"").decode("utf-8", "replace") if key else None
            top.add(section or "")
            item_column = body_column = -1
        elif section == "kernels":
            if dashes and item_column < 0:
                item_column, body_column = column, column + len(dashes)
            if key == b"name" and (column == item_column if dashes else column == body_column):
                kernels.append(value.strip(b"'\"").decode("utf-8", "replace"))
        opens = (key is not None and not value) or (key is None and not (scalar or b"").strip())
    return top, kernels, None
