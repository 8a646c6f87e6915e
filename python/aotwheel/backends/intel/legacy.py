"""Legacy OpenCL device ELFs: 0xFF04 executables (patch-token device binary, what Debian's ocloc
22.43 emits) and 0xFF02 IR-only objects (``generic_ir`` members)."""

from __future__ import annotations

from dataclasses import dataclass

from aotwheel.formats.elf import open_elf
from aotwheel.formats.region import Region

DEVICE_BINARY_SECTION = "Intel(R) OpenCL Device Binary"
SPIRV_SECTION = "SPIRV Object"
_PROGRAM_MAGIC = 0x494E5443  # "INTC"


@dataclass(frozen=True)
class LegacyInfo:
    """SProgramBinaryHeader of the patch-token program (only the core family names the target)."""

    gfx_core: int
    version: int
    stepping: int
    kernels: int
    pointer_size: int
    has_spirv: bool


def read_legacy(region: Region) -> LegacyInfo:
    view = open_elf(region)
    sec = view.section(DEVICE_BINARY_SECTION)
    if sec is None:
        raise region.error(0, f"legacy device ELF without a {DEVICE_BINARY_SECTION!r} section")
    magic, version, device, ptr, nkernels, stepping, _patch = region.unpack("<7I", sec.offset, "SProgramBinaryHeader")
    if sec.size < 28:
        raise region.error(sec.offset, "SProgramBinaryHeader larger than its section")
    if magic != _PROGRAM_MAGIC:
        raise region.error(sec.offset, f"bad patch-token program magic {magic:#x} (want 0x494e5443)")
    spirv = view.section(SPIRV_SECTION)
    return LegacyInfo(device, version, stepping, nkernels, ptr, has_spirv=spirv is not None and spirv.size > 0)


def ir_payload(region: Region) -> Region | None:
    """The SPIR-V (or LLVM IR) bytes an IR-only ELF carries, as a sub-region."""
    view = open_elf(region)
    sec = view.section(SPIRV_SECTION)
    if sec is None or not sec.size:
        return None
    return region.sub(sec.offset, sec.size, f"section {SPIRV_SECTION!r}")
