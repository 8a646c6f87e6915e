"""Standalone Intel GPU images and SPIR-V modules that a library keeps in its data sections and
hands to Level Zero / OpenCL itself (issue 39: onemkl-sycl-dft's 20 zebins and 21 SPIR-V modules
in ``.rodata``).

A zebin is an ELF with ``e_machine`` EM_INTELGT (205): formats.elf.standalone_size accounts for
its bytes. A SPIR-V module has no length field, so its bytes are its instructions (SPIR-V spec
§2.3 "Physical Layout", §2.4 "Logical Layout"): the five-word header (magic, version 1.0-1.6 as
``0x00MMmm00``, generator, a non-zero bound, schema 0), then instructions of ``word count << 16 |
opcode``, the first an OpCapability; the module ends after its last OpFunctionEnd, before the
first word that cannot start an instruction (a zero word count, one running past the data, an
opcode beyond any the spec and its registered extensions define) or another module's magic.
"""

from __future__ import annotations

import struct

from aotwheel.formats.elf import standalone_size
from aotwheel.formats.region import Region

EM_INTELGT = 205
SPIRV_MAGIC = b"\x03\x02\x23\x07"  # 0x07230203, little-endian: what x86 hosts keep
_OP_CAPABILITY, _OP_MEMORY_MODEL, _OP_FUNCTION, _OP_FUNCTION_END = 17, 14, 54, 56
_MAX_OPCODE = 0x3FFF  # the registry's opcodes (vendor extension blocks included) stay below this
_MAX_BOUND = 1 << 24
_MAX_WORDS = 1 << 28  # 1 GiB of SPIR-V: a longer module is not read


def zebin_size(region: Region) -> int | None:
    """The bytes of the zebin at ``region``'s start, else ``None`` (not an EM_INTELGT ELF, or chance bytes)."""
    return standalone_size(region, (EM_INTELGT,))


def spirv_size(region: Region) -> int | None:
    """The bytes of the SPIR-V module at ``region``'s start (header + instructions up to and with
    its last OpFunctionEnd), else ``None``. Reads each instruction's first word once: bounded by
    ``region`` and ``_MAX_WORDS``."""
    if region.size < 20 + 8:
        return None
    from aotwheel.formats import fastscan

    fs = fastscan.module()
    if fs is not None and hasattr(fs, "spirv_size"):  # the same walk in C (mkl keeps 6 MB of SPIR-V in .rodata)
        return fs.spirv_size(region.buf, region.start, region.size) or None  # type: ignore[no-any-return]
    magic, version, _generator, bound, schema = struct.unpack_from("<5I", region.buf, region.start)
    if magic != 0x07230203 or version & 0xFF0000FF or version >> 16 != 1 or (version >> 8) & 0xFF > 6 \
            or not 0 < bound <= _MAX_BOUND or schema != 0:
        return None
    buf, base = region.buf, region.start
    words = min(region.size // 4, _MAX_WORDS)
    unpack = struct.Struct("<I").unpack_from
    pos, end, memory_model, first = 5, None, False, True
    while pos < words:
        (word,) = unpack(buf, base + 4 * pos)
        count, opcode = word >> 16, word & 0xFFFF
        if count == 0 or pos + count > words or opcode > _MAX_OPCODE or word == 0x07230203:
            break
        if first and opcode != _OP_CAPABILITY:
            return None
        first = False
        if opcode == _OP_MEMORY_MODEL:
            memory_model = True
        elif opcode == _OP_FUNCTION and not memory_model:
            return None  # functions come after the memory model (logical layout)
        pos += count
        if opcode == _OP_FUNCTION_END:
            end = pos
    return None if end is None or not memory_model else 4 * end
