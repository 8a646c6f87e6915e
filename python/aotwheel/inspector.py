"""``aotwheel.inspect``: which device code a binary, wheel or installed module really carries.

Everything is read from the bytes: ``.tgtimg`` image tables (with their relocations and
descriptors), ocloc fat binaries (ar), zebin notes, legacy patch-token headers, SPIR-V, zstd and
OffloadBinary containers. Files are memory-mapped and only headers are touched in the default
mode; ``deep=True`` also decompresses and hashes every image.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import mmap
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aotwheel.errors import InspectError
from aotwheel.model import AMD, INTEL, NVIDIA, Image, NativeTarget, Target
from aotwheel.report import CudaModule, FileReport, Report
from aotwheel.formats.region import Region
from aotwheel.formats.sniff import SPIRV_MAGIC, sniff
from aotwheel.formats.zstd import frame_facts as zstd_frame_facts

if TYPE_CHECKING:
    from aotwheel.backends.nvidia.fatbin import FatbinContainer, FatbinEntry
    from aotwheel.formats.elf import ElfView, HostImage, TableScan

_MAX_DEPTH = 4  # containers nest at most image -> zstd -> ar -> member in practice
_CANDIDATE_RE = re.compile(r"(\.so(\.\d+)*|\.a|\.o|\.spv|\.bin|\.ar|\.zebin)$")
_DIST_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a pip distribution name (PEP 508)
_MODULE_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_WHEEL_SEP = "!"
_LEAF_KINDS = frozenset({"spirv", "llvmbc"})  # kinds the default mode notes without walking into
_MAX_WHEEL_MEMBER = 16 << 30
CPU_TRIPLE = "spir64_x86_64"  # the name a CPU AOT image's native target carries


# --------------------------------------------------------------------------------------------
# Public entry points


def inspect(path: str | os.PathLike[str], *, deep: bool = False) -> Report:
    """Inspect a binary, a wheel, a directory, or an installed module/package name.

    Raises :class:`InspectError` (one line naming the file and offset) for corrupt input.
    """
    text = os.fspath(path)
    target = Path(text)
    if not target.exists():
        if _WHEEL_SEP in text and Path(text.split(_WHEEL_SEP, 1)[0]).is_file():
            with _open_member(text) as region:
                return Report(text, [_inspect_region(region, text, deep)])
        located = _locate_module(text)
        if located is None:
            files = _distribution_files(text)
            if files is None:
                raise InspectError(f"{text}: no such file, directory, installed module or distribution; "
                                   "pass a .so, .whl, device binary, importable name or pip package name")
            return Report(text, [r for p in files if (r := _inspect_or_error(p, str(p), deep))])
        target = located
    if target.is_dir():
        return Report(text, [r for p in _candidates(target) if (r := _inspect_or_error(p, str(p), deep))])
    if zipfile.is_zipfile(target) and target.suffix in (".whl", ".zip"):
        return Report(text, list(_inspect_wheel(target, deep)))
    with _mapped(target) as region, _cyclic_gc_paused():
        return Report(text, [_inspect_region(region, str(target), deep)])


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while one binary is walked (issue 6, P4).

    A large SYCL library yields ~14,000 image records; their allocation alone triggered cyclic
    collections costing ~8 ms of a ~53 ms inspect (measured on mkl-dpcpp's 650 MB library). The
    records hold no reference cycles, so reference counting frees them all the same; the caller's
    collector state is restored on exit, and left alone if it was already off.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def image_bytes(path: str | os.PathLike[str], image: Image) -> bytes:
    """The bytes of ``image`` (from ``inspect(path)``), decompressed when it is zstd."""
    with _open_any(os.fspath(path)) as region:
        stored = region.sub(image.offset, image.size, f"image {image.index}")
        if image.compressed:
            from aotwheel.formats import zstd

            return zstd.decompress(stored)
        return stored.read(0, stored.size, f"image {image.index}")


def find_spirv(path: str | os.PathLike[str]) -> bytes | None:
    """The first SPIR-V module: a SPIR-V image (spir64), else a fat binary's ``generic_ir``."""
    report = inspect(path)
    for fr in report.files:
        for img in fr.images:
            if "spirv" in (img.kind, img.content):
                return image_bytes(fr.path, img)
        for img in fr.images:
            if "generic_ir" in img.members:
                spirv = _generic_ir_spirv(fr.path, img)
                if spirv is not None:
                    return spirv
    return None


# --------------------------------------------------------------------------------------------
# Opening inputs


