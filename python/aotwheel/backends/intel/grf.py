"""The register file (GRF) ocloc allocated to each kernel of a native image, read from the image.

ocloc's log names the allocation only when a kernel spills, and ocloc 22.43 prints no spill line
for kernels that ocloc 26.27 reports spilling; the image always says it:

- zebin (ocloc 26, or 22.43 with ``-ze-intel-...``-era defaults): the ``.ze_info`` section is
  YAML, ``kernels: - name: K ... execution_env: ... grf_count: 256``.
- legacy patch tokens (Debian's ocloc 22.43): each kernel's ``PATCH_TOKEN_EXECUTION_ENVIRONMENT``
  (token 23) holds ``NumGRFRequired`` 80 bytes into its payload (compute-runtime's
  ``SPatchExecutionEnvironment``; ``ocloc disasm``'s PTM.txt shows the same bytes).

Bounded: every size is checked against its container before it is used.
"""

from __future__ import annotations

import re

from aotwheel.formats.elf import open_elf
from aotwheel.formats.region import Region

_ZE_INFO = ".ze_info"
_LEGACY_SECTION = "Intel(R) OpenCL Device Binary"
_PROGRAM_HEADER = 28  # Magic, Version, Device, GPUPointerSizeInBytes, NumberOfKernels, SteppingId, PatchListSize
_KERNEL_HEADER = 40  # CheckSum, ShaderHashCode (u64), KernelNameSize, PatchListSize, 5 heap sizes
_EXECUTION_ENVIRONMENT = 23
_NUM_GRF_AT = 8 + 80  # token header (Token, Size) + offset of NumGRFRequired in the payload
_MAX_KERNELS = 100_000
_SYMBOL_TABLE = "Intel_Symbol_Table_Void_Program"  # IGC's program-scope entry, no kernel of the user's
_KERNEL_LINE = re.compile(r"^\s*- name:\s*'?([^'\s]+)'?\s*$")
_GRF_LINE = re.compile(r"^\s*grf_count:\s*(\d+)\s*$")


def kernel_grf(data: bytes, label: str = "image") -> dict[str, int]:
    """``kernel name -> registers allocated`` for a native image (zebin or legacy); empty for a
    format that records none. Raises :class:`~aotwheel.errors.InspectError` on a damaged image."""
    region = Region(data, label)
    view = open_elf(region)
    info = view.section(_ZE_INFO)
    if info is not None:
        return _zebin(bytes(view.data(info, _ZE_INFO)).decode("utf-8", "replace"))
    legacy = view.section(_LEGACY_SECTION)
    if legacy is not None:
        return _legacy(region.sub(legacy.offset, legacy.size, f"section {_LEGACY_SECTION!r}"))
    return {}


def _zebin(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    kernel: str | None = None
    for line in text.splitlines():
        if (m := _KERNEL_LINE.match(line)) is not None:
            kernel = m[1]
        elif kernel is not None and kernel != _SYMBOL_TABLE and (g := _GRF_LINE.match(line)) is not None:
            out[kernel] = int(g[1])
    return out


def _legacy(sec: Region) -> dict[str, int]:
    nkernels, program_patches = sec.unpack("<16xI4xI", 0, "SProgramBinaryHeader")
    if nkernels > _MAX_KERNELS:
        raise sec.error(0, f"patch-token program claims {nkernels} kernels")
    pos = _PROGRAM_HEADER + program_patches
    out: dict[str, int] = {}
    for _ in range(nkernels):
        name_size, patches, *heaps = sec.unpack("<12x7I", pos, "SKernelBinaryHeaderCommon")
        body = pos + _KERNEL_HEADER
        name = sec.read(body, name_size, "kernel name").split(b"\0", 1)[0].decode("utf-8", "replace")
        tokens = body + name_size + sum(heaps[:4])  # name, kernel heap, general/dynamic/surface state heaps
        end = tokens + patches
        sec.check(tokens, patches, f"patch list of kernel {name!r}")
        while tokens + 8 <= end:
            token, size = sec.unpack("<II", tokens, "patch token header")
            if size < 8 or tokens + size > end:
                raise sec.error(tokens, f"patch token {token} of {size} bytes does not fit kernel {name!r}'s patch list")
            if token == _EXECUTION_ENVIRONMENT and size >= _NUM_GRF_AT + 4 and name != _SYMBOL_TABLE:
                (out[name],) = sec.unpack("<I", tokens + _NUM_GRF_AT, "NumGRFRequired")
            tokens += size
        pos = end
    return out
