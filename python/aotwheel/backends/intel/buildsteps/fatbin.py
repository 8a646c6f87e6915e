"""Writing ocloc-compatible fat binaries: the ar archive the Intel driver searches by IP version.

Byte layout follows compute-runtime's ``ArEncoder`` (padTo8Bytes) and ``createEncodedElfWithSpirv``,
so for the same members the output equals ``ocloc compile -device a,b`` byte for byte:

- ``!<arch>\\n``, then per member an optional ``pad_N`` member (filled with spaces) that puts the
  next member's data on an 8-byte boundary, a 60-byte header (``name/`` , date/uid/gid ``0``,
  mode ``644``, decimal size, `` `\\n``) and the data (odd sizes padded with one NUL byte, as
  ``ArEncoder::appendFileEntry`` pads them: zebin members can have odd sizes, legacy ones did not);
- members ``64.<maj.min.rev>`` per device and, for JIT fallback, ``generic_ir``: an ELF64 with
  e_type 0xFF02 (ET_OPENCL_OBJECTS) whose section "SPIRV Object" (type 0xff000009) holds the SPIR-V.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

AR_MAGIC = b"!<arch>\n"
_HEADER_SIZE = 60
_NAME_FIELD = 16

ET_OPENCL_OBJECTS = 0xFF02
SHT_OPENCL_SPIRV = 0xFF000009
_SHT_STRTAB = 3


@dataclass(frozen=True, slots=True)
class Member:
    """One ar member: name (at most 15 characters, no '/') and data."""

    name: str
    data: bytes


def member_name(ip: str, pointer_bits: int = 64) -> str:
    """The name the driver looks up first for a device: ``64.12.60.7``."""
    return f"{pointer_bits}.{ip}"


def _header(name: str, size: int) -> bytes:
    ident = name + "/"
    if len(ident) > _NAME_FIELD or "/" in name:
        raise ValueError(f"ar member name {name!r} is longer than 15 characters or contains '/'")
    fields = (ident.ljust(16) + "0".ljust(12) + "0".ljust(6) + "0".ljust(6) + "644".ljust(8)
              + str(size).ljust(10) + "`\n")
    return fields.encode("ascii")


def write_ar(members: list[Member]) -> bytes:
    """Encode ``members`` as an ocloc/driver-compatible ar archive (8-byte aligned data)."""
    body = bytearray()
    pads = 0
    for m in members:
        if (len(body) + _HEADER_SIZE) % 8:
            pad = 8 - (len(body) + 2 * _HEADER_SIZE) % 8
            body += _header(f"pad_{pads}", pad) + b" " * pad
            pads += 1
        body += _header(m.name, len(m.data)) + m.data
        if len(m.data) & 1:
            body += b"\0"
    return AR_MAGIC + bytes(body)


# ocloc 23.30 (compute-runtime 3a9a835692, "encode options in elf file") and later add a
# "BuildOptions" section (SHT_OPENCL_OPTIONS) holding the -options text after the SPIR-V.
_SHT_OPENCL_OPTIONS = 0xFF000006
BUILD_OPTIONS_SINCE = (23, 30)


def ir_options(ocloc_version: str | None, options: str) -> str | None:
    """What :func:`spirv_ir_elf` needs to write the ``generic_ir`` the ocloc of ``ocloc_version``
    writes: its ``-options`` text from 23.30 on, ``None`` (no BuildOptions section) before."""
    import re

    release = tuple(int(p) for p in re.findall(r"\d+", ocloc_version or "")[:2])
    return options if release >= BUILD_OPTIONS_SINCE else None


def spirv_ir_elf(spirv: bytes, options: str | None = None) -> bytes:
    """The ``generic_ir`` member: SPIR-V wrapped the way ocloc wraps it (ELF64, e_type 0xFF02),
    with the BuildOptions section newer oclocs add when ``options`` is a string (:func:`ir_options`)."""
    sections: list[tuple[bytes, int, bytes]] = [(b"SPIRV Object", SHT_OPENCL_SPIRV, spirv)]
    if options is not None:
        sections.append((b"BuildOptions", _SHT_OPENCL_OPTIONS, options.encode()))
    shstrtab = b"\0.shstrtab\0" + b"".join(name + b"\0" for name, _, _ in sections)
    shnum, ehsize, shentsize = len(sections) + 2, 64, 64
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", ET_OPENCL_OBJECTS, 0, 1, 0, 0, ehsize, 0,
                               ehsize, 56, 0, shentsize, shnum, shnum - 1)

    def shdr(name: int, typ: int, off: int, size: int) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name, typ, 0, 0, off, size, 0, 0, 8 if typ else 0, 0)

    off = _align(ehsize + shnum * shentsize, 8)  # headers first, as ocloc does
    shdrs, datas, name_off = shdr(0, 0, 0, 0), [], 11  # names after "\0.shstrtab\0"
    for name, typ, data in sections:
        # an empty section gets offset 0, as ocloc's ElfEncoder writes it
        shdrs += shdr(name_off, typ, off if data else 0, len(data))
        if data:
            datas.append((off, data))
            off = _align(off + len(data), 8)
        name_off += len(name) + 1
    shdrs += shdr(1, _SHT_STRTAB, off, len(shstrtab))
    out = bytearray(ehdr + shdrs)
    for at, data in datas + [(off, shstrtab)]:
        out += bytes(at - len(out)) + data
    if options is not None:  # the newer encoder pads the file to 8 bytes
        out += bytes(_align(len(out), 8) - len(out))
    return bytes(out)


def build_fatbin(natives: list[tuple[str, bytes]], spirv: bytes | None, ir_build_options: str | None = None) -> bytes:
    """A fat binary from ``(ip, binary)`` pairs in devlist order, plus ``generic_ir`` if ``spirv``
    (``ir_build_options``: see :func:`ir_options`)."""
    members = [Member(member_name(ip), data) for ip, data in natives]
    if spirv is not None:
        members.append(Member("generic_ir", spirv_ir_elf(spirv, ir_build_options)))
    if not members:
        raise ValueError("a fat binary needs at least one native image or SPIR-V")
    return write_ar(members)


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to