@contextlib.contextmanager
def _mapped(path: Path) -> Iterator[Region]:
    label = str(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise InspectError(f"{label}: cannot open ({exc.strerror}); check the path and permissions") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise InspectError(f"{label}: empty file at offset 0x0; rebuild or re-download it")
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        if hasattr(mm, "madvise") and hasattr(mmap, "MADV_RANDOM"):
            # Headers are scattered through big binaries; default readahead would pull in
            # most of the file around each of them.
            mm.madvise(mmap.MADV_RANDOM)
        if hasattr(os, "posix_fadvise"):  # the same for the C scanners' pread on the descriptor
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        from aotwheel.formats.fastscan import mapped_file

        try:
            with mapped_file(mm, fh.fileno()):  # the C scanners pread headers from it
                yield Region(mm, label)
        finally:
            try:
                mm.close()
            except BufferError:
                pass  # a memoryview still exported; the map is freed with its last view


@contextlib.contextmanager
def _open_member(spec: str) -> Iterator[Region]:
    """``wheel.whl!pkg/lib.so``: extract that member to a temporary file and map it."""
    wheel, member = spec.split(_WHEEL_SEP, 1)
    with tempfile.TemporaryDirectory(prefix="aotwheel-inspect-") as tmp:
        dest = Path(tmp, "member")
        try:
            with zipfile.ZipFile(wheel) as zf:
                _extract(zf, zf.getinfo(member), dest)
        except KeyError:
            raise InspectError(f"{_printable(spec)}: no member {member!r} in {wheel}; list it with 'unzip -l'") from None
        except _zip_errors() as exc:
            raise InspectError(f"{wheel}: not a readable wheel ({_printable(str(exc))[:200]}) at offset 0x0; re-download it") from None
        with _mapped(dest) as region:
            yield Region(region.buf, spec)


@contextlib.contextmanager
def _open_any(spec: str) -> Iterator[Region]:
    if not Path(spec).exists() and _WHEEL_SEP in spec:
        with _open_member(spec) as region:
            yield region
    else:
        with _mapped(Path(spec)) as region:
            yield region


def _zip_errors() -> tuple[type[BaseException], ...]:
    """What zipfile lets through from a damaged archive besides BadZipFile: codec errors (zlib,
    lzma; bz2 raises OSError), NotImplementedError (unknown method or version), RuntimeError
    (encrypted member), ValueError/UnicodeDecodeError (names), EOFError, IndexError."""
    import lzma
    import zlib

    return (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError,
            IndexError, zlib.error, lzma.LZMAError)


def _printable(name: str) -> str:
    """A member name safe for one-line messages (control characters escaped)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path) -> None:
    where = f"{zf.filename}!{_printable(info.filename)}"
    if info.file_size > _MAX_WHEEL_MEMBER:
        raise InspectError(f"{where}: member claims {info.file_size} bytes, above the 16 GiB limit")
    try:
        with zf.open(info) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except _zip_errors() as exc:
        raise InspectError(f"{where}: cannot extract ({_printable(str(exc))[:200]}); re-download the wheel") from None


def _inspect_wheel(wheel: Path, deep: bool) -> Iterator[FileReport]:
    try:
        zf = zipfile.ZipFile(wheel)
    except _zip_errors() as exc:
        raise InspectError(f"{wheel}: not a readable wheel ({_printable(str(exc))[:200]}) at offset 0x0; re-download it") from None
    with zf, tempfile.TemporaryDirectory(prefix="aotwheel-inspect-") as tmp:
        for info in zf.infolist():
            if not info.filename or info.is_dir() or not _CANDIDATE_RE.search(info.filename):
                continue  # (an empty name made ZipInfo.is_dir() raise IndexError)
            dest = Path(tmp, "member")
            label = f"{wheel}{_WHEEL_SEP}{_printable(info.filename)}"
            try:
                _extract(zf, info, dest)
            except InspectError as exc:
                yield _unreadable(label, exc)
                continue
            report = _inspect_or_error(dest, label, deep)
            if report is not None:
                yield report
            dest.unlink()


def _unreadable(label: str, exc: InspectError) -> FileReport:
    return FileReport(path=label, native_targets=[], ir=[], images=[], kernels=None, kind="error", error=str(exc))


def _inspect_or_error(path: Path, label: str, deep: bool) -> FileReport | None:
    """One member of a wheel or directory: an unreadable file is reported, not fatal, so that the
    other binaries still get their report (issue 14: one corrupt library ended the whole report)."""
    try:
        with _cyclic_gc_paused():
            return _inspect_file_if_binary(path, label, deep)
    except InspectError as exc:
        return _unreadable(label, exc)


def _inspect_file_if_binary(path: Path, label: str, deep: bool) -> FileReport | None:
    """Inspect ``path`` if its magic says binary; data files that merely share a suffix are skipped."""
    if path.stat().st_size == 0:
        return None
    with open(path, "rb") as fh:
        if sniff(fh.read(64)) == "unknown":
            return None
    with _mapped(path) as region:
        return _inspect_region(Region(region.buf, label), label, deep)


def _candidates(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and _CANDIDATE_RE.search(p.name))


def _distribution_files(name: str) -> list[Path] | None:
    """Binaries an installed distribution's RECORD lists (``onemkl-sycl-blas`` keeps its library in
    ``<prefix>/lib``, outside any importable package); ``None`` if no such distribution."""
    if not _DIST_RE.fullmatch(name):
        return None
    from importlib import metadata

    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    found: dict[Path, None] = {}
    for entry in dist.files or ():
        if _CANDIDATE_RE.search(entry.name):
            p = Path(str(dist.locate_file(entry))).resolve()
            if p.is_file() and not p.is_symlink():
                found[p] = None
    return sorted(found)


def _locate_module(name: str) -> Path | None:
    """Find an installed module or package without importing (and so without running) it."""
    if not _MODULE_RE.fullmatch(name):
        return None
    from importlib.machinery import PathFinder

    spec = None
    search: list[str] | None = None
    for part in name.split("."):
        spec = PathFinder.find_spec(part, search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(spec.origin) if spec.origin else None


# --------------------------------------------------------------------------------------------
# Walking one binary


@dataclass
class _Walk:
    report: FileReport
    deep: bool
    # Per-walk answers that repeat across members (member name -> IP, IP -> catalog entry; tuple
    # keys by kind), a library of a thousand zebin members has a handful of distinct ones; and the
    # walk's zstd decompression context.
    memo: dict[Any, Any] = field(default_factory=dict)

    def add_ir(self, kind: str) -> None:
        if kind not in self.report.ir:
            self.report.ir.append(kind)


def _inspect_region(region: Region, label: str, deep: bool) -> FileReport:
    kind = sniff(region.head(64))
    fr = FileReport(path=label, native_targets=[], ir=[], images=[], kernels=None, kind=kind)
    walk = _Walk(fr, deep)
    from aotwheel.backends.nvidia.fatbin import is_fatbin

    if kind == "unknown" and is_fatbin(region.head(4)):
        fr.kind = "fatbin"
        _walk_cuda(walk, region, None)
        return fr
    if kind == "elf":
        _walk_host(walk, region)
    elif kind == "ar" and not _is_fat_binary(region):
        _walk_static_archive(walk, region)
    elif kind == "bundle":
        _walk_hip(walk, region, None)
    elif kind == "unknown" and region.head(4) == b"PK\x03\x04":
        # A zip's directory sits at its end: a download cut short keeps the first member's header.
        raise InspectError(f"{label}: a truncated zip (wheel): it starts as a zip archive but has no end-of-central-directory "
                           f"record ({region.size} bytes); download or build the wheel again")
    elif kind == "unknown":
        raise InspectError(f"{label}: not an ELF, wheel, ar, zebin, SPIR-V, zstd image or offload bundle (magic {region.head(4).hex()}) at offset 0x0; pass a device binary")
    else:
        _add_image(walk, region, triple=None, section=None)
        if kind == "spirv":
            fr.kernels = fr.images[0].kernels
        elif kind == "legacy":
            from aotwheel.backends.intel.legacy import read_legacy

            fr.kernels = read_legacy(region).kernels
    return fr


def _walk_host(walk: _Walk, region: Region) -> None:
    from aotwheel.formats.elf import DESCRIPTORS_ALWAYS_UP_TO, open_elf, read_host

    view = open_elf(region)
    for name in (".tgtimg", ".tgtsym"):  # read whole: one sweep, not a fault per page
        sec = view.section(name)
        if sec is not None and sec.type != "SHT_NOBITS" and sec.size > mmap.PAGESIZE:
            _will_need(region.buf, region.start + sec.offset, sec.size)
    # Bundle section names give the triples; small tables also get their descriptors' build options.
    # Without deep, the C scanner makes plain leaf images straight from the table (host.scan).
    host = read_host(view, all_descriptors=walk.deep, descriptors_up_to=DESCRIPTORS_ALWAYS_UP_TO, leaf_scan=not walk.deep)
    walk.report.kernels = host.kernels
    walk.report.kernels_by_triple = {k.removesuffix("-unknown-unknown"): v for k, v in host.kernels_by_triple.items()}
    fr, buf, start = walk.report, region.buf, region.start
    from aotwheel.formats import fastscan

    if host.scan is not None:
        _walk_table(walk, region, host.scan, host.images)
    else:
        fs = None if walk.deep else fastscan.module()
        all_images = host.images
        for lo in range(0, len(all_images), _READAHEAD_IMAGES):
            chunk = all_images[lo : lo + _READAHEAD_IMAGES]
            _read_ahead(buf, start, chunk)
            # C makes the same leaf Images as _walk_host_image up to each image it leaves to it.
            for img in chunk if fs is None else _left_by(fs, buf, start, region.where(0), chunk, fr.images, fr.ir):
                _walk_host_image(walk, region, img)
    for sec in host.offloading_sections:
        _walk_offloading(walk, region.sub(sec.offset, sec.size, "section '.llvm.offloading'"), sec.name)
    if any(t.vendor == INTEL for t in fr.native_targets):  # kernels only the IR serves matter only then
        fr.ir_kernels_missing_from = host.ir_only_kernels()
    hip = view.section(".hip_fatbin")
    if hip is not None and hip.type != "SHT_NOBITS" and hip.size:
        _walk_hip(walk, region.sub(hip.offset, hip.size, "section '.hip_fatbin'"), ".hip_fatbin")
    _walk_cuda_sections(walk, region, view)


def _walk_table(walk: _Walk, region: Region, scan: TableScan, hosts: list[HostImage]) -> None:
    """Every ``.tgtimg`` entry in table order: runs of plain leaves made by ``scan`` (C), and
    between them the entries it stops at: an image that is not a plain leaf (the scan returns its
    HostImage), else the next of ``hosts`` (read_host made them: no bundle triple, or an entry
    only the Python loop resolves)."""
    from aotwheel.formats import fastscan

    fr = walk.report
    images, ir, start, base, fd = fr.images, fr.ir, region.start, region.where(0), fastscan.file_of(region.buf)
    pos, h = 0, 0
    while True:
        made, pos, kinds, img = scan.leaves(pos, start, base, len(images), Image, fd)
        images += made
        ir += [k for k in kinds if k not in ir]
        if pos >= scan.count:
            break
        if img is None:  # not one the scan resolves: read_host made its HostImage
            if h >= len(hosts) or hosts[h].entry != pos:
                raise RuntimeError(f"aotwheel: .tgtimg entry {pos} has no image record; please report this with the binary")
            img, h = hosts[h], h + 1
        _walk_host_image(walk, region, img)
        pos += 1
    if h != len(hosts):
        raise RuntimeError(f"aotwheel: .tgtimg entry {hosts[h].entry} was left unread; please report this with the binary")


def _walk_host_image(walk: _Walk, region: Region, img: HostImage) -> None:
    """One ``.tgtimg`` image (a HostImage) into the report."""
    fr, buf, start, base, deep = walk.report, region.buf, region.start, region.where(0), walk.deep
    images, ir = fr.images, fr.ir
    # Most images of big libraries are SPIR-V, which the default mode only notes: read the
    # magic straight from the map and skip the sub-region and the walk (14k images in mkl).
    off, size = img.offset, img.size
    a = start + off
    kind = "spirv" if size >= 4 and buf[a : a + 4] == SPIRV_MAGIC else sniff(bytes(buf[a : a + (size if size < 64 else 64)]))
    if kind in _LEAF_KINDS and not deep:
        leaf = Image(len(images), base + off, size, kind, img.triple, False, img.section)
        images.append(leaf)
        if kind not in ir:
            ir.append(kind)  # what _note_ir does
        if img.compile_options is not None or img.link_options is not None:  # positional above: 14k images in mkl
            leaf.compile_options, leaf.link_options = img.compile_options, img.link_options
        if img.listed_size is not None:
            leaf.listed_size = img.listed_size
            fr.warnings.append(_cut_warning(leaf.index, img.listed_size, img.section, size))
    elif kind == "zstd" and not deep and _is_sycl_ir(img.triple) and (facts := zstd_frame_facts(buf, a, size)) is not None:
        # What _add_image does for a compressed SYCL IR image, minus its sub-regions (19k
        # such images in an XPU environment).
        stored, declared = facts
        leaf = Image(len(images), base + off, stored, kind, img.triple, True, img.section, "spirv", declared)
        images.append(leaf)
        if "spirv" not in ir:
            ir.append("spirv")
        if img.compile_options is not None or img.link_options is not None:
            leaf.compile_options, leaf.link_options = img.compile_options, img.link_options
        if img.listed_size is not None or stored != size:
            leaf.listed_size = size if img.listed_size is None else img.listed_size
    else:
        _add_image(walk, region.sub(off, size, f"image at {off:#x}"), triple=img.triple, section=img.section)
        added = images[-1]
        added.compile_options, added.link_options = img.compile_options, img.link_options
        if img.listed_size is not None:
            added.listed_size = img.listed_size
            if not added.compressed:  # a zstd frame delimits itself; other images were cut at their section
                fr.warnings.append(_cut_warning(added.index, img.listed_size, img.section, added.size))


def _left_by(fs: Any, buf: Any, start: int, base: int, chunk: list[Any], images: list[Image], ir: list[str]) -> Iterator[Any]:
    """The images of ``chunk`` that ``fs.leaves`` (C) does not make as plain leaves; the leaves it
    makes before each are appended to ``images`` (and their kinds to ``ir``) first."""
    from aotwheel.formats import fastscan

    fd, pos = fastscan.file_of(buf), 0
    while pos < len(chunk):
        made, pos, kinds = fs.leaves(buf, start, base, chunk, pos, len(chunk), len(images), Image, fd)
        images += made
        ir += [k for k in kinds if k not in ir]
        if pos < len(chunk):
            yield chunk[pos]
            pos += 1


_READAHEAD_IMAGES = 1024
_DENSE_BYTES_PER_IMAGE = 32 << 10
_HEAD_SPAN = 64 << 10


def _read_ahead(buf: object, start: int, chunk: list[Any]) -> None:
    """Ask the kernel to read a run of densely packed images in one sweep.

    The map is MADV_RANDOM so that scattered headers do not pull in whole files, but onemkl's
    libraries pack thousands of 2 kB images together: with an empty page cache, one synchronous
    page fault per image made inspect 5-15x slower than ``cat``. Where a run of images averages
    <= 32 kB apart, MADV_WILLNEED over the run costs one asynchronous read (and next to nothing
    when the pages are cached); sparse images keep the per-header faults.
    """
    if not chunk:
        return
    first, last = chunk[0], chunk[-1]
    lo, hi = start + first.offset, start + last.offset + min(last.size, _HEAD_SPAN)
    if 0 < hi - lo <= len(chunk) * _DENSE_BYTES_PER_IMAGE:
        _will_need(buf, lo, hi - lo)


def _will_need(buf: object, at: int, size: int) -> None:
    """MADV_WILLNEED for ``size`` bytes at ``at`` of a map (advice only: never fails)."""
    if not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_WILLNEED") or at < 0 or at + size > len(buf):
        return
    lo = at - at % mmap.PAGESIZE
    try:
        buf.madvise(mmap.MADV_WILLNEED, lo, at + size - lo)
    except (OSError, ValueError):
        pass


def _cut_warning(index: int, listed: int, section: str | None, size: int) -> str:
    return f"image {index}: the image table lists {listed} bytes, past the end of {section or 'its segment'}; read as the {size} bytes there"


def _walk_cuda_sections(walk: _Walk, region: Region, view: ElfView) -> None:
    """A host ELF's NVIDIA fat binaries: ``.nv_fatbin`` (parsed whole, strictly) and the containers
    that libraries keep in other data sections (``.ldata``, ``.data``, ``.cask_resource``: found by
    magic, each kept only when its structure holds; fatbin.scan_entries)."""
    from aotwheel.backends.nvidia.fatbin import parse_fatbin, scan_entries

    groups: list[tuple[str | None, Sequence[FatbinEntry]]] = []
    nv = view.section(".nv_fatbin")
    if nv is not None and nv.type != "SHT_NOBITS" and nv.size:
        fat = parse_fatbin(region.sub(nv.offset, nv.size, "section '.nv_fatbin'"), section=".nv_fatbin")
        groups.append((".nv_fatbin", fat.entries))
        walk.report.cuda_modules = _cuda_modules(walk, region, fat.containers)
    scanned, _ = scan_entries(region, view.sections)  # CUDA host binaries only (fatbin.CUDA_MARKERS)
    groups += scanned
    if any(entries for _, entries in groups):
        _add_cuda(walk, region, groups)


def _cuda_modules(walk: _Walk, region: Region, containers: Sequence[FatbinContainer]) -> list[CudaModule]:
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


def _walk_cuda(walk: _Walk, region: Region, section: str | None) -> None:
    """A raw NVIDIA fat binary file (every container in ``region``)."""
    from aotwheel.backends.nvidia.fatbin import parse_fatbin

    _add_cuda(walk, region, [(section, parse_fatbin(region, section=section).entries)])


def _add_cuda(walk: _Walk, region: Region, groups: list[tuple[str | None, Sequence[FatbinEntry]]]) -> None:
    """NVIDIA fat binary entries, per section, of ``region``: one Image per cubin/PTX
    entry; cubins are native targets (vendor ``nvidia``), PTX an IR form ``ptx compute_XY``; all
    loadable targets also in ``FileReport.cuda``. Deep mode hashes each stored payload and
    decompresses it (bounded: fatbin.region_payload), so a damaged entry is an error."""
    fr = walk.report
    for e in sorted({e.target: e for _, entries in groups for e in entries}.values(), key=lambda e: (e.arch, e.kind, e.target)):
        if e.target not in fr.cuda and e.kind in ("cubin", "ptx"):
            fr.cuda.append(e.target)
            if e.kind == "ptx":
                walk.add_ir(f"ptx {e.target}")
    images, natives, deep, index = fr.images, fr.native_targets, walk.deep, len(fr.images)
    for section, entries in groups:  # 11k entries in cuFFT: each field read once, positional Image
        for e in entries:
            kind, target = e.kind, e.target
            if kind == "ltoir":  # input for nvJitLink, not an image the driver loads
                continue
            stored = e.compressed_size or e.payload_size  # e.stored_size (set only when compressed)
            img = Image(index, e.payload_offset, stored, kind, "nvptx64", e.compression is not None, section, None,
                        e.decompressed_size or None, arch=target)
            images.append(img)
            if deep:
                from aotwheel.backends.nvidia.fatbin import region_payload, stored_region

                img.sha256 = hashlib.sha256(stored_region(region, e).view(0, stored, "payload")).hexdigest()
                if kind in ("cubin", "ptx"):
                    region_payload(region, e)  # raises, one line, for a damaged or oversized entry
            if kind == "cubin":
                natives.append(Target(target, None, None, "cubin", stored, index, vendor=NVIDIA, arch=target))
            index += 1


def _walk_hip(walk: _Walk, region: Region, section: str | None) -> None:
    """AMD: one Image per clang offload bundle (plain or CCOB), its entries as members, and one
    native target (vendor ``amd``) per code object, named by its bundle entry's target id."""
    from aotwheel.backends.amd.codeobject import read_code_object
    from aotwheel.formats.bundle import read_hip_fatbin

    fr = walk.report
    for b in read_hip_fatbin(region):
        img = Image(index=len(fr.images), offset=region.where(b.offset), size=b.stored_size, kind="bundle", triple=None,
                    compressed=b.compressed is not None, section=section, content="bundle",
                    decompressed_size=b.compressed.uncompressed_size if b.compressed else None,
                    members=[e.id for e in b.entries])
        if walk.deep:
            img.sha256 = hashlib.sha256(region.view(b.offset, b.stored_size, "offload bundle")).hexdigest()
        fr.images.append(img)
        for e in b.entries:
            if e.kind == "host" or not e.size:
                continue
            if e.triple.startswith("spirv64-amd"):  # AMD SPIR-V: the HIP runtime compiles it at load
                walk.add_ir("amdgcnspirv")
                continue
            if not e.triple.startswith("amdgcn"):
                fr.warnings.append(f"image {img.index}: bundle entry {e.id!r} is not AMD GPU code")
                continue
            code = read_code_object(b.bundle.sub(e.offset, e.size, f"code object {e.id!r}"))
            for feature, recorded in (("xnack", code.xnack), ("sramecc", code.sramecc)):
                said = {"+": "on", "-": "off"}.get(_feature_sign(e.target_id, feature) or "", "any")
                if said != "any" and recorded not in (said, "unsupported"):
                    fr.warnings.append(f"image {img.index}: {e.id!r} says {feature} {said} but its code object says {recorded}")
            fr.native_targets.append(Target(name=e.target_id or None, ip=None, member=e.id, format="code-object", size=e.size,
                                            image=img.index, vendor=AMD, arch=e.target_id.split(":")[0] or None))


