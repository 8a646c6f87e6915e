"""SPIR-V module headers and, on request, the kernels a module declares."""

from __future__ import annotations

from dataclasses import dataclass

from aotwheel.formats.region import Region
from aotwheel.formats.sniff import SPIRV_MAGIC, SPIRV_MAGIC_BE

_OP_ENTRY_POINT = 15
_EXECUTION_MODEL_KERNEL = 6


@dataclass(frozen=True)
class SpirvInfo:
    version: str  # "1.4"
    generator: int
    bound: int
    kernels: int | None  # OpEntryPoint Kernel count; None unless asked for


def read_spirv(region: Region, *, count_kernels: bool = False) -> SpirvInfo:
    """Parse the 5-word header; with ``count_kernels`` walk every instruction (bounds-checked)."""
    magic = region.head(4)
    if magic == SPIRV_MAGIC:
        endian = "<"
    elif magic == SPIRV_MAGIC_BE:
        endian = ">"
    else:
        raise region.error(0, "missing SPIR-V magic 03 02 23 07")
    _, version, generator, bound, _schema = region.unpack(endian + "5I", 0, "SPIR-V header")
    kernels = _count_kernels(region, endian) if count_kernels else None
    return SpirvInfo(f"{(version >> 16) & 0xFF}.{(version >> 8) & 0xFF}", generator, bound, kernels)


def _count_kernels(region: Region, endian: str) -> int:
    if region.size % 4:
        raise region.error(region.size, "SPIR-V size is not a whole number of words")
    pos, count = 20, 0
    while pos < region.size:
        (word,) = region.unpack(endian + "I", pos, "SPIR-V instruction")
        length, opcode = word >> 16, word & 0xFFFF
        if length == 0:
            raise region.error(pos, "SPIR-V instruction of length 0")
        region.check(pos, length * 4, "SPIR-V instruction")
        if opcode == _OP_ENTRY_POINT and length >= 2:
            (model,) = region.unpack(endian + "I", pos + 4, "OpEntryPoint")
            count += model == _EXECUTION_MODEL_KERNEL
        pos += length * 4
    return count
