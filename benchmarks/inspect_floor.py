"""A floor for P4: what a header-only ``.tgtimg`` reader costs in pure Python on a large binary.

Not aotwheel's inspector: a minimal reader (x86-64 little-endian ELF only, no validation beyond
what it needs) that shows what ``aotwheel/formats/elf.py`` could reach by reading headers with
``struct``/``memoryview`` instead of pyelftools and by finding the ``.tgtimg`` relocations with a
bisect over the (sorted) ``.rela.dyn`` offsets instead of scanning every relocation in Python.

``python -m benchmarks.inspect_floor FILE`` prints the image count, kinds, kernel count and the
median of 7 timings with and without the distinct-kernel count (``.tgtsym``).
"""

from __future__ import annotations

import bisect
import mmap
import statistics
import struct
import sys
import time
from dataclasses import dataclass

_R_X86_64_RELATIVE = 8


@dataclass
class Floor:
    """What the minimal reader found."""

    images: int
    kinds: dict[bytes, int]  # first 4 bytes of each image -> count
    kernels: int | None


def read(path: str, *, count_kernels: bool = True) -> Floor:
    """Images listed in ``.tgtimg`` (addresses from RELATIVE relocations), their magic, kernels."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    mv = memoryview(mm)
    try:
        phoff, shoff = struct.unpack_from("<QQ", mm, 32)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", mm, 54)
        # (name, type, flags, addr, offset, size, link, info, align, entsize)
        secs = [struct.unpack_from("<IIQQQQIIQQ", mm, shoff + i * shentsize) for i in range(shnum)]
        strtab = secs[shstrndx][4]
        by_name = {bytes(mm[strtab + s[0]: mm.find(b"\0", strtab + s[0])]): s for s in secs}
        loads = []
        for i in range(phnum):
            p_type, _flags, p_off, p_vaddr, _paddr, p_filesz = struct.unpack_from("<IIQQQQ", mm, phoff + i * phentsize)
            if p_type == 1:  # PT_LOAD
                loads.append((p_vaddr, p_off, p_filesz))
        tgt = by_name[b".tgtimg"]
        t_addr, t_off, t_size = tgt[3], tgt[4], tgt[5]
        entries = mv[t_off: t_off + t_size].cast("Q")
        addrs, sizes = entries[0::2].tolist(), entries[1::2].tolist()
        rela = by_name.get(b".rela.dyn")
        if rela is not None:
            table = mv[rela[4]: rela[4] + rela[5]].cast("Q")
            offsets = table[0::3].tolist()
            lo, hi = bisect.bisect_left(offsets, t_addr), bisect.bisect_left(offsets, t_addr + t_size)
            for k in range(lo, hi):
                slot, rem = divmod(offsets[k] - t_addr, 16)
                if rem == 0 and (table[3 * k + 1] & 0xFFFFFFFF) == _R_X86_64_RELATIVE:
                    addrs[slot] = table[3 * k + 2]
            table.release()
        kinds: dict[bytes, int] = {}
        for addr in addrs:
            for vaddr, off, filesz in loads:
                if vaddr <= addr < vaddr + filesz:
                    magic = bytes(mm[off + addr - vaddr: off + addr - vaddr + 4])
                    kinds[magic] = kinds.get(magic, 0) + 1
                    break
        kernels = None
        if count_kernels:
            sym = by_name[b".tgtsym"]
            kernels = len({e.partition(b".")[2] for e in mm[sym[4]: sym[4] + sym[5]].split(b"\0") if e})
        entries.release()
        return Floor(len(sizes), kinds, kernels)
    finally:
        mv.release()
        mm.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.inspect_floor FILE", file=sys.stderr)
        return 2
    print(read(args[0]))
    for count in (True, False):
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            read(args[0], count_kernels=count)
            times.append(time.perf_counter() - t0)
        print(f"count_kernels={count}: median {statistics.median(times) * 1e3:.1f} ms, min {min(times) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
