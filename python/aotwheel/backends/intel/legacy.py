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


# A kernel IGC removed for lack of fp64 (-cl-poison-unsupported-fp64-kernels) carries this kernel
# attribute string in its patch list (ocloc 22.43 --format patchtokens -device acm-g10; zebins say
# the same in .ze_info, zeinfo.poisoned_kernels).
_POISON_ATTRIBUTE = b'invalid_kernel("uses-fp64-math")'
_KERNEL_HEADER = "<IQ7I"  # SKernelBinaryHeaderCommon: CheckSum, ShaderHashCode, KernelNameSize, PatchListSize, 4 heap sizes, unpadded size
_KERNEL_HEADER_SIZE = 40


def poisoned_kernels(region: Region) -> tuple[str, ...]:
    """Names of the kernels a legacy image holds only as fp64 poison stubs: walks the patch-token
    program (SProgramBinaryHeader, then per kernel its common header, name, heaps and patch list),
    bounds-checked; a kernel whose patch list holds the invalid_kernel attribute is named."""
    view = open_elf(region)
    sec = view.section(DEVICE_BINARY_SECTION)
    if sec is None or sec.size < 28:
        return ()
    _magic, _version, _device, _ptr, nkernels, _stepping, program_patches = region.unpack("<7I", sec.offset, "SProgramBinaryHeader")
    end = sec.offset + sec.size
    pos = sec.offset + 28 + program_patches
    found: list[str] = []
    for _ in range(min(nkernels, sec.size // _KERNEL_HEADER_SIZE)):
        if pos + _KERNEL_HEADER_SIZE > end:
            raise region.error(pos, "patch-token kernel header runs past its section")
        _sum, _hash, name_size, patch_size, *heaps, _unpadded = region.unpack(_KERNEL_HEADER, pos, "SKernelBinaryHeaderCommon")
        name_at = pos + _KERNEL_HEADER_SIZE
        patches_at = name_at + name_size + sum(heaps)
        nxt = patches_at + patch_size
        if nxt > end:
            raise region.error(pos, "patch-token kernel runs past its section")
        if _POISON_ATTRIBUTE in region.read(patches_at, patch_size, "kernel patch list"):
            found.append(region.read(name_at, name_size, "kernel name").split(b"\0", 1)[0].decode("utf-8", "replace"))
        pos = nxt
    return tuple(found)

