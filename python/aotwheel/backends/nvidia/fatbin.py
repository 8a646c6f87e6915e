"""NVIDIA fat binaries: the ``.nv_fatbin`` section of a CUDA host binary, or a ``.fatbin`` file.

Layout (docs/formats.md §5, checked against nvcc 13.0 output): a sequence of containers
``{u32 magic 0xBA55ED50; u16 version; u16 header_size; u64 fat_size}``, each followed by
``fat_size`` bytes of entries ``{u16 kind; u16 version; u32 header_size; u64 size;
u32 compressed_size; u32 options_offset; u16 minor; u16 major; u32 arch; u32 obj_name_offset;
u32 obj_name_len; u64 flags; u64 zero; u64 decompressed_size}`` (64 bytes, longer headers carry an
options block), the payload right after the header. Containers in a section are padded to 8 bytes.

Compressed payloads (flag 0x8000: zstd, nvcc 13's default for PTX; flag 0x2000: LZ4 block, what
``--compress-mode=speed`` writes) are decompressed only by :func:`entry_payload`, with a cap.

Libraries also keep containers outside ``.nv_fatbin`` and load them with ``cuModuleLoadData``
(cuFFT 12 in ``.ldata``, cuFFT 11 in ``.data``, cuBLASLt in ``.cask_resource``): :func:`scan_sections`
finds them by magic in every data section, and keeps a match only when its structure holds
(:func:`_checked_container`), skipping each container's body once found, so the scan reads the
gaps between containers and nothing twice.

Both walks also exist in C (``aotwheel._fastscan.fatbin``, csrc/fastscan_core.h ``fs_fatbin_*``:
one call per section, FatbinEntry tuples made there); the Python loops here are the fallback
when it is not built or ``AOTWHEEL_NO_FASTSCAN=1``, and answer the same (tests/test_fastscan_cuda.py).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import NamedTuple

from aotwheel.formats.region import Region

MAGIC = 0xBA55ED50
MAGIC_BYTES = MAGIC.to_bytes(4, "little")
SECTIONS = (".nv_fatbin", "__nv_relfatbin")  # linked code; relocatable (-rdc) objects

KIND_PTX = 1
KIND_CUBIN = 2
KIND_LTOIR = 8  # NVVM LTO IR for nvJitLink (cuFFT 12's callback kernels): no cuModuleLoadData image, not listed
_KINDS = {KIND_PTX: "ptx", KIND_CUBIN: "cubin", KIND_LTOIR: "ltoir"}

# Entry flags (measured with nvcc 13.0 -gencode / --compress-mode variants).
FLAG_64BIT = 0x1
FLAG_DEBUG = 0x2
FLAG_LINUX = 0x10
FLAG_COMPRESSED_LZ4 = 0x2000
FLAG_COMPRESSED_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000  # sm_90a / compute_90a
FLAG_FAMILY_SPECIFIC = 0x200000  # sm_100f / compute_100f

_CONTAINER = "<IHHQ"  # 16 bytes
_ENTRY = "<HHIQIIHHIIIQQQ"  # 64 bytes
_ENTRY_SIZE = 64
_CONTAINER_S = struct.Struct(_CONTAINER)
_ENTRY_S = struct.Struct(_ENTRY)
_MAX_ENTRIES = 1 << 16  # per container; real libraries hold hundreds
_MAX_ARCH = 255  # sm_20 .. sm_121 today: an arch field beyond this is not an entry

# Sections scanned for containers besides SECTIONS: allocated data of any name (vendor sections
# such as .cask_resource included), never code, symbol/string/relocation tables, unwind or debug
# data, whose bytes can hold the magic by chance but never a container.
_NOT_SCANNED = frozenset({
    ".text", ".init", ".fini", ".plt", ".plt.got", ".plt.sec", ".eh_frame", ".eh_frame_hdr", ".gcc_except_table",
    ".got", ".got.plt", ".init_array", ".fini_array", ".dynamic", ".comment", ".interp", ".stapsdt.base",
    ".nvFatBinSegment", "__nv_module_id", ".tgtimg", ".tgtsym", ".hip_fatbin", ".llvm.offloading",
    *SECTIONS,
})
_OTHER_DEVICE_CODE = ("__CLANG_OFFLOAD_BUNDLE__", "OFFLOAD_DEVICE_CODE")  # Intel's/AMD's images: never NVIDIA's
# Sections only CUDA host code has (nvcc's registration data): a binary without any is not scanned,
# so a large SYCL or HIP library costs nothing here (and its pages are not read).
CUDA_MARKERS = (".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment", "__nv_module_id")
_READ_IN_ORDER = 64 << 10  # scanned sections this large are read in order (madvise MADV_SEQUENTIAL)
DEFAULT_CAP = 1 << 30  # largest decompressed payload entry_payload() will produce


class FatbinEntry(NamedTuple):
    """One image in a fat binary: a cubin for ``sm_<arch>`` or PTX for ``compute_<arch>``.

    A named tuple, not a dataclass: cuFFT holds 11k of them, made from the C scanner's rows
    (aotwheel._fastscan.fatbin) at a fraction of a frozen dataclass's cost."""

    offset: int  # file offset of the entry header
    kind: str  # "cubin" | "ptx" | "ltoir" | "unknown"
    kind_code: int
    arch: int  # 90 for sm_90 / compute_90
    arch_specific: bool  # the "a" variant (sm_90a): runs on exactly that arch
    family_specific: bool  # the "f" variant (sm_100f)
    version: tuple[int, int]  # PTX ISA version for PTX, cubin format version for ELF
    flags: int
    header_size: int
    payload_offset: int  # file offset of the stored bytes
    payload_size: int  # stored bytes, padding included
    compressed_size: int  # 0 when not compressed
    decompressed_size: int  # 0 when not compressed
    compression: str | None  # "zstd" | "lz4" | None
    options: str | None  # ptxas options recorded with the image (-Xptxas), when printable
    name: str | None
    container: int  # index of the container within the binary
    target: str  # "sm_90", "sm_90a", "sm_100f" for cubins; "compute_90" etc. for PTX (_target)

    @property
    def compressed(self) -> bool:
        return self.compression is not None

    @property
    def stored_size(self) -> int:
        """Bytes of the payload that hold data (the compressed size when compressed; the
        readers set it only then)."""
        return self.compressed_size or self.payload_size

    def to_dict(self) -> dict[str, object]:
        return {
            "target": self.target,
            "kind": self.kind,
            "arch": self.arch,
            "arch_specific": self.arch_specific,
            "family_specific": self.family_specific,
            "version": "%d.%d" % self.version,
            "flags": f"{self.flags:#x}",
            "offset": self.offset,
            "size": self.payload_size,
            "compression": self.compression,
            "decompressed_size": self.decompressed_size or None,
            "options": self.options,
        }