def _feature_sign(target_id: str, feature: str) -> str | None:
    for part in target_id.split(":")[1:]:
        if part[:-1] == feature:
            return part[-1]
    return None


def _walk_offloading(walk: _Walk, region: Region, section: str | None) -> None:
    from aotwheel.formats.offload import read_all

    for entry in read_all(region):
        triple = entry.strings.get("triple")
        _add_image(walk, region.sub(entry.image_offset, entry.image_size, "OffloadBinary image"), triple=triple, section=section, offload_arch=entry.strings.get("arch"))


def _walk_static_archive(walk: _Walk, region: Region) -> None:
    """A static library: the new offload model keeps device code in members' ``.llvm.offloading``."""
    from aotwheel.formats.ar import read_ar
    from aotwheel.formats.elf import open_elf

    for m in read_ar(region):
        member = region.sub(m.offset, m.size, f"ar member {m.name!r}")
        if sniff(member.head(64)) != "elf":
            continue
        for sec in open_elf(member).sections:
            if sec.name == ".llvm.offloading" and sec.size:
                _walk_offloading(walk, member.sub(sec.offset, sec.size, "section '.llvm.offloading'"), f"{m.name}:{sec.name}")


def _is_fat_binary(region: Region) -> bool:
    from aotwheel.formats.ar import member_target, read_ar

    return any(m.is_padding or m.name == "generic_ir" or member_target(m.name)[0] for m in read_ar(region))


