"""Intel's image kinds (:meth:`aotwheel.model.ImageKind.declare`) and which ELF files they are.

Light on purpose (the data model and ``formats.sniff`` only): the reader, the backend's rules and
tests name these constants; the inspector learns the ELF rules from the reader's ``READS``.
The C scanner (csrc/fastscan_core.h, ``fs_zebin_summary`` / ``fs_ir_payload``) tests the same
e_type / e_machine values for an ocloc fat binary's members; tests/test_fastscan.py compares it
with :func:`sniff`.
"""

from __future__ import annotations

from aotwheel.formats.sniff import ElfKinds
from aotwheel.formats.sniff import sniff as _sniff
from aotwheel.model import ImageKind

ZEBIN = ImageKind.declare("zebin")  # GPU native binary (ELF, e_machine EM_INTELGT)
LEGACY = ImageKind.declare("legacy")  # GPU patch-token binary
CPU_AOT = ImageKind.declare("cpu-aot")  # CPU AOT image (x86-64 OpenCL executable)
IR_ELF = ImageKind.declare("ir-elf")  # IR-only ELF (SPIR-V or LLVM IR inside)
IR_FORMS = ("spirv", "llvmbc")  # the IR an OpenCL / Level Zero driver can JIT-compile (a FileReport's ir)

EM_INTELGT = 205
EM_X86_64 = 62
ET_OPENCL_OBJECTS = 0xFF02  # IR-only ELF (SPIR-V / LLVM IR)
ET_OPENCL_EXECUTABLE = 0xFF04  # legacy patch-token GPU binary, or (x86-64) a CPU AOT image
ET_ZEBIN_EXE = 0xFF12

# (e_type, e_machine, kind), None for any: formats.sniff.ElfKinds says which rule wins.
ELF_KINDS: tuple[tuple[int | None, int | None, ImageKind], ...] = (
    (ET_OPENCL_EXECUTABLE, EM_X86_64, CPU_AOT),
    (ET_OPENCL_EXECUTABLE, None, LEGACY),
    (ET_OPENCL_OBJECTS, None, IR_ELF),
    (ET_ZEBIN_EXE, None, ZEBIN),
    (None, EM_INTELGT, ZEBIN),
)
ELF_LOOKUP = ElfKinds(ELF_KINDS)  # sniff's second argument for Intel's formats


def sniff(head: bytes) -> ImageKind:
    """:func:`aotwheel.formats.sniff.sniff` that also names Intel's ELF-based formats (``zebin``,
    ``legacy``, ``cpu-aot``, ``ir-elf``): how the reader classifies an ocloc fat binary's members."""
    return _sniff(head, ELF_LOOKUP)