class FatbinContainer(NamedTuple):
    offset: int  # file offset of the container header
    version: int
    size: int  # fat_size: bytes of entries after the header
    entries: tuple[FatbinEntry, ...]
    section: str | None = None  # ".nv_fatbin", "__nv_relfatbin", or None for a raw file

    @property
    def relocatable(self) -> bool:
        """Pre-link images (-rdc) kept for a later device link: the driver never loads them."""
        return self.section == "__nv_relfatbin"


@dataclass
class Fatbin:
    """Every container and entry found; ``section`` names the ELF sections read (None for a raw file).

    :attr:`entries` are the images the CUDA driver can load (``.nv_fatbin``, or a raw fat
    binary); :attr:`relocatable_entries` are ``-rdc`` objects in ``__nv_relfatbin``, input for a
    later device link only (cuobjdump lists them only for files without ``.nv_fatbin``).
    """

    path: str
    section: str | None
    containers: tuple[FatbinContainer, ...]

    @property
    def entries(self) -> tuple[FatbinEntry, ...]:
        return tuple(e for c in self.containers if not c.relocatable for e in c.entries)

    @property
    def relocatable_entries(self) -> tuple[FatbinEntry, ...]:
        return tuple(e for c in self.containers if c.relocatable for e in c.entries)

    @property
    def cubin_targets(self) -> tuple[str, ...]:
        """Distinct ``sm_XY[a|f]`` names, sorted by arch."""
        return _distinct(e for e in self.entries if e.kind == "cubin")

    @property
    def ptx_targets(self) -> tuple[str, ...]:
        """Distinct ``compute_XY[a|f]`` names, sorted by arch."""
        return _distinct(e for e in self.entries if e.kind == "ptx")

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "section": self.section,
            "containers": len(self.containers),
            "cubin": list(self.cubin_targets),
            "ptx": list(self.ptx_targets),
            "entries": [e.to_dict() for e in self.entries],
            "relocatable": [e.to_dict() for e in self.relocatable_entries],
        }