def _add_image(walk: _Walk, region: Region, *, triple: str | None, section: str | None, offload_arch: str | None = None) -> None:
    fr = walk.report
    index = len(fr.images)
    kind = sniff(_head(region, 64))
    img = Image(index, region.where(0), region.size, kind, triple, kind == "zstd", section)  # positional: 13k calls in an XPU env
    if offload_arch is not None:
        img.arch = offload_arch
    fr.images.append(img)
    if kind == "zstd":
        from aotwheel.formats import zstd

        stored = zstd.frame_size(region)
        if stored != region.size:
            img.listed_size, img.size = region.size, stored
            region = region.sub(0, stored, "zstd frame")
    if walk.deep:
        img.sha256 = hashlib.sha256(region.view(0, region.size, "image")).hexdigest()
    if kind == "zstd":
        img.decompressed_size = zstd.content_size(region)
        if not walk.deep and _is_sycl_ir(triple):
            # A SYCL spir64 image is SPIR-V by what the compiler put there; decompressing just to
            # see its magic cost ~10 us of zstd per image (19k images in an XPU environment).
            # Deep mode decompresses and reads the content (documented in docs/report-schema.md).
            img.content = "spirv"
            _note_ir(walk, "spirv")
            return
        dctx = walk.memo.get("zstd-dctx")
        if dctx is None:
            import zstandard

            dctx = walk.memo["zstd-dctx"] = zstandard.ZstdDecompressor()
        img.content = sniff(zstd.peek(region, 64, dctx))
        # Native content can only be listed after decompression; SPIR-V needs it only in deep mode.
        if img.content in ("ar", "zebin", "legacy", "cpu-aot", "ir-elf", "offload") or walk.deep:
            data = zstd.decompress(region)
            img.decompressed_size = len(data)
            inner = Region(data, f"{region.label} (image {index}, decompressed)")
            _walk_content(walk, inner, img.content, img, depth=1)
        else:
            _note_ir(walk, img.content)
        return
    _walk_content(walk, region, kind, img, depth=0)


