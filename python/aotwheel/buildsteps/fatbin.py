"""Writing ocloc-compatible fat binaries: the ar archive the Intel driver searches by IP version.

Byte layout follows compute-runtime's ``ArEncoder`` (padTo8Bytes) and ``createEncodedElfWithSpirv``,
so for the same members the output equals ``ocloc compile -device a,b`` byte for byte:

- ``!<arch>\\n``, then per member an optional ``pad_N`` member (filled with spaces) that puts the
  next member's data on an 8-byte boundary, a 60-byte header (``name/`` , date/uid/gid ``0``,
  mode ``644``, decimal size, `` `\\n``) and the data (odd sizes padded with ``\\n``);
- members ``64.<maj.min.rev>`` per device and, for JIT fallback, ``generic_ir``: an ELF64 with
  e_type 0xFF02 (ET_OPENCL_OBJECTS) whose section "SPIRV Object" (type 0xff000009) holds the SPIR-V.
"""

from __future__ import annotations

import struct

from aotwheel.buildsteps.values import Value

AR_MAGIC = b"!<arch>\n"
_HEADER_SIZE = 60
_NAME_FIELD = 16

ET_OPENCL_OBJECTS = 0xFF02
SHT_OPENCL_SPIRV = 0xFF000009
_SHT_STRTAB = 3


class Member(Value):
    """One ar member: name (at most 15 characters, no '/') and data."""

    __slots__ = ("name", "data")

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self.data = name, data


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
            body += b"\n"
    return AR_MAGIC + bytes(body)


def spirv_ir_elf(spirv: bytes) -> bytes:
    """The ``generic_ir`` member: SPIR-V wrapped the way ocloc wraps it (ELF64, e_type 0xFF02)."""
    shstrtab = b"\0.shstrtab\0SPIRV Object\0"
    name_shstrtab, name_spirv = 1, 11
    shnum, ehsize, shentsize = 3, 64, 64
    data_off = _align(ehsize + shnum * shentsize, 8)  # headers first, as ocloc does
    str_off = _align(data_off + len(spirv), 8)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", ET_OPENCL_OBJECTS, 0, 1, 0, 0, ehsize, 0,
                               ehsize, 56, 0, shentsize, shnum, 2)

    def shdr(name: int, typ: int, off: int, size: int) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name, typ, 0, 0, off, size, 0, 0, 8 if typ else 0, 0)

    shdrs = shdr(0, 0, 0, 0) + shdr(name_spirv, SHT_OPENCL_SPIRV, data_off, len(spirv)) + shdr(
        name_shstrtab, _SHT_STRTAB, str_off, len(shstrtab))
    out = bytearray(ehdr + shdrs)
    out += bytes(data_off - len(out)) + spirv
    out += bytes(str_off - len(out)) + shstrtab
    return bytes(out)


def build_fatbin(natives: list[tuple[str, bytes]], spirv: bytes | None) -> bytes:
    """A fat binary from ``(ip, binary)`` pairs in devlist order, plus ``generic_ir`` if ``spirv``."""
    members = [Member(member_name(ip), data) for ip, data in natives]
    if spirv is not None:
        members.append(Member("generic_ir", spirv_ir_elf(spirv)))
    if not members:
        raise ValueError("a fat binary needs at least one native image or SPIR-V")
    return write_ar(members)


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to
