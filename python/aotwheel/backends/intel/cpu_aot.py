"""Intel CPU AOT images (``spir64_x86_64``): what icpx embeds for Intel's CPU OpenCL runtime and
what that runtime returns from ``clGetProgramInfo(CL_PROGRAM_BINARIES)`` (the bytes the SYCL
runtime's persistent cache and ``opencl-aot`` store).

An ELF with e_type 0xFF04 (the OpenCL executable type legacy GPU binaries share) and e_machine
x86-64, whose sections are ``.ocl.ir`` (LLVM bitcode), ``.ocl.meta`` (kernel metadata),
``.ocl.obj`` (an x86-64 relocatable object: the compiled kernels) and ``.ocl.ver`` (u32 format
version). Verified on binaries built by intel-opencl-rt 2026.2 from SPIR-V.
"""

from __future__ import annotations

from dataclasses import dataclass

from aotwheel.formats.elf import open_elf
from aotwheel.formats.region import Region

EM_X86_64 = 62
SECTIONS = (".ocl.ir", ".ocl.meta", ".ocl.obj", ".ocl.ver")


@dataclass(frozen=True)
class CpuAotInfo:
    machine: str  # "x86_64"
    version: int | None  # .ocl.ver
    has_ir: bool  # .ocl.ir holds LLVM bitcode (the runtime can rebuild from it)
    object_size: int  # bytes of compiled x86-64 code object


def read_cpu_aot(region: Region) -> CpuAotInfo:
    view = open_elf(region)
    if view.e_machine != EM_X86_64:
        raise region.error(18, f"CPU AOT image for machine {view.e_machine}, not x86-64 ({EM_X86_64})")
    obj = view.section(".ocl.obj")
    if obj is None or not obj.size:
        raise region.error(0, "CPU AOT image (ELF 0xff04, x86-64) without an '.ocl.obj' section")
    ver = view.section(".ocl.ver")
    version = None
    if ver is not None and ver.size >= 4:
        (version,) = region.unpack("<I", ver.offset, "section '.ocl.ver'")
    ir = view.section(".ocl.ir")
    has_ir = ir is not None and ir.size >= 4 and region.read(ir.offset, 4, "section '.ocl.ir'") in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")
    return CpuAotInfo("x86_64", version, has_ir, obj.size)