def _target(kind: str, arch: int, flags: int) -> str:
    """FatbinEntry.target: ``compute_<arch>`` for PTX, else ``sm_<arch>``, with ``a`` for an
    arch-specific and ``f`` for a family-specific image."""
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
    return f"{'compute' if kind == 'ptx' else 'sm'}_{arch}{suffix}"


def _distinct(entries) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    seen = {(e.arch, e.target) for e in entries}
    return tuple(t for _, t in sorted(seen))


def is_fatbin(head: bytes) -> bool:
    """True if ``head`` starts with a fat binary container."""
    return head[:4] == MAGIC_BYTES


def parse_fatbin(region: Region, *, path: str | None = None, section: str | None = None) -> Fatbin:
    """Parse every container in ``region`` (a ``.nv_fatbin`` section or a whole ``.fatbin`` file).

    Zero bytes between containers (section alignment) are skipped; anything else that is not a
    container header raises :class:`~aotwheel.errors.InspectError` naming file and offset.
    The C scanner reads it when built (the same containers); where it doubts, this loop raises.
    """
    found = _fast(region, strict=True, first_index=0)
    if found is not None:
        return Fatbin(path or region.label, section, tuple(_containers(found[0], found[1], section, 0)))
    containers: list[FatbinContainer] = []
    off = 0
    while True:
        off = _skip_padding(region, off)
        if off >= len(region):
            break
        magic, version, header_size, fat_size = region.unpack(_CONTAINER, off, "fat binary container header")
        if magic != MAGIC:
            raise region.error(off, f"bad fat binary magic {magic:#010x} (expected {MAGIC:#010x})")
        if header_size < 16:
            raise region.error(off, f"fat binary container header size {header_size} is below 16")
        body = region.sub(off + header_size, fat_size, "fat binary container")
        entries = _entries(body, len(containers))
        containers.append(FatbinContainer(region.where(off), version, fat_size, entries, section))
        off += header_size + fat_size
    return Fatbin(path or region.label, section, tuple(containers))


def scannable(name: str, sh_type: int | str) -> bool:
    """Whether section ``name`` may hold fat binary containers that :func:`scan_sections` looks for."""
    return (sh_type == "SHT_PROGBITS" and name not in _NOT_SCANNED
            and not name.startswith((".debug", ".note", ".gnu", ".rela", ".rel.", *_OTHER_DEVICE_CODE)))


def scan_sections(region: Region, sections, first_index: int = 0) -> tuple[list[FatbinContainer], int]:  # type: ignore[no-untyped-def]
    """Containers found by magic in the :func:`scannable` ones of ``sections`` (ELF section
    headers of ``region``), numbered from ``first_index``; and how many magic matches their
    structure rejected (chance bytes in data, never reported as images). Only in a CUDA host
    binary (one of :data:`CUDA_MARKERS` present): anything else is not read at all."""
    containers: list[FatbinContainer] = []
    rejected = 0
    for name, sub in _scanned(region, sections):
        found, bad = _scan(sub, name, first_index + len(containers))
        containers += found
        rejected += bad
    return containers, rejected


