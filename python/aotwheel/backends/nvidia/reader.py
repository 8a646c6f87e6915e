"""NVIDIA's binary readers (the :class:`aotwheel.backends.protocol.Reader` of the NVIDIA backend).

Fat binaries: a whole ``.fatbin`` file, a host ELF's ``.nv_fatbin`` (parsed whole, strictly) and
the containers libraries keep in other data sections (found by magic: :mod:`.fatbin`). One Image
per cubin/PTX entry; cubins are native targets, PTX an IR form ``ptx compute_XY``.
"""

from __future__ import annotations

from aotwheel.backends.nvidia import NVIDIA
from aotwheel.backends.readspec import ReadSpec
from aotwheel.model import Image, ImageKind, Target
from aotwheel.report import FileReport, declare_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from aotwheel.backends.nvidia.fatbin import FatbinEntry
    from aotwheel.backends.nvidia.report import CudaFields, CudaModule
    from aotwheel.backends.protocol import ImageWalk
    from aotwheel.formats.elf import ElfView, HostOffload
    from aotwheel.formats.region import Region

FATBIN = ImageKind.declare("fatbin")  # a fat binary (a whole file)
CUBIN = ImageKind.declare("cubin")  # a native binary (fat binary entry)
PTX = ImageKind.declare("ptx", label="PTX")  # PTX (fat binary entry): IR the driver JIT-compiles

# Whole fat binary files (fatbin.MAGIC_BYTES), and CUDA host binaries (fatbin.CUDA_MARKERS).
# order=1: after the other readers, so a host binary's CUDA fat binaries follow its HIP bundles in a report.
# LLVM's OffloadBinary numbers CUDA's images 3 (cubin), 4 (fatbinary), 5 (ptx).
# A CUDA ELF (EM_CUDA) is a cubin wherever it is: a whole file, an archive member, an image.
# Library-loaded cubins and PTX text in data sections: read_carried.
READS = ReadSpec(magic=(b"\x50\xed\x55\xba",), file_kinds=(CUBIN,), sections=(".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment", "__nv_module_id"),
                 image_kinds=(CUBIN,), order=1, elf_kinds=((None, 190, CUBIN),), offload_image_kinds=((3, CUBIN), (4, "fatbinary"), (5, PTX)),
                 carried=(b"\x7fELF", b".version "))
_ET_REL = 1  # a relocatable object
_KINDS = {"cubin": CUBIN, "ptx": PTX, "unknown": ImageKind.UNKNOWN}  # fatbin.FatbinEntry.kind


def _new_fields() -> CudaFields:
    """Empty NVIDIA fields of a file report (:mod:`.report` imported at the first file that needs
    them: reading an Intel library makes no CUDA record type)."""
    from aotwheel.backends.nvidia.report import CudaFields

    return CudaFields()


def cuda_fields(report: FileReport) -> CudaFields:
    """``report``'s NVIDIA fields (:func:`.report.cuda_fields`, without importing it)."""
    found: CudaFields = report.fields(NVIDIA)
    return found


def _published_cuda(report: FileReport) -> list[str]:
    return cuda_fields(report).loadable


# Every file's JSON has the NVIDIA keys (cuda, cuda_modules) once this reader is imported.
declare_fields(NVIDIA, _new_fields)
# The _aot.py of wheels already published reads the loadable targets as ``FileReport.cuda``
# (aotwheel.aot lists what they use): kept, read-only, while this backend is registered.
setattr(FileReport, "cuda", property(_published_cuda))  # noqa: B010 -- a name the core report does not declare


def read_file(walk: ImageWalk, region: Region, kind: ImageKind) -> bool:
    """A raw fat binary file (its magic), or a cubin file."""
    if kind == CUBIN:
        walk.add_image(region, triple=None, section=None)
        return True
    walk.report.kind = FATBIN
    _walk_cuda(walk, region, None)
    return True


def read_host(walk: ImageWalk, region: Region, view: ElfView, host: HostOffload) -> None:
    _walk_cuda_sections(walk, region, view)


def read_image(walk: ImageWalk, region: Region, kind: ImageKind, img: Image, depth: int, member: str | None) -> None:
    """A cubin outside a fat binary (a file, an archive member, an OffloadBinary image): its target
    from its ELF header."""
    from aotwheel.backends.nvidia.standalone import cubin_target

    target = cubin_target(region)
    if target is None:
        walk.report.warnings.append(f"image {img.index}: a CUDA ELF whose header names no SM this aotwheel knows")
        return
    _add_cubin(walk, img, target, member)


