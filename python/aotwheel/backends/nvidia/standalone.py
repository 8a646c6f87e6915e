"""Standalone NVIDIA images outside fat binaries: a CUDA ELF (a cubin, what ``nvcc -cubin``
writes and ``cuModuleLoadData`` takes) and PTX text (a NUL-terminated string the driver
JIT-compiles), as libraries keep them in their data sections (issue 39: onnxruntime-gpu's fused
attention kernels, 114 cubins in ``.rodata``).

A cubin's target is in its ELF header (checked against nvcc 11-13 output): ``EI_OSABI`` 0x33
with ``EI_ABIVERSION`` 7 and older keep the SM in ``e_flags & 0xff`` (the virtual one in bits
16-23) and mark ``sm_90a`` with 0x800; ``EI_OSABI`` 0x41 (nvcc 13, ``EI_ABIVERSION`` 8) keeps it in
bits 8-15 and no arch-specific mark (``sm_90a`` and ``sm_90`` write the same header).
PTX names its target on its ``.target`` line (PTX ISA, "PTX Module Directives").
"""

from __future__ import annotations

import struct

from aotwheel.formats.elf import standalone_size
from aotwheel.formats.region import Region

EM_CUDA = 190
ELF_MAGIC = b"\x7fELF"
PTX_MAGIC = b".version "  # the first directive of a PTX module (comments may come before it)
_OSABI_CUDA_OLD, _OSABI_CUDA_V8 = 0x33, 0x41
_ACCELERATORS_OLD = 0x800
_MAX_PTX = 1 << 30  # a PTX text longer than this is not read
_PTX_HEAD = 4096  # .version, .target and .address_size come within this many bytes


def cubin_size(region: Region) -> int | None:
    """The bytes of the CUDA ELF at ``region``'s start (formats.elf.standalone_size), else ``None``."""
    return standalone_size(region, (EM_CUDA,))


def cubin_target(region: Region) -> str | None:
    """``sm_80``, ``sm_90a`` from a CUDA ELF's header, ``None`` for an OS ABI or SM it does not name."""
    head = region.read(0, 52, "CUDA ELF header")
    (flags,) = struct.unpack_from("<I" if head[5] == 1 else ">I", head, 48)
    if head[7] == _OSABI_CUDA_V8:
        sm, suffix = (flags >> 8) & 0xFF, ""
    elif head[7] == _OSABI_CUDA_OLD:
        sm, suffix = flags & 0xFF, "a" if flags & _ACCELERATORS_OLD else ""
    else:
        return None
    return f"sm_{sm}{suffix}" if 20 <= sm < 200 else None


def ptx_text(region: Region) -> tuple[int, str] | None:
    """(bytes up to and with its NUL, ``compute_XY``) of the PTX module whose ``.version``
    directive starts ``region``; ``None`` unless the text has a ``.version M.m`` line, a
    ``.target sm_XY`` line next (blank lines and comments between), an ``.entry`` or ``.func``,
    and ends with a NUL inside ``region`` (cuModuleLoadData reads a C string)."""
    head = region.read(0, min(region.size, _PTX_HEAD), "PTX text")
    eol = head.find(b"\n")
    if eol < 0:
        return None
    major, dot, minor = head[len(PTX_MAGIC) : eol].strip().partition(b".")
    if not (dot and major.isdigit() and minor.isdigit() and len(major) <= 2 and len(minor) <= 2):
        return None
    target = None
    for line in head[eol + 1 :].split(b"\n")[:16]:
        line = line.strip()
        if not line or line.startswith(b"//"):
            continue
        if line.startswith(b".target sm_"):
            target = line[len(b".target sm_") :].split(b",")[0].strip()
        break
    if target is None or not target.rstrip(b"af").isdigit() or len(target) > 5:
        return None
    buf, at = region.buf, region.start
    end = _find(buf, b"\0", at, at + min(region.size, _MAX_PTX))
    if end < 0 or _find(buf, b".entry", at, end) < 0 and _find(buf, b".func", at, end) < 0:
        return None
    return end + 1 - at, f"compute_{target.decode('ascii')}"


def _find(buf: object, needle: bytes, lo: int, hi: int) -> int:
    """``buf.find`` (bytes, mmap); a memoryview (no find) is copied from ``lo`` to ``hi`` first."""
    find = getattr(buf, "find", None)
    if find is not None:
        return find(needle, lo, hi)  # type: ignore[no-any-return]
    at = bytes(memoryview(buf)[lo:hi]).find(needle)  # type: ignore[arg-type]
    return at + lo if at >= 0 else -1