def _is_sycl_ir(triple: str | None) -> bool:
    """``spir64`` (or ``spir64-unknown-unknown``): SPIR-V; not ``spir64_gen`` / ``spir64_x86_64`` (native code)."""
    return triple is not None and triple.partition("-")[0] == "spir64"


def _head(region: Region, n: int) -> bytes:
    """``region.head(n)`` minus its call layers: it runs once per image (14k in large libraries)."""
    a = region.start
    return bytes(region.buf[a : a + min(n, region.size)])


def _note_ir(walk: _Walk, kind: str | None) -> None:
    if kind in ("spirv", "llvmbc"):
        walk.add_ir(kind)


def _walk_content(walk: _Walk, region: Region, kind: str | None, img: Image, depth: int, member: str | None = None) -> None:
    if depth > _MAX_DEPTH:
        raise region.error(0, "device images nested too deeply")
    if kind == "ar":
        _walk_fat_binary(walk, region, img, depth)
    elif kind in ("zebin", "legacy"):
        walk.report.native_targets.append(_native_target(walk, region, kind, img.index, member))
    elif kind == "cpu-aot":
        from aotwheel.backends.intel.cpu_aot import read_cpu_aot

        info = read_cpu_aot(region)
        walk.report.native_targets.append(Target(name=CPU_TRIPLE, ip=None, member=member, format="cpu-aot", size=region.size,
                                                 image=img.index, vendor=INTEL, arch=info.machine, rebuildable=info.has_ir))
    elif kind == "ir-elf":
        from aotwheel.backends.intel.legacy import ir_payload

        payload = ir_payload(region)
        _note_ir(walk, sniff(payload.head(64)) if payload is not None else None)
    elif kind == "spirv":
        walk.add_ir("spirv")
        if walk.deep or img.kind == "spirv" and img.index == 0 and walk.report.kind == "spirv":
            from aotwheel.formats.spirv import read_spirv

            img.kernels = read_spirv(region, count_kernels=True).kernels
    elif kind == "llvmbc":
        walk.add_ir("llvmbc")
    elif kind == "offload":
        _walk_offloading(walk, region, img.section)
    elif kind == "zstd":
        raise region.error(0, "zstd image nested inside a compressed image")


