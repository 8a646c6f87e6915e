"""What a blob is, from its first bytes (docs/formats.md §3 magic numbers)."""

from __future__ import annotations

import struct

from aotwheel.model import ImageKind

# Module constants: sniff runs once per image (14k in large libraries), an enum attribute costs more.
_SPIRV, _LLVMBC, _ZSTD, _AR, _OFFLOAD, _BUNDLE = (ImageKind.SPIRV, ImageKind.LLVMBC, ImageKind.ZSTD, ImageKind.AR,
                                                  ImageKind.OFFLOAD, ImageKind.BUNDLE)
_CPU_AOT, _LEGACY, _IR_ELF, _ZEBIN, _ELF, _UNKNOWN = (ImageKind.CPU_AOT, ImageKind.LEGACY, ImageKind.IR_ELF, ImageKind.ZEBIN,
                                                      ImageKind.ELF, ImageKind.UNKNOWN)

SPIRV_MAGIC = b"\x03\x02\x23\x07"
SPIRV_MAGIC_BE = b"\x07\x23\x02\x03"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
AR_MAGIC = b"!<arch>\n"
OFFLOAD_MAGIC = b"\x10\xff\x10\xad"
ELF_MAGIC = b"\x7fELF"
BITCODE_MAGICS = (b"\xde\xc0\x17\x0b", b"BC\xc0\xde")
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"

EM_INTELGT = 205
ET_OPENCL_OBJECTS = 0xFF02  # IR-only ELF (SPIR-V / LLVM IR)
ET_OPENCL_EXECUTABLE = 0xFF04  # legacy patch-token GPU binary, or (x86-64) a CPU AOT image
EM_X86_64 = 62
ET_ZEBIN_EXE = 0xFF12


def sniff(head: bytes) -> ImageKind:
    """Classify by magic: ``spirv``, ``llvmbc``, ``zstd``, ``ar``, ``offload``, ``zebin``, ``legacy``,
    ``cpu-aot`` (Intel CPU AOT image), ``ir-elf``, ``elf`` (a host ELF), ``bundle`` (clang offload
    bundle, plain or ``CCOB``), or ``unknown``. ``head`` needs at least 20 bytes for ELFs."""
    if head[:4] in (SPIRV_MAGIC, SPIRV_MAGIC_BE):
        return _SPIRV
    if head[:4] in BITCODE_MAGICS:
        return _LLVMBC
    if head[:4] == ZSTD_MAGIC:
        return _ZSTD
    if head[:8] == AR_MAGIC:
        return _AR
    if head[:4] == OFFLOAD_MAGIC:
        return _OFFLOAD
    if head[:24] == BUNDLE_MAGIC or head[:4] == CCOB_MAGIC:
        return _BUNDLE
    if head[:4] == ELF_MAGIC and len(head) >= 20:
        endian = "<" if head[5] == 1 else ">"
        e_type, e_machine = struct.unpack_from(endian + "HH", head, 16)
        if e_type == ET_OPENCL_EXECUTABLE:
            return _CPU_AOT if e_machine == EM_X86_64 else _LEGACY
        if e_type == ET_OPENCL_OBJECTS:
            return _IR_ELF
        if e_machine == EM_INTELGT or e_type == ET_ZEBIN_EXE:
            return _ZEBIN
        return _ELF
    return _UNKNOWN