def scan_entries(region: Region, sections) -> tuple[list[tuple[str, list[FatbinEntry]]], int]:  # type: ignore[no-untyped-def]
    """:func:`scan_sections`' entries per section (section name, entries in file order), and the
    rejected matches, without a FatbinContainer per container (cuFFT keeps 23,983 in ``.ldata``):
    what the inspector reads. One C call per section when the scanner is built."""
    out: list[tuple[str, list[FatbinEntry]]] = []
    rejected, first = 0, 0
    for name, sub in _scanned(region, sections):
        fast = _fast(sub, strict=False, first_index=first)
        if fast is None:
            found, bad = _scan(sub, name, first)
            entries, count = [e for c in found for e in c.entries], len(found)
        else:
            entries, count, bad = fast[0], len(fast[1]) // 24, fast[2]
        first += count
        rejected += bad
        if entries:
            out.append((name, entries))
    return out, rejected


def _scanned(region: Region, sections):  # type: ignore[no-untyped-def]
    """(name, sub-region) of each non-empty :func:`scannable` section, in a CUDA host binary only."""
    if not any(sec.name in CUDA_MARKERS for sec in sections):
        return
    from aotwheel.formats.region import advise

    for sec in sections:
        if sec.size and scannable(sec.name, sec.type):
            # Searched byte by byte between containers: read in order, not a fault per page of a
            # cold MADV_RANDOM map (onnxruntime-gpu's 27 MB .rodata: 1.45 s cold, issue 39).
            big = sec.size >= _READ_IN_ORDER
            if big:
                advise(region.buf, region.start + sec.offset, sec.size, "MADV_SEQUENTIAL")
            yield sec.name, region.sub(sec.offset, sec.size, f"section {sec.name}")
            if big:
                advise(region.buf, region.start + sec.offset, sec.size, "MADV_RANDOM")


def _fast(region: Region, *, strict: bool, first_index: int) -> tuple[list[FatbinEntry], bytes, int] | None:
    """The C scanner's answer for ``region`` (fastscan.fatbin): entries, containers as u64
    triples, rejected matches; None without it, or where it doubts (parse_fatbin then raises)."""
    from aotwheel.formats import fastscan

    found = fastscan.fatbin(region, FatbinEntry, strict=strict, first_index=first_index)
    if found is not None and any(e.compression and not _plausible(e.compressed_size, e.decompressed_size) for e in found[0]):
        return None  # a damaged header (C does not judge sizes): the Python loop's answer, an error or a rejected match
    return found


def _containers(entries: list[FatbinEntry], spans: bytes, section: str | None, first_index: int) -> list[FatbinContainer]:
    """The C scanner's containers with their entries (in file order, numbered from first_index)."""
    triples = list(struct.iter_unpack("=QQQ", spans))
    groups: list[list[FatbinEntry]] = [[] for _ in triples]
    for e in entries:
        groups[e.container - first_index].append(e)
    return [FatbinContainer(off, version, size, tuple(g), section) for (off, version, size), g in zip(triples, groups)]


def _scan(region: Region, section: str, first_index: int) -> tuple[list[FatbinContainer], int]:
    """The containers found by magic in ``region`` whose structure holds, and the matches
    rejected (the C scanner when built, else this loop: the same answers)."""
    found = _fast(region, strict=False, first_index=first_index)
    if found is not None:
        return _containers(found[0], found[1], section, first_index), found[2]
    buf, lo, hi = region.buf, region.start, region.start + region.size
    find = buf.find if hasattr(buf, "find") else bytes(buf).find  # mmap and bytes search in C
    out: list[FatbinContainer] = []
    rejected = 0
    pos = lo
    while (at := find(MAGIC_BYTES, pos, hi)) >= 0:
        off = at - lo
        fat_size = _checked_container(region, off)
        if fat_size is None:
            rejected += 1
            pos = at + 4  # the magic cannot overlap itself
            continue
        entries = _checked_entries(buf, at + 16, fat_size, region.where(off + 16) - (at + 16), first_index + len(out))
        out.append(FatbinContainer(region.where(off), 1, fat_size, entries, section))
        pos = at + 16 + fat_size
    return out, rejected