_FASTSCAN = ("fastscan",)  # the walk's memo key of the C scanner module (or None)


def _walk_fat_binary(walk: _Walk, region: Region, img: Image, depth: int) -> None:
    # The C scanner reads the ar headers and each zebin's notes in one call (~1,000 members in
    # vllm-xpu-kernels); None (not built, switched off, or not sure) means the Python readers.
    # Looked up once per walk (AOTWHEEL_NO_FASTSCAN is an environment read): 251 fat binaries.
    fs = walk.memo.get(_FASTSCAN, False)
    if fs is False:
        from aotwheel.formats import fastscan

        fs = walk.memo[_FASTSCAN] = None if walk.deep else fastscan.module()
    scanned = None
    if fs is not None and depth + 1 <= _MAX_DEPTH:
        from aotwheel.formats.fastscan import scan_fat_binary

        scanned = scan_fat_binary(fs, region)
    if scanned is None:
        from aotwheel.formats.ar import read_ar

        scanned = tuple((m.name, m.offset, m.size, None) for m in read_ar(region) if not m.is_padding)
    members, targets, warnings = img.members, walk.report.native_targets, walk.report.warnings
    for name, offset, size, facts in scanned:
        if name in members:
            # Seen in vllm-xpu-kernels 0.1.16.2 (two 64.35.11.0 members): only the first is used.
            warnings.append(f"image {img.index}: ar member {name!r} appears more than once; the driver uses the first")
        members.append(name)
        if type(facts) is tuple:
            targets.append(_target(walk, "zebin", facts, size, img.index, name))
            continue
        if type(facts) is bytes:  # generic_ir's IR payload head: what _walk_content notes for an ir-elf
            _note_ir(walk, sniff(facts))
            continue
        body = region.sub(offset, size, f"ar member {name!r}")
        kind = sniff(body.head(64))
        if name == "generic_ir":
            _walk_content(walk, body, kind, img, depth + 1)
        elif kind in ("zebin", "legacy"):
            _walk_content(walk, body, kind, img, depth + 1, member=name)
        else:
            warnings.append(f"image {img.index}: ar member {name!r} is {kind}, not a device binary")