def read_carried(walk: ImageWalk, region: Region, magic: bytes, section: str) -> int:
    """A cubin (its ELF header and section table whole inside ``region``) or a PTX module (a
    ``.version`` / ``.target`` header, NUL-terminated) that the library loads itself."""
    from aotwheel.backends.nvidia.standalone import PTX_MAGIC, cubin_size, cubin_target, ptx_text

    fr = walk.report
    if magic == PTX_MAGIC:
        found = ptx_text(region)
        if found is None:
            return 0
        size, target = found
        fr.images.append(_hashed(walk, region, Image(len(fr.images), region.where(0), size, PTX, "nvptx64", False, section, arch=target)))
        loadable = cuda_fields(fr).loadable
        if target not in loadable:
            loadable.append(target)
        walk.add_ir(f"ptx {target}")
        return size
    if region.size < 52 or region.read(18, 2, "ELF header") not in (b"\xbe\x00", b"\x00\xbe"):
        return 0  # not EM_CUDA: another vendor's
    elf_size = cubin_size(region)
    sm = None if elf_size is None else cubin_target(region)
    if elf_size is None or sm is None:
        return 0
    img = _hashed(walk, region, Image(len(fr.images), region.where(0), elf_size, CUBIN, "nvptx64", False, section, arch=sm))
    fr.images.append(img)
    _add_cubin(walk, img, sm, None)
    return elf_size


def _hashed(walk: ImageWalk, region: Region, img: Image) -> Image:
    """``img`` (its bytes at ``region``'s start) with its sha256 in deep mode."""
    if walk.deep:
        import hashlib

        img.sha256 = hashlib.sha256(region.view(0, img.size, "image")).hexdigest()
    return img


def _add_cubin(walk: ImageWalk, img: Image, target: str, member: str | None) -> None:
    fr = walk.report
    img.arch = target
    fr.native_targets.append(Target(target, None, member, CUBIN, img.size, img.index, vendor=NVIDIA, arch=target))
    loadable = cuda_fields(fr).loadable
    if target not in loadable:
        loadable.append(target)


def spirv_in(img: Image, load: Callable[[], bytes], label: str) -> bytes | None:
    return None


def _walk_cuda_sections(walk: ImageWalk, region: Region, view: ElfView) -> None:
    """A host ELF's NVIDIA fat binaries: ``.nv_fatbin`` (parsed whole, strictly) and the containers
    that libraries keep in other data sections (``.ldata``, ``.data``, ``.cask_resource``: found by
    magic, each kept only when its structure holds; fatbin.scan_entries)."""
    from aotwheel.backends.nvidia.fatbin import SECTIONS, parse_fatbin, scan_entries

    groups: list[tuple[str | None, Sequence[FatbinEntry]]] = []
    containers: list[tuple[str, Sequence[FatbinEntry]]] = []  # (section, entries) of every container, for the modules
    # Linked code; and in an object (a static library's member) the -rdc code of __nv_relfatbin,
    # which its user's device link makes loadable. A linked binary keeps its objects' copies of
    # that section too, but loads only what .nv_fatbin holds.
    for name in SECTIONS if view.e_type == _ET_REL else SECTIONS[:1]:
        nv = view.section(name)
        if nv is not None and nv.type != "SHT_NOBITS" and nv.size:
            fat = parse_fatbin(region.sub(nv.offset, nv.size, f"section '{name}'"), section=name)
            groups.append((name, [e for c in fat.containers for e in c.entries]))  # Fatbin.entries: the loadable ones only
            if name == ".nv_fatbin":
                containers += [(name, c.entries) for c in fat.containers]
    scanned, _ = scan_entries(region, view.sections)  # CUDA host binaries only (fatbin.CUDA_MARKERS)
    groups += scanned
    for name, entries in scanned:  # each container a module too (cuDNN's .cask_resource): the verdict counts every one inspect lists
        by_container: dict[int, list[FatbinEntry]] = {}
        for e in entries:
            by_container.setdefault(e.container, []).append(e)
        containers += [(name, tuple(es)) for es in by_container.values()]
    cuda_fields(walk.report).modules = _cuda_modules(walk, region, containers)
    if any(entries for _, entries in groups):
        _add_cuda(walk, region, groups)