def _checked_entries(buf, at: int, fat_size: int, shift: int, container: int) -> tuple[FatbinEntry, ...]:  # type: ignore[no-untyped-def]
    """The entries of a container :func:`_checked_container` accepted (every header and payload
    inside it), read straight from ``buf`` (``at`` = the body's index in it; file offset = index +
    ``shift``): the same FatbinEntry values as :func:`_entries`, without its per-field checks."""
    out: list[FatbinEntry] = []
    off, end = at, at + fat_size
    while off < end:
        (kind, _ver, hsize, size, csize, opt_off, minor, major, arch, name_off, name_len, flags, _zero, dsize) = _ENTRY_S.unpack_from(buf, off)
        if kind != KIND_LTOIR:
            compression = "zstd" if flags & FLAG_COMPRESSED_ZSTD else "lz4" if flags & FLAG_COMPRESSED_LZ4 else None
            options = None
            if opt_off and opt_off + 8 <= hsize:
                (length,) = struct.unpack_from("<I", buf, off + opt_off + 4)
                if length and opt_off + 8 + length <= hsize:
                    raw = bytes(buf[off + opt_off + 8 : off + opt_off + 8 + length]).rstrip(b"\0 ")
                    text = raw.decode("ascii") if raw and raw.isascii() else ""
                    options = text if text and text.isprintable() else None
            name = None
            if name_off and name_len and name_off + name_len <= hsize + size:
                name = bytes(buf[off + name_off : off + name_off + name_len]).rstrip(b"\0").decode("utf-8", "replace")
            kind_name = _KINDS.get(kind, "unknown")
            out.append(FatbinEntry(off + shift, kind_name, kind, arch, bool(flags & FLAG_ARCH_SPECIFIC),
                                   bool(flags & FLAG_FAMILY_SPECIFIC), (major, minor), flags, hsize, off + hsize + shift, size,
                                   csize if compression else 0, dsize if compression else 0, compression, options, name, container,
                                   _target(kind_name, arch, flags)))
        off += hsize + size
    return tuple(out)


def _checked_container(region: Region, off: int) -> int | None:
    """``fat_size`` if a real container starts at ``off``, else None: version 1, a 16-byte header,
    entries of a known kind and a plausible arch whose headers and payloads tile the body exactly,
    all inside the region. Reads headers only; allocates nothing a header claims."""
    if off + 16 > region.size:
        return None
    # Bounds are checked here before every read, so the headers are unpacked from the buffer
    # directly (this runs once per container: 24k times in cuFFT).
    buf, start = region.buf, region.start
    _magic, version, header_size, fat_size = _CONTAINER_S.unpack_from(buf, start + off)
    if version != 1 or header_size != 16 or fat_size < _ENTRY_SIZE or off + 16 + fat_size > region.size:
        return None
    eo, count, base = 0, 0, start + off + 16
    while eo < fat_size:
        if eo + _ENTRY_SIZE > fat_size or count >= _MAX_ENTRIES:
            return None
        (kind, _ver, hsize, size, csize, _opt, _minor, _major, arch, _noff, _nlen, flags, _z, _dsize) = _ENTRY_S.unpack_from(
            buf, base + eo)
        if kind not in _KINDS or hsize < _ENTRY_SIZE or not 0 < arch <= _MAX_ARCH or eo + hsize + size > fat_size:
            return None
        if flags & (FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD) and (csize > size or kind != KIND_LTOIR and not _plausible(csize, _dsize)):
            return None
        eo += hsize + size
        count += 1
    return fat_size


def _plausible(csize: int, dsize: int) -> bool:
    """Whether a compressed entry's declared sizes can be true: a decompressed size within the
    bound every compressed image reader here keeps (:func:`aotwheel.formats.zstd.output_cap`; LZ4
    expands at most 255-fold), so a flipped header is damage without decompressing (--deep)."""
    from aotwheel.formats.zstd import output_cap

    return dsize <= output_cap(csize)


def _skip_padding(region: Region, off: int) -> int:
    """The offset of the next non-zero byte: sections pad containers with zeros (8-byte alignment,
    sometimes more at the end), and a zero word can never start a container."""
    while off < len(region):
        chunk = region.read(off, min(1 << 16, len(region) - off), "padding")
        rest = chunk.lstrip(b"\0")
        if rest:
            return off + len(chunk) - len(rest)
        off += len(chunk)
    return off