def _native_target(walk: _Walk, region: Region, kind: str, image: int, member: str | None) -> NativeTarget:
    facts: tuple[int | None, int | None, int | None, object, bool]
    if kind == "zebin":
        from aotwheel.backends.intel.zebin import read_zebin, read_zebin_summary

        z = read_zebin(region) if walk.deep else read_zebin_summary(region)
        facts = (z.ip_u32, z.product_family, z.gfx_core, None, z.has_spirv)
    else:
        from aotwheel.backends.intel.legacy import read_legacy

        info = read_legacy(region)
        facts = (None, None, info.gfx_core, None, info.has_spirv)  # no IP or product note
    return _target(walk, kind, facts, region.size, image, member)


def _target(walk: _Walk, kind: str, facts: tuple[int | None, int | None, int | None, object, bool], size: int, image: int,
            member: str | None) -> NativeTarget:
    """The native target of one zebin/legacy binary from its note values ``facts`` (ip_u32,
    product family, gfx core, -, has_spirv). Everything but the size and position is a function of
    (kind, member name, facts): computed once per walk, as a fat-binary library repeats a few."""
    key = (kind, member, facts)  # facts[3] is unused, and a library repeats whole tuples
    known = walk.memo.get(key)
    if known is None:
        known = walk.memo[key] = _target_fields(walk.memo, kind, member, facts)
    fields, problems = known
    for problem in problems:
        walk.report.warnings.append(f"{_where(image, member)}: {problem}")
    device_name, ip, generic, core, product, rebuildable = fields
    return NativeTarget(device_name, ip, member, kind, size, image, generic, core, product, rebuildable)