def _cuda_modules(walk: ImageWalk, region: Region, containers: Sequence[tuple[str, Sequence[FatbinEntry]]]) -> list[CudaModule]:
    """The fat binary containers (``.nv_fatbin``'s and those found in other data sections; the
    CUDA runtime or the library loads each as one module) grouped by the targets they carry, when
    they differ (else ``[]``: the file's verdict is every module's). Deep mode also names each
    group's kernels from one of its cubins (decompressed: the default mode never does)."""
    from aotwheel.backends.nvidia.fatbin import SECTIONS
    from aotwheel.backends.nvidia.report import CudaModule

    # Registered containers (the CUDA runtime loads each as a module) and those the library loads
    # itself never share a group: a verdict counts the first as modules, the second apart.
    groups: dict[tuple[bool, tuple[str, ...]], list[tuple[str, Sequence[FatbinEntry]]]] = {}
    for c in containers:
        targets = tuple(sorted({e.target for e in c[1] if e.kind in ("cubin", "ptx")}))
        if targets:
            groups.setdefault((c[0] in SECTIONS, targets), []).append(c)
    if len(groups) < 2:
        return []
    out = []
    for (_, key), members in sorted(groups.items(), key=lambda kv: (not kv[0][0], -len(kv[1]))):
        entries = [e for _, es in members for e in es]
        sources = list(dict.fromkeys(e.name.removeprefix("../") for e in entries if e.name))[:3]
        section = ", ".join(dict.fromkeys(name for name, _ in members))
        module = CudaModule(section, len(members), list(key), sources, sum(e.stored_size for e in entries))
        if walk.deep:
            from aotwheel.backends.nvidia.fatbin import cubin_kernels, region_payload

            names: dict[str, None] = {}
            for _, es in members:  # one cubin of each container: the module's kernels are the same for every arch
                cubin = min((e for e in es if e.kind == "cubin"), key=lambda e: e.stored_size, default=None)
                if cubin is not None:
                    names.update(dict.fromkeys(cubin_kernels(region_payload(region, cubin))))
            module.kernels, module.kernel_sample = len(names), list(names)[:3]
        out.append(module)
    return out


def _walk_cuda(walk: ImageWalk, region: Region, section: str | None) -> None:
    """A raw NVIDIA fat binary file (every container in ``region``)."""
    from aotwheel.backends.nvidia.fatbin import parse_fatbin

    _add_cuda(walk, region, [(section, parse_fatbin(region, section=section).entries)])


def _add_cuda(walk: ImageWalk, region: Region, groups: list[tuple[str | None, Sequence[FatbinEntry]]]) -> None:
    """NVIDIA fat binary entries, per section, of ``region``: one Image per cubin/PTX
    entry; cubins are native targets (vendor ``nvidia``), PTX an IR form ``ptx compute_XY``; all
    loadable targets also in the report's :class:`~aotwheel.backends.nvidia.report.CudaFields`. Deep mode hashes each stored payload and
    decompresses it (bounded: fatbin.region_payload), so a damaged entry is an error."""
    fr = walk.report
    loadable = cuda_fields(fr).loadable
    for e in sorted({e.target: e for _, entries in groups for e in entries}.values(), key=lambda e: (e.arch, e.kind, e.target)):
        if e.target not in loadable and e.kind in ("cubin", "ptx"):
            loadable.append(e.target)
            if e.kind == "ptx":
                walk.add_ir(f"ptx {e.target}")
    images, natives, deep, index = fr.images, fr.native_targets, walk.deep, len(fr.images)
    for section, entries in groups:  # 11k entries in cuFFT: each field read once, positional Image
        for e in entries:
            kind, target = e.kind, e.target
            if kind == "ltoir":  # input for nvJitLink, not an image the driver loads
                continue
            stored = e.compressed_size or e.payload_size  # e.stored_size (set only when compressed)
            img = Image(index, e.payload_offset, stored, _KINDS[kind], "nvptx64", e.compression is not None, section, None,
                        e.decompressed_size or None, arch=target)
            images.append(img)
            if deep:
                import hashlib

                from aotwheel.backends.nvidia.fatbin import region_payload, stored_region

                img.sha256 = hashlib.sha256(stored_region(region, e).view(0, stored, "payload")).hexdigest()
                if kind in ("cubin", "ptx"):
                    region_payload(region, e)  # raises, one line, for a damaged or oversized entry
            if kind == "cubin":
                natives.append(Target(target, None, None, CUBIN, stored, index, vendor=NVIDIA, arch=target))
            index += 1