def _entries(body: Region, container: int) -> tuple[FatbinEntry, ...]:
    out: list[FatbinEntry] = []
    off = 0
    while off < len(body):
        if len(out) >= _MAX_ENTRIES:
            raise body.error(off, f"more than {_MAX_ENTRIES} entries in one container")
        body.check(off, _ENTRY_SIZE, "fat binary entry header")
        (kind, _ver, header_size, size, csize, opt_off, minor, major, arch, name_off, name_len, flags, _zero, dsize) = _ENTRY_S.unpack_from(
            body.buf, body.start + off)
        if header_size < _ENTRY_SIZE:
            raise body.error(off, f"fat binary entry header size {header_size} is below {_ENTRY_SIZE}")
        body.check(off, header_size + size, "fat binary entry")
        compression = "zstd" if flags & FLAG_COMPRESSED_ZSTD else "lz4" if flags & FLAG_COMPRESSED_LZ4 else None
        if compression and csize > size:
            raise body.error(off, f"compressed size {csize} exceeds the stored payload ({size} bytes)")
        if compression and kind != KIND_LTOIR and not _plausible(csize, dsize):
            raise body.error(off, f"entry header declares {dsize} decompressed bytes for {csize} compressed ones "
                                  "(more than any compressor makes of them): the header is damaged")
        if kind == KIND_LTOIR:  # checked, not kept: nvJitLink input, never a module (12,728 in cuFFT)
            off += header_size + size
            continue
        out.append(
            FatbinEntry(
                offset=body.where(off),
                kind=_KINDS.get(kind, "unknown"),
                kind_code=kind,
                arch=arch,
                arch_specific=bool(flags & FLAG_ARCH_SPECIFIC),
                family_specific=bool(flags & FLAG_FAMILY_SPECIFIC),
                version=(major, minor),
                flags=flags,
                header_size=header_size,
                payload_offset=body.where(off + header_size),
                payload_size=size,
                compressed_size=csize if compression else 0,
                decompressed_size=dsize if compression else 0,
                compression=compression,
                options=_options(body, off, header_size, opt_off),
                name=_name(body, off, header_size + size, name_off, name_len),
                container=container,
                target=_target(_KINDS.get(kind, "unknown"), arch, flags),
            )
        )
        off += header_size + size
    return tuple(out)


def _options(body: Region, off: int, header_size: int, opt_off: int) -> str | None:
    # The options block sits inside the header: {u32 ?, u32 length, char[length]}.
    if not opt_off or opt_off + 8 > header_size:
        return None
    (length,) = body.unpack("<I", off + opt_off + 4, "fat binary options length")
    if length == 0 or opt_off + 8 + length > header_size:
        return None
    raw = body.read(off + opt_off + 8, length, "fat binary options").rstrip(b"\0 ")
    # Family/arch-specific cubins keep binary compatibility data here, not an option string.
    text = raw.decode("ascii") if raw and raw.isascii() else ""
    return text if text and text.isprintable() else None


def _name(body: Region, off: int, limit: int, name_off: int, name_len: int) -> str | None:
    if not name_off or not name_len or name_off + name_len > limit:
        return None
    return body.read(off + name_off, name_len, "fat binary object name").rstrip(b"\0").decode("utf-8", "replace")