def _target_fields(memo: dict[Any, Any], kind: str, member: str | None, facts: tuple[int | None, int | None, int | None, object, bool]
                   ) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    ip_u32, product_family, gfx_core, _version, rebuildable = facts
    named = memo.get(("member", member))
    if named is None:
        named = memo[("member", member)] = _member_name_ip(member)
    name_ip, generic = named
    note_ip = product = None
    if ip_u32 is not None:
        note_ip = memo.get(("note-ip", ip_u32))
        if note_ip is None:
            note_ip = memo[("note-ip", ip_u32)] = _format_u32_ip(ip_u32)
    core = _gfx_name(memo, "core", gfx_core)
    if kind == "zebin":
        product = _gfx_name(memo, "product", product_family)
    problems = []
    if name_ip and note_ip and name_ip != note_ip:
        problems.append(f"member name says {name_ip} but the zebin note says {note_ip}")
    ip = name_ip or note_ip
    known = memo.get(("ip", ip))
    if known is None:
        known = memo[("ip", ip)] = _catalog_entry(ip)
    device_name, expected_core = known
    if expected_core and core and core != expected_core:
        problems.append(f"{device_name} binaries declare {expected_core} but this one declares {core}")
    return (device_name, ip, generic, core, product, rebuildable), tuple(problems)


def _where(image: int, member: str | None) -> str:
    return f"image {image}" + (f" member {member!r}" if member else "")


def _member_name_ip(member: str | None) -> tuple[str | None, str | None]:
    """``64.12.60.7`` -> (IP, None); ``64.bmg`` -> (None, "bmg"); no member -> (None, None)."""
    from aotwheel.backends.intel.catalog import parse_ip
    from aotwheel.formats.ar import member_target

    token = member_target(member)[1] if member else None
    name_ip = token if token and parse_ip(token) else None
    return name_ip, (token if token and not name_ip else None)


def _format_u32_ip(value: int) -> str:
    from aotwheel.backends.intel.catalog import format_ip, ip_from_u32

    return format_ip(ip_from_u32(value))


def _gfx_name(memo: dict[Any, Any], what: str, value: int | None) -> str | None:
    """``gfx.core_name`` / ``gfx.product_name`` of a note value, once per walk."""
    key = (what, value)
    if key not in memo:
        from aotwheel.backends.intel import gfx

        memo[key] = gfx.core_name(value) if what == "core" else gfx.product_name(value)
    return memo[key]  # type: ignore[no-any-return]


def _catalog_entry(ip: str | None) -> tuple[str | None, str | None]:
    """(catalog name, the gfx core its release declares) for an IP version."""
    from aotwheel.backends.intel import gfx
    from aotwheel.backends.intel.catalog import load_catalog

    device = load_catalog().by_ip(ip) if ip else None
    if device is None:
        return None, None
    return device.name, gfx.RELEASE_CORE.get(device.release)


def _generic_ir_spirv(path: str, img: Image) -> bytes | None:
    from aotwheel.formats.ar import read_ar
    from aotwheel.backends.intel.legacy import ir_payload

    data = image_bytes(path, img)
    region = Region(data, f"{path} (image {img.index})")
    for m in read_ar(region):
        if m.name == "generic_ir":
            payload = ir_payload(region.sub(m.offset, m.size, "ar member 'generic_ir'"))
            if payload is not None and sniff(payload.head(8)) == "spirv":
                return payload.read(0, payload.size, "generic_ir SPIR-V")
    return None
