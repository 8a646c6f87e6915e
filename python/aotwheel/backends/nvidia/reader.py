"""NVIDIA's binary readers (the :class:`aotwheel.backends.protocol.Reader` of the NVIDIA backend).

Fat binaries: a whole ``.fatbin`` file, a host ELF's ``.nv_fatbin`` (parsed whole, strictly) and
the containers libraries keep in other data sections (found by magic: :mod:`.fatbin`). One Image
per cubin/PTX entry; cubins are native targets, PTX an IR form ``ptx compute_XY``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aotwheel.backends.protocol import ReadSpec
from aotwheel.model import NVIDIA, Image, ImageKind, Target
from aotwheel.report import CudaModule

if TYPE_CHECKING:
    from aotwheel.backends.nvidia.fatbin import FatbinContainer, FatbinEntry
    from aotwheel.backends.protocol import ImageWalk
    from aotwheel.formats.elf import ElfView, HostOffload
    from aotwheel.formats.region import Region

# Whole fat binary files (fatbin.MAGIC_BYTES), and CUDA host binaries (fatbin.CUDA_MARKERS).
READS = ReadSpec(magic=(b"\x50\xed\x55\xba",), sections=(".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment", "__nv_module_id"))
_KINDS = {"cubin": ImageKind.CUBIN, "ptx": ImageKind.PTX, "unknown": ImageKind.UNKNOWN}  # fatbin.FatbinEntry.kind


def read_file(walk: ImageWalk, region: Region, kind: ImageKind) -> bool:
    """A raw fat binary file (its magic)."""
    walk.report.kind = ImageKind.FATBIN
    _walk_cuda(walk, region, None)
    return True


def read_host(walk: ImageWalk, region: Region, view: ElfView, host: HostOffload) -> None:
    _walk_cuda_sections(walk, region, view)


def read_image(walk: ImageWalk, region: Region, kind: ImageKind, img: Image, depth: int, member: str | None) -> None:
    """No embedded image kind is NVIDIA's (the spec claims none)."""


def spirv_in(img: Image, load: Callable[[], bytes], label: str) -> bytes | None:
    return None


def _walk_cuda_sections(walk: ImageWalk, region: Region, view: ElfView) -> None:
    """A host ELF's NVIDIA fat binaries: ``.nv_fatbin`` (parsed whole, strictly) and the containers
    that libraries keep in other data sections (``.ldata``, ``.data``, ``.cask_resource``: found by
    magic, each kept only when its structure holds; fatbin.scan_sections)."""
    from aotwheel.backends.nvidia.fatbin import parse_fatbin, scan_sections

    pairs: list[tuple[FatbinEntry, str | None]] = []
    nv = view.section(".nv_fatbin")
    if nv is not None and nv.type != "SHT_NOBITS" and nv.size:
        fat = parse_fatbin(region.sub(nv.offset, nv.size, "section '.nv_fatbin'"), section=".nv_fatbin")
        pairs += [(e, ".nv_fatbin") for e in fat.entries]
        walk.report.cuda_modules = _cuda_modules(walk, region, fat.containers)
    containers, _ = scan_sections(region, view.sections)  # CUDA host binaries only (fatbin.CUDA_MARKERS)
    pairs += [(e, c.section) for c in containers for e in c.entries]
    if pairs:
        _add_cuda(walk, region, pairs)


def _cuda_modules(walk: ImageWalk, region: Region, containers: Sequence[FatbinContainer]) -> list[CudaModule]:
    """``.nv_fatbin``'s containers grouped by the targets they carry, when they differ (else
    ``[]``: the file's verdict is every module's). Deep mode also names each group's kernels from
    one of its cubins (decompressed: the default mode never does)."""
    groups: dict[tuple[str, ...], list[FatbinContainer]] = {}
    for c in containers:
        key = tuple(sorted({e.target for e in c.entries if e.kind in ("cubin", "ptx")}))
        if key:
            groups.setdefault(key, []).append(c)
    if len(groups) < 2:
        return []
    out = []
    for key, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        entries = [e for c in members for e in c.entries]
        sources = list(dict.fromkeys(e.name.removeprefix("../") for e in entries if e.name))[:3]
        module = CudaModule(".nv_fatbin", len(members), list(key), sources, sum(e.stored_size for e in entries))
        if walk.deep:
            from aotwheel.backends.nvidia.fatbin import cubin_kernels, region_payload

            names: dict[str, None] = {}
            for c in members:  # one cubin of each container: the module's kernels are the same for every arch
                cubin = min((e for e in c.entries if e.kind == "cubin"), key=lambda e: e.stored_size, default=None)
                if cubin is not None:
                    names.update(dict.fromkeys(cubin_kernels(region_payload(region, cubin))))
            module.kernels, module.kernel_sample = len(names), list(names)[:3]
        out.append(module)
    return out


def _walk_cuda(walk: ImageWalk, region: Region, section: str | None) -> None:
    """A raw NVIDIA fat binary file (every container in ``region``)."""
    from aotwheel.backends.nvidia.fatbin import parse_fatbin

    _add_cuda(walk, region, [(e, section) for e in parse_fatbin(region, section=section).entries])


def _add_cuda(walk: ImageWalk, region: Region, pairs: list[tuple[FatbinEntry, str | None]]) -> None:
    """NVIDIA fat binary entries (with their sections) of ``region``: one Image per cubin/PTX
    entry; cubins are native targets (vendor ``nvidia``), PTX an IR form ``ptx compute_XY``; all
    loadable targets also in ``FileReport.cuda``. Deep mode hashes each stored payload and
    decompresses it (bounded: fatbin.region_payload), so a damaged entry is an error."""
    fr = walk.report
    for e in sorted({e.target: e for e, _ in pairs}.values(), key=lambda e: (e.arch, e.kind, e.target)):
        if e.target not in fr.cuda and e.kind in ("cubin", "ptx"):
            fr.cuda.append(e.target)
            if e.kind == "ptx":
                walk.add_ir(f"ptx {e.target}")
    for e, section in pairs:
        if e.kind == "ltoir":  # input for nvJitLink, not an image the driver loads
            continue
        index = len(fr.images)
        img = Image(
            index=index, offset=e.payload_offset, size=e.stored_size, kind=_KINDS[e.kind], triple="nvptx64",
            compressed=e.compressed, section=section, decompressed_size=e.decompressed_size or None, arch=e.target)
        fr.images.append(img)
        if walk.deep:
            from aotwheel.backends.nvidia.fatbin import region_payload, stored_region

            img.sha256 = hashlib.sha256(stored_region(region, e).view(0, e.stored_size, "payload")).hexdigest()
            if e.kind in ("cubin", "ptx"):
                region_payload(region, e)  # raises, one line, for a damaged or oversized entry
        if e.kind == "cubin":
            fr.native_targets.append(Target(name=e.target, ip=None, member=None, format=ImageKind.CUBIN, size=e.stored_size,
                                            image=index, vendor=NVIDIA, arch=e.target))
