"""AMD GPU code objects (ELF, e_machine EM_AMDGPU): the processor and the xnack/sramecc settings
their ELF header records, as LLVM's AMDGPUUsage documents them.

Only the header is read. The processor number (``EF_AMDGPU_MACH``) is reported as a number: the
name comes from the bundle id that holds the code object (what the HIP runtime matches on).
"""

from __future__ import annotations

from dataclasses import dataclass

from aotwheel.formats.region import Region

EM_AMDGPU = 224
_OSABI = {64: "amdhsa", 65: "amdpal", 66: "mesa3d"}
# EI_ABIVERSION for amdhsa: 0 = code object v2, 1 = v3, ... 4 = v6.
_HSA_CODE_OBJECT_VERSION = {0: 2, 1: 3, 2: 4, 3: 5, 4: 6}
_MACH_MASK = 0x0FF
# v4+: two bits per feature. v3: one bit each, set = on (clear = off, or not supported).
_V4_SETTING = {0: "unsupported", 1: "any", 2: "off", 3: "on"}
_XNACK_V4_SHIFT, _SRAMECC_V4_SHIFT = 8, 10
_XNACK_V3, _SRAMECC_V3 = 0x100, 0x200
_GENERIC_VERSION_SHIFT = 24  # v6: EF_AMDGPU_GENERIC_VERSION, non-zero for generic targets


@dataclass(frozen=True)
class CodeObject:
    mach: int  # EF_AMDGPU_MACH value (0x3f = gfx90a)
    code_object_version: int | None  # 2..6 for amdhsa, None when the OS ABI is another
    os_abi: str
    xnack: str  # "any" | "on" | "off" | "unsupported"
    sramecc: str
    generic_version: int  # 0 unless a generic target (gfx9-generic, ...)


def read_code_object(region: Region) -> CodeObject:
    ident = region.head(16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        raise region.error(0, "not a 64-bit little-endian ELF (AMD code objects are)")
    (e_machine,) = region.unpack("<H", 18, "ELF header")
    if e_machine != EM_AMDGPU:
        raise region.error(18, f"ELF machine {e_machine}, not EM_AMDGPU ({EM_AMDGPU})")
    (flags,) = region.unpack("<I", 48, "ELF header e_flags")
    os_abi = _OSABI.get(ident[7], f"osabi {ident[7]}")
    version = _HSA_CODE_OBJECT_VERSION.get(ident[8]) if os_abi == "amdhsa" else None
    if version is not None and version >= 4:
        xnack = _V4_SETTING[(flags >> _XNACK_V4_SHIFT) & 3]
        sramecc = _V4_SETTING[(flags >> _SRAMECC_V4_SHIFT) & 3]
    else:
        xnack = "on" if flags & _XNACK_V3 else "off"
        sramecc = "on" if flags & _SRAMECC_V3 else "off"
    generic = (flags >> _GENERIC_VERSION_SHIFT) & 0xFF if version is not None and version >= 6 else 0
    return CodeObject(flags & _MACH_MASK, version, os_abi, xnack, sramecc, generic)


# EF_AMDGPU_MACH -> processor (LLVM's AMDGPUUsage, "AMDGPU ELF Header", e_flags table), for code
# objects found without a bundle id to name them.
_MACH_NAMES = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702", 0x025: "gfx703", 0x026: "gfx704",
    0x028: "gfx801", 0x029: "gfx802", 0x02A: "gfx803", 0x02B: "gfx810", 0x02C: "gfx900", 0x02D: "gfx902", 0x02E: "gfx904",
    0x02F: "gfx906", 0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c", 0x033: "gfx1010", 0x034: "gfx1011", 0x035: "gfx1012",
    0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032", 0x039: "gfx1033", 0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805",
    0x03D: "gfx1035", 0x03E: "gfx1034", 0x03F: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150",
    0x044: "gfx1103", 0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200", 0x04A: "gfx1151", 0x04B: "gfx941",
    0x04C: "gfx942", 0x04E: "gfx1201", 0x04F: "gfx950",
}


def processor_name(mach: int) -> str | None:
    """``gfx90a`` for EF_AMDGPU_MACH 0x3f; ``None`` for a number this table does not list."""
    return _MACH_NAMES.get(mach)