def read_fatbin(path: str | os.PathLike[str]) -> Fatbin | None:
    """The fat binary in ``path``: a raw fat binary file, or the ``.nv_fatbin`` /
    ``__nv_relfatbin`` sections of an ELF (all containers of both). ``None`` if it has none.

    The file is memory-mapped; only the ELF headers and the fat binary headers are read.
    """
    name = os.fspath(path)
    with open(name, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return None
        import mmap

        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            region = Region(mm, name)
            return _read_region(region, name)


def _read_region(region: Region, name: str) -> Fatbin | None:
    head = region.head(4)
    if is_fatbin(head):
        return parse_fatbin(region, path=name)
    if head != b"\x7fELF":
        return None
    if len(region) < 64:  # the smallest ELF header (ELF64); ELF32 is 52, but no CUDA host is 32-bit
        raise region.error(0, f"ELF file of {len(region)} bytes is shorter than its header")
    from aotwheel.formats.elf import open_elf

    view = open_elf(region)
    containers: list[FatbinContainer] = []
    found: list[str] = []
    for sec_name in SECTIONS:
        sec = view.section(sec_name)
        if sec is None or sec.type == "SHT_NOBITS" or not sec.size:
            continue
        found.append(sec_name)
        sub = region.sub(sec.offset, sec.size, f"section {sec_name}")
        fat = parse_fatbin(sub, path=name, section=sec_name)
        base = len(containers)
        containers.extend(_renumber(c, base + i) for i, c in enumerate(fat.containers))
    scanned, _ = scan_sections(region, view.sections, len(containers))
    containers += scanned
    found += list(dict.fromkeys(c.section for c in scanned if c.section))
    if not found:
        return None
    return Fatbin(name, ",".join(found), tuple(containers))


def _renumber(c: FatbinContainer, index: int) -> FatbinContainer:
    if all(e.container == index for e in c.entries):
        return c
    return c._replace(entries=tuple(e._replace(container=index) for e in c.entries))


def entry_payload(path: str | os.PathLike[str], entry: FatbinEntry, *, decompress: bool = True, cap: int = DEFAULT_CAP) -> bytes:
    """The bytes of one entry: the cubin ELF or the PTX text (NUL padding stripped for PTX).

    Compressed payloads are decompressed when ``decompress`` is true, refusing anything that
    declares or produces more than ``cap`` bytes.
    """
    name = os.fspath(path)
    import mmap

    with open(name, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return region_payload(Region(mm, name), entry, decompress=decompress, cap=cap)


# LZ4 cannot expand a block more than 255-fold (a length byte of 255 per 255 output bytes).
LZ4_MAX_RATIO = 255


def stored_region(region: Region, entry: FatbinEntry) -> Region:
    """The stored bytes of ``entry`` inside ``region`` (whose offsets ``entry`` was read with)."""
    return region.sub(entry.payload_offset - region.where(0), entry.stored_size, f"{entry.target} payload",
                      label=f"{region.label} ({entry.target} {entry.kind} entry)")


def region_payload(region: Region, entry: FatbinEntry, *, decompress: bool = True, cap: int = DEFAULT_CAP) -> bytes:
    """:func:`entry_payload` for an entry of ``region``. A compressed entry is refused, with one
    line naming it, before anything is allocated when its declared size is above ``cap`` or more
    than its stored bytes can expand to, and after decompression when its data is corrupt or
    decodes to another size than declared; cubins must then be ELF files."""
    stored = stored_region(region, entry)  # its label names the entry in every error
    what = "the entry"
    if not (decompress and entry.compressed):
        data = stored.read(0, len(stored), "payload")
    elif entry.decompressed_size > cap:
        raise stored.error(0, f"{what} declares {entry.decompressed_size} decompressed bytes, above the {cap}-byte cap")
    elif entry.compression == "zstd":
        from aotwheel.formats import zstd

        data = zstd.decompress(stored, cap=min(cap, entry.decompressed_size or cap))
        if entry.decompressed_size and len(data) != entry.decompressed_size:
            raise stored.error(0, f"{what} declares {entry.decompressed_size} decompressed bytes but its zstd data holds {len(data)}")
    elif not entry.decompressed_size:
        raise stored.error(0, f"{what} is LZ4-compressed but declares no decompressed size")
    elif entry.decompressed_size > LZ4_MAX_RATIO * len(stored) + 64:
        raise stored.error(0, f"{what} declares {entry.decompressed_size} decompressed bytes, more than its "
                              f"{len(stored)} LZ4 bytes can hold")
    else:
        data = lz4_block_decompress(stored, entry.decompressed_size)
    if entry.kind == "ptx" and (decompress or not entry.compressed):
        data = data.rstrip(b"\0")
    if decompress and entry.kind == "cubin" and data[:4] != b"\x7fELF":
        raise stored.error(0, f"{what} is not an ELF cubin after {'decompression' if entry.compressed else 'reading'}")
    if decompress and entry.kind == "cubin" and (problem := cubin_problem(data, entry.arch)) is not None:
        # LZ4 has no checksum: a scrambled payload still decodes, so what it decoded to is checked
        raise stored.error(0, f"{what} is not a well-formed cubin after {'decompression' if entry.compressed else 'reading'}: {problem}")
    return data


STO_CUDA_ENTRY = 0x10  # st_other of a cubin symbol that is a kernel (__global__), not a device function


EM_CUDA = 190


def cubin_problem(data: bytes, arch: int) -> str | None:
    """What makes ``data`` no cubin for ``arch`` (``None`` when it is one): an ELF64 little-endian
    file of machine EM_CUDA whose flags name the arch (bits 0-7 before CUDA 12.8's ABI, 8-15 since)
    and whose section headers, string table and sections all lie inside it."""
    if len(data) < 64 or data[:6] != b"\x7fELF\x02\x01":
        return "no ELF64 little-endian header"
    (machine,) = struct.unpack_from("<H", data, 18)
    (flags,) = struct.unpack_from("<I", data, 48)
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if machine != EM_CUDA:
        return f"machine {machine}, not CUDA ({EM_CUDA})"
    if arch not in (flags & 0xFF, (flags >> 8) & 0xFF):
        return f"its ELF flags {flags:#x} name another arch than {arch}"
    if shentsize != 64 or shnum == 0 or shoff + shnum * 64 > len(data) or shstrndx >= shnum:
        return "its section header table is not inside it"
    for i in range(shnum):
        _name, sh_type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + i * 64)
        if sh_type != 8 and offset + size > len(data):  # SHT_NOBITS occupies nothing
            return f"section {i} ({size} bytes at {offset}) runs past its end ({len(data)} bytes)"
    return None


def cubin_kernels(data: bytes) -> list[str]:
    """The kernel (entry function) names of a cubin: its ELF64 symbols of type STT_FUNC marked
    STO_CUDA_ENTRY. ``[]`` for anything that is not a well-formed little-endian ELF64."""
    if len(data) < 64 or data[:5] != b"\x7fELF\x02" or data[5] != 1:
        return []
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(data):
        return []
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names: list[str] = []
    for _name, sh_type, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if sh_type != 2 or entsize != 24 or offset + size > len(data) or link >= shnum:  # SHT_SYMTAB
            continue
        str_off, str_size = sections[link][4], sections[link][5]
        if str_off + str_size > len(data):  # the string table's header fields, bounded before use
            continue
        for at in range(offset, offset + size - 23, 24):
            st_name, st_info, st_other = struct.unpack_from("<IBB", data, at)
            if st_info & 0xF == 2 and st_other & STO_CUDA_ENTRY and st_name < str_size:
                end = data.find(b"\0", str_off + st_name, str_off + str_size)
                names.append(data[str_off + st_name : end if end >= 0 else str_off + str_size].decode("utf-8", "replace"))
    return names


def lz4_block_decompress(region: Region, limit: int) -> bytes:
    """Decode one LZ4 block (no frame) into exactly ``limit`` bytes with the ``lz4`` package.

    nvcc's ``--compress-mode=speed`` stores payloads this way; the block may be followed by
    zero padding up to the entry's alignment, which LZ4 does not allow, so up to 64 trailing
    NUL bytes are dropped until the block decodes. ``lz4.block`` never writes past ``limit``.
    """
    try:
        import lz4.block
    except ImportError:  # pragma: no cover - lz4 is a dependency; a broken install says how to fix it
        raise region.error(0, "LZ4-compressed entry needs the 'lz4' package; pip install lz4") from None
    src = region.read(0, len(region), "LZ4 block")
    padding = len(src) - len(src.rstrip(b"\0"))
    error = "empty block"
    for drop in range(min(padding, 64) + 1):
        try:
            out = lz4.block.decompress(src[: len(src) - drop], uncompressed_size=limit)
        except lz4.block.LZ4BlockError as exc:
            error = str(exc).split(":")[0]
            continue
        if len(out) == limit:
            return out
        error = f"decodes to {len(out)} bytes, not the declared {limit}"
    raise region.error(0, f"LZ4 block is corrupt or truncated ({error})")
