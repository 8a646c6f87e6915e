"""``aotwheel.inspect``: which device code a binary, wheel or installed module really carries.

Everything is read from the bytes. This module walks the vendor-free containers (wheels,
directories, host ELFs with their ``.tgtimg`` image tables and ``.llvm.offloading`` sections,
static libraries, zstd frames, OffloadBinaries) and reads SPIR-V and LLVM bitcode itself; a
vendor's formats (by magic, host section or image kind) it hands to the backend whose
:class:`~aotwheel.backends.protocol.ReadSpec` claims them. Files are
memory-mapped and only headers are touched in the default mode; ``deep=True`` also decompresses
and hashes every image.
"""

from __future__ import annotations

import contextlib
import gc
import os
from dataclasses import dataclass, field

import aotwheel.backends.readers as _registry
from aotwheel.errors import InspectError
from aotwheel.formats.region import Region, will_need
from aotwheel.formats.sniff import SPIRV_MAGIC, ElfKinds, sniff
from aotwheel.model import IR_KINDS, Image, ImageKind
from aotwheel.report import FileReport, Report

# Wheels, directories, names and --deep import what they need (re, zipfile, pathlib, hashlib,
# tempfile): inspecting one library does without them, and without typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    import zipfile
    from collections.abc import Iterator
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any

    from aotwheel.backends.protocol import Reader
    from aotwheel.formats.elf import ElfView, HostImage, TableScan

_MAX_DEPTH = 4  # containers nest at most image -> zstd -> ar -> member in practice
_CANDIDATE_SUFFIXES = r"\.so(\.\d+)*|\.a|\.o|\.spv|\.bin|\.ar"  # file names a wheel or directory walk reads (and the readers' suffixes)
_DIST_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"  # a pip distribution name (PEP 508)
_MODULE_PATTERN = r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*"
_WHEEL_SEP = "!"
_LEAF_KINDS = frozenset(IR_KINDS)  # kinds the default mode notes without walking into
_MAX_WHEEL_MEMBER = 16 << 30
_READ_WHOLE = 1 << 20  # files up to this size are read, not mapped (see _mapped)
_PAGE = 4096  # a section larger than a page is read ahead whole (_walk_host)
_SPIRV, _LLVMBC, _ZSTD, _OFFLOAD, _ELF, _AR, _UNKNOWN = (ImageKind.SPIRV, ImageKind.LLVMBC, ImageKind.ZSTD, ImageKind.OFFLOAD,
                                                         ImageKind.ELF, ImageKind.AR, ImageKind.UNKNOWN)
# What an unreadable file is not, for its error line: the containers, then the readers' formats
# (ReadSpec.formats), then the leaf formats.
_NOT_CONTAINERS, _NOT_LEAVES = ("ELF", "wheel", "ar"), ("SPIR-V", "zstd image", "offload bundle")


# --------------------------------------------------------------------------------------------
# Public entry points


def inspect(path: str | os.PathLike[str], *, deep: bool = False) -> Report:
    """Inspect a binary, a wheel, a directory, or an installed module/package name.

    Raises :class:`InspectError` (one line naming the file and offset) for corrupt input.
    """
    text = os.fspath(path)
    target = text
    if not os.path.exists(target):
        if _WHEEL_SEP in text and os.path.isfile(text.split(_WHEEL_SEP, 1)[0]):
            with _open_member(text) as region:
                return Report(text, [_inspect_region(region, text, deep)])
        located = _locate_module(text)
        if located is None:
            files = _distribution_files(text)
            if files is None:
                raise InspectError(f"{text}: no such file, directory, installed module or distribution; "
                                   "pass a .so, .whl, device binary, importable name or pip package name")
            return Report(text, [r for p in files if (r := _inspect_or_error(p, str(p), deep))])
        target = str(located)
    if os.path.isdir(target):
        from pathlib import Path

        return Report(text, [r for p in _candidates(Path(target)) if (r := _inspect_or_error(p, str(p), deep))])
    if os.path.splitext(target)[1] in (".whl", ".zip"):
        import zipfile
        from pathlib import Path

        if zipfile.is_zipfile(target):
            return Report(text, list(_inspect_wheel(Path(target), deep)))
    with _mapped(target) as region, _cyclic_gc_paused():
        return Report(text, [_inspect_region(region, target, deep)])


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while one binary is walked (issue 6, P4).

    A large SYCL library yields ~14,000 image records; their allocation alone triggered cyclic
    collections costing ~8 ms of a ~53 ms inspect (measured on mkl-dpcpp's 650 MB library). The
    records hold no reference cycles, so reference counting frees them all the same; the caller's
    collector state is restored on exit, and left alone if it was already off.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
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
    """The first SPIR-V module: a SPIR-V image (spir64), else one a vendor's image carries
    (:func:`embedded_spirv`: an ocloc fat binary's ``generic_ir``)."""
    report = inspect(path)
    for fr in report.files:
        for img in fr.images:
            if _SPIRV in (img.kind, img.content):
                return image_bytes(fr.path, img)
        for img in fr.images:
            spirv = embedded_spirv(fr.path, img)
            if spirv is not None:
                return spirv
    return None


def embedded_spirv(path: str, img: Image) -> bytes | None:
    """The SPIR-V module a vendor's image carries besides its native code (an ocloc fat binary's
    ``generic_ir``), asked of the backend that reads the image's kind; ``None`` if none."""
    reader = _readers().by_image_kind.get((img.content if img.compressed else None) or img.kind)
    if reader is None:
        return None
    return reader.spirv_in(img, lambda: image_bytes(path, img), f"{path} (image {img.index})")


_generic_ir_spirv = embedded_spirv  # the name aotwheel.opencl imports


# --------------------------------------------------------------------------------------------
# Opening inputs


class _mapped:  # lower case: used as a function, `with _mapped(path) as region:`
    """The whole file at ``path`` as a :class:`Region`, for the block: a read-only map, or the
    bytes of a file of at most ``_READ_WHOLE`` bytes (one read costs less than mapping it and
    importing mmap: 0.15 ms of ``aotwheel inspect``'s start-up, for a 44 KB library)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        # What a mapped file holds until __exit__ (an open file, its map, the C scanners' registration).
        self.fh: Any = None
        self.mm: Any = None
        self.registered: Any = None

    def __enter__(self) -> Region:
        label = os.fspath(self.path)
        try:
            fh = open(self.path, "rb")
        except OSError as exc:
            raise InspectError(f"{label}: cannot open ({exc.strerror}); check the path and permissions") from None
        try:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise InspectError(f"{label}: empty file at offset 0x0; rebuild or re-download it")
            if size <= _READ_WHOLE:
                with fh:
                    return Region(fh.read(), label)
            import mmap

            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except BaseException:
            fh.close()
            raise
        if hasattr(mm, "madvise") and hasattr(mmap, "MADV_RANDOM"):
            # Headers are scattered through big binaries; default readahead would pull in
            # most of the file around each of them.
            mm.madvise(mmap.MADV_RANDOM)
        if hasattr(os, "posix_fadvise"):  # the same for the C scanners' pread on the descriptor
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        from aotwheel.formats.fastscan import mapped_file

        self.fh, self.mm = fh, mm
        self.registered = mapped_file(mm, fh.fileno())  # the C scanners pread headers from it
        self.registered.__enter__()
        return Region(mm, label)

    def __exit__(self, *exc: object) -> None:
        if self.fh is None:  # read whole: nothing held
            return
        try:
            self.registered.__exit__(*exc)
            try:
                self.mm.close()
            except BufferError:
                pass  # a memoryview still exported; the map is freed with its last view
        finally:
            self.fh.close()


@contextlib.contextmanager
def _open_member(spec: str) -> Iterator[Region]:
    """``wheel.whl!pkg/lib.so``: extract that member to a temporary file and map it."""
    import tempfile
    import zipfile
    from pathlib import Path

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


def _open_any(spec: str) -> AbstractContextManager[Region]:
    """A file, or a wheel's member named ``wheel.whl!member``, as a :class:`Region`."""
    return _open_member(spec) if not os.path.exists(spec) and _WHEEL_SEP in spec else _mapped(spec)


def _zip_errors() -> tuple[type[BaseException], ...]:
    """What zipfile lets through from a damaged archive besides BadZipFile: codec errors (zlib,
    lzma; bz2 raises OSError), NotImplementedError (unknown method or version), RuntimeError
    (encrypted member), ValueError/UnicodeDecodeError (names), EOFError, IndexError."""
    import lzma
    import zipfile
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
    import shutil

    try:
        with zf.open(info) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    except _zip_errors() as exc:
        raise InspectError(f"{where}: cannot extract ({_printable(str(exc))[:200]}); re-download the wheel") from None


def _inspect_wheel(wheel: Path, deep: bool) -> Iterator[FileReport]:
    import tempfile
    import zipfile
    from pathlib import Path

    try:
        zf = zipfile.ZipFile(wheel)
    except _zip_errors() as exc:
        raise InspectError(f"{wheel}: not a readable wheel ({_printable(str(exc))[:200]}) at offset 0x0; re-download it") from None
    with zf, tempfile.TemporaryDirectory(prefix="aotwheel-inspect-") as tmp:
        for info in zf.infolist():
            if not info.filename or info.is_dir() or not _candidate_re().search(info.filename):
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
        if sniff(fh.read(64)) == _UNKNOWN:
            return None
    with _mapped(path) as region:
        return _inspect_region(Region(region.buf, label), label, deep)


def _candidates(root: Path) -> list[Path]:
    candidate = _candidate_re()
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and candidate.search(p.name))


def _distribution_files(name: str) -> list[Path] | None:
    """Binaries an installed distribution's RECORD lists (``onemkl-sycl-blas`` keeps its library in
    ``<prefix>/lib``, outside any importable package); ``None`` if no such distribution."""
    import re
    from importlib import metadata
    from pathlib import Path

    if not re.fullmatch(_DIST_PATTERN, name):
        return None

    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    found: dict[Path, None] = {}
    for entry in dist.files or ():
        if _candidate_re().search(entry.name):
            p = Path(str(dist.locate_file(entry))).resolve()
            if p.is_file() and not p.is_symlink():
                found[p] = None
    return sorted(found)


def _locate_module(name: str) -> Path | None:
    """Find an installed module or package without importing (and so without running) it."""
    import re
    from importlib.machinery import PathFinder
    from pathlib import Path

    if not re.fullmatch(_MODULE_PATTERN, name):
        return None

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


@dataclass(eq=False, repr=False)  # never compared or printed: made once per process, at start-up
class _Readers:
    """Who reads what, from every registered reader's ``READS`` (built once per set of readers)."""

    magic: tuple[tuple[bytes, Reader], ...]
    by_file_kind: dict[str, tuple[Reader, ...]]
    by_image_kind: dict[str, Reader]
    host: tuple[Reader, ...]  # in registry order: their images follow in that order
    ir_by_arch: dict[str, ImageKind]  # an offload triple's first component -> the IR its images are
    suffixes: tuple[str, ...]  # file name endings the readers add to the walks' (_CANDIDATE_SUFFIXES)
    elf_kinds: ElfKinds | None = None  # the readers' ELF-based formats (sniff's second argument); None: they have none
    offload_image_kinds: tuple[tuple[int, str], ...] = ()  # OffloadBinary image kind numbers the readers name
    formats: tuple[str, ...] = ()  # the readers' formats, as the "not an ELF, ..." error line names them
    carried: tuple[tuple[bytes, tuple[Reader, ...]], ...] = ()  # standalone images' magic -> the readers that recognise them
    own_sections: frozenset[str] = frozenset()  # the readers' host sections (parsed whole: not searched for carried images)

    def ir_of(self, triple: str | None) -> ImageKind | None:
        """The IR kind images for ``triple`` hold by what the compiler put there (SYCL spir64: SPIR-V)."""
        return None if triple is None else self.ir_by_arch.get(triple.partition("-")[0])


def _candidate_re() -> re.Pattern[str]:
    """File names a wheel or directory walk reads."""
    import re

    suffixes = _readers().suffixes
    return re.compile(f"({'|'.join([_CANDIDATE_SUFFIXES, *(re.escape(x) for x in suffixes)])})$")


def _readers() -> _Readers:
    readers: tuple[Reader, ...] = _registry.all_readers()  # type: ignore[assignment]
    known = _READERS.get(readers)
    if known is None:
        if len(_READERS) >= 4:  # registered readers change only in tests
            _READERS.clear()
        known = _READERS[readers] = _readers_of(readers)
    return known


_READERS: dict[tuple[Reader, ...], _Readers] = {}


def _readers_of(readers: tuple[Reader, ...]) -> _Readers:
    by_file_kind: dict[str, tuple[Reader, ...]] = {}
    by_image_kind: dict[str, Reader] = {}
    carried: dict[bytes, tuple[Reader, ...]] = {}
    for r in readers:
        for magic in r.READS.carried:
            carried[magic] = carried.get(magic, ()) + (r,)
        for kind in r.READS.file_kinds:
            by_file_kind[kind] = by_file_kind.get(kind, ()) + (r,)
        for kind in r.READS.image_kinds:
            by_image_kind.setdefault(kind, r)  # the first backend to claim a kind reads it
    return _Readers(magic=tuple((m, r) for r in readers for m in r.READS.magic), by_file_kind=by_file_kind,
                    by_image_kind=by_image_kind, host=tuple(r for r in readers if r.READS.sections),
                    ir_by_arch={arch: ImageKind(kind) for r in readers for arch, kind in r.READS.ir_triples},
                    suffixes=tuple(x for r in readers for x in r.READS.suffixes),
                    elf_kinds=ElfKinds((t, m, ImageKind(kind)) for r in readers for t, m, kind in r.READS.elf_kinds) or None,
                    offload_image_kinds=tuple(x for r in readers for x in r.READS.offload_image_kinds),
                    formats=tuple(x for r in readers for x in r.READS.formats), carried=tuple(carried.items()),
                    own_sections=frozenset(x for r in readers for x in r.READS.sections))


@dataclass(eq=False, repr=False)  # never compared or printed: a binary's walk state
class _Walk:
    """One binary being read (an :class:`aotwheel.backends.protocol.ImageWalk` for the readers)."""

    report: FileReport
    deep: bool
    readers: _Readers = field(default_factory=lambda: _readers())
    # Per-walk answers that repeat across images, kept by the readers (a library of a thousand fat
    # binary members has a handful of distinct ones); and the walk's zstd decompression context.
    memo: dict[Any, Any] = field(default_factory=dict)
    max_depth = _MAX_DEPTH

    def add_ir(self, kind: str) -> None:
        if kind not in self.report.ir:
            self.report.ir.append(kind)

    def note_ir(self, kind: str | None) -> None:  # a reader's nested IR (generic_ir): kept when a slot is damaged
        self.memo.setdefault("noted-ir", set()).add(kind)
        _note_ir(self, kind)

    def add_image(self, region: Region, *, triple: str | None, section: str | None, offload_arch: str | None = None) -> None:
        _add_image(self, region, triple=triple, section=section, offload_arch=offload_arch)

    def walk_content(self, region: Region, kind: ImageKind, img: Image, depth: int, member: str | None = None) -> None:
        _walk_content(self, region, kind, img, depth, member)


def _inspect_region(region: Region, label: str, deep: bool) -> FileReport:
    head = region.head(64)
    readers = _readers()
    kind = sniff(head, readers.elf_kinds)
    fr = FileReport(path=label, native_targets=[], ir=[], images=[], kernels=None, kind=kind)
    walk = _Walk(fr, deep, readers)
    if kind == _UNKNOWN:  # a vendor's own magic (formats.sniff knows the shared ones)
        for magic, reader in walk.readers.magic:
            if head.startswith(magic) and reader.read_file(walk, region, kind):
                return fr
    for reader in walk.readers.by_file_kind.get(kind, ()):
        if reader.read_file(walk, region, kind):
            return fr
    if kind == _ELF:
        _walk_host_file(walk, region)
    elif kind == _AR:  # no backend claimed it: a static library
        _walk_static_archive(walk, region)
    elif kind == _UNKNOWN and region.head(4) == b"PK\x03\x04":
        # A zip's directory sits at its end: a download cut short keeps the first member's header.
        raise InspectError(f"{label}: a truncated zip (wheel): it starts as a zip archive but has no end-of-central-directory "
                           f"record ({region.size} bytes); download or build the wheel again")
    elif kind == _UNKNOWN:
        *formats, last = _NOT_CONTAINERS + walk.readers.formats + _NOT_LEAVES
        raise InspectError(f"{label}: not an {', '.join(formats)} or {last} (magic {region.head(4).hex()}) at offset 0x0; pass a device binary")
    else:
        _add_image(walk, region, triple=None, section=None)
        if kind == _SPIRV:
            fr.kernels = fr.images[0].kernels
    return fr


def _walk_host_file(walk: _Walk, region: Region) -> None:
    """A host binary: the images its runtimes register, then those it keeps as data and loads
    itself (:mod:`aotwheel.carried`, into ``FileReport.carried``)."""
    view = _walk_host(walk, region)
    from aotwheel import carried

    fr, readers = walk.report, walk.readers
    fr.carried = carried.scan(region, view, fr, readers.carried, readers.own_sections, lambda r: _Walk(r, walk.deep, readers, walk.memo))


def _walk_host(walk: _Walk, region: Region) -> ElfView:
    from aotwheel.formats.elf import DESCRIPTORS_ALWAYS_UP_TO, open_elf, read_host

    view = open_elf(region)
    # This table's slots by index (the memo outlives one report: a static library's members share it).
    walk.memo["damaged"], walk.memo["walked"] = set(), set()
    for name in (".tgtimg", ".tgtsym"):  # read whole: one sweep, not a fault per page
        sec = view.section(name)
        if sec is not None and sec.type != "SHT_NOBITS" and sec.size > _PAGE:
            _will_need(region.buf, region.start + sec.offset, sec.size)
    # Bundle section names give the triples; small tables also get their descriptors' build options.
    # Without deep, the C scanner makes plain leaf images straight from the table (host.scan).
    host = read_host(view, all_descriptors=walk.deep, descriptors_up_to=DESCRIPTORS_ALWAYS_UP_TO, leaf_scan=not walk.deep)
    walk.report.kernels = host.kernels
    walk.report.kernels_by_triple = {k.removesuffix("-unknown-unknown"): v for k, v in host.kernels_by_triple.items()}
    fr, buf, start = walk.report, region.buf, region.start
    from aotwheel.formats import fastscan

    first = len(fr.images)
    if host.scan is not None:
        _walk_table(walk, region, host.scan, host.images)
        _judge_leaves(walk, first, region, view)
    else:
        fs = None if walk.deep else fastscan.module()
        all_images = host.images
        for lo in range(0, len(all_images), _READAHEAD_IMAGES):
            chunk = all_images[lo : lo + _READAHEAD_IMAGES]
            _read_ahead(buf, start, chunk)
            # C makes the same leaf Images as _walk_host_image up to each image it leaves to it.
            for img in chunk if fs is None else _left_by(fs, buf, start, region.where(0), chunk, fr.images, fr.ir):
                _walk_host_image(walk, region, img)
        if fs is not None:
            _judge_leaves(walk, first, region, view)
    if not walk.deep:
        _peek_ir_slots(walk, first, region)
    if walk.memo.get("damaged"):
        _drop_damaged_ir(walk, first)
    for sec in host.offloading_sections:
        _walk_offloading(walk, region.sub(sec.offset, sec.size, "section '.llvm.offloading'"), sec.name)
    for reader in walk.readers.host:  # the vendors' own sections (fat binaries, offload bundles)
        if any(view.section(name) is not None for name in reader.READS.sections):
            reader.read_host(walk, region, view, host)
    return view


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
    """One ``.tgtimg`` image (a HostImage) into the report; a damaged slot (:mod:`aotwheel.slots`)
    is a warning naming it, and no target is read from it."""
    count = len(walk.report.images)
    try:
        _walk_slot(walk, region, img)
    except InspectError as exc:  # this image's bytes, not the file's: the other images still count
        if len(walk.report.images) == count:
            walk.report.images.append(Image(count, region.where(img.offset), img.size, _UNKNOWN, img.triple, False, img.section))
        del walk.report.images[count + 1 :]
        walk.report.native_targets[:] = [t for t in walk.report.native_targets if t.image < count]  # never a claim from it
        _damaged(walk, walk.report.images[count], str(exc).removeprefix(f"{region.label}: ").split("; the file is corrupt")[0])


def _slots():  # type: ignore[no-untyped-def]
    import aotwheel.slots as slots  # at the first slot it judges, not at start-up

    return slots


def _slot_check(walk: _Walk, triple: str | None, content: str, size: int, trailing: int = 0, head: bytes = b"") -> str | None:
    """:func:`aotwheel.slots.slot_problem` for a slot of ``triple``; a slot whose triple no reader
    declares (or none) only when it is empty or ``head`` starts with no magic any reader knows."""
    slots = _slots()
    checked, ir = slots.family_ir(triple, walk.readers.ir_by_arch)
    if checked:
        return slots.slot_problem(content, size, ir, trailing=trailing, head=head or None)
    if content != _UNKNOWN and size:
        return None
    return slots.unjudged_problem(content, size, head, [m for m, _ in walk.readers.magic] + [m for m, _ in walk.readers.carried])


def _damaged(walk: _Walk, image: Image, problem: str) -> None:
    walk.memo.setdefault("damaged", set()).add(image.index)
    walk.report.warnings.append(_slots().damaged(image.index, image.triple, image.section, problem))


def _judge_leaves(walk: _Walk, first: int, region: Region, view: Any) -> None:
    """The plain leaves the C scanner made from the table (it reads magics, not slots): judged as
    :func:`_walk_slot` would judge them."""
    walked = walk.memo.get("walked", ())
    base = region.where(0)
    for image in walk.report.images[first:]:
        if image.index in walked:  # judged by _walk_slot
            continue
        problem = None
        if image.kind in _LEAF_KINDS:
            problem = _slot_check(walk, image.triple, image.kind, image.size)
        elif (image.compressed and image.listed_size not in (None, image.decompressed_size) and image.content is not None
              and (sec := view.section(image.section)) is not None
              and image.offset - base + image.listed_size <= sec.offset + sec.size):
            # listed inside its section (not cut at its end), neither the frame's size nor the
            # decompressed one: the slot holds more than the frame
            problem = _slot_check(walk, image.triple, image.content, image.listed_size or 0, (image.listed_size or 0) - image.size)
        if problem is not None:
            _damaged(walk, image, problem)


def _peek_ir_slots(walk: _Walk, first: int, region: Region) -> None:
    """The compressed IR slots the default walk named from their triple (the C scanner's leaves and
    the Python loop's alike): each frame's first block is decompressed and its head read, so that a
    fat binary (or anything else) in an IR slot is damage here too, as in ``--deep`` and the loader.
    A frame of one block (most SYCL images: a few KB) is decompressed whole and its checksum verified;
    a larger frame's checksum is left to ``--deep`` and the loader, which decompress it all."""
    damaged = walk.memo.get("damaged", ())
    readers, dctx = walk.readers, None
    irs: dict[str | None, ImageKind | None] = {}  # triple -> its IR (a table repeats a few triples)
    buf, origin = region.buf, region.origin
    for image in walk.report.images[first:]:
        if image.kind != _ZSTD or image.index in damaged:
            continue
        triple = image.triple
        ir = irs[triple] if triple in irs else irs.setdefault(triple, readers.ir_of(triple))
        if ir is None or image.content != ir:
            continue
        if dctx is None:
            dctx = _dctx(walk)
        try:
            head = _peek_frame(buf, image.offset - origin, image.size, dctx, image.decompressed_size)
        except ValueError as exc:
            _damaged(walk, image, str(exc))
            continue
        content = sniff(head, readers.elf_kinds)
        if content != ir:
            image.content = content
            _damaged(walk, image, _slot_check(walk, image.triple, content, image.size, head=head) or f"it holds {content}")


def _peek_frame(buf: Any, at: int, size: int, dctx: Any, declared: int | None) -> bytes:
    """:func:`aotwheel.formats.zstd.peek_frame`, imported at the first compressed IR slot (then
    called directly: this name is rebound to it), not at start-up."""
    global _peek_frame
    from aotwheel.formats.zstd import peek_frame

    _peek_frame = peek_frame
    return peek_frame(buf, at, size, dctx, declared)


def _dctx(walk: _Walk) -> Any:
    """The walk's zstd decompression context (one per walk: a new one per image was half the cost)."""
    dctx = walk.memo.get("zstd-dctx")
    if dctx is None:
        import zstandard

        dctx = walk.memo["zstd-dctx"] = zstandard.ZstdDecompressor()
    return dctx


def _drop_damaged_ir(walk: _Walk, first: int) -> None:
    """No IR claim from a damaged slot: an IR kind only damaged images of the table gave (the C
    scanner lists a leaf's kind before its slot is judged) leaves ``ir``, unless an intact image or
    a reader (the IR a native image carries beside its code) also gave it."""
    fr, damaged = walk.report, walk.memo["damaged"]
    lost = {k for img in fr.images[first:] if img.index in damaged
            for k in (img.kind, img.content, walk.readers.ir_of(img.triple)) if k in _LEAF_KINDS}
    if not lost:
        return
    backed = {k for img in fr.images if img.index not in damaged for k in (img.kind, img.content)} | walk.memo.get("noted-ir", set())
    fr.ir[:] = [k for k in fr.ir if k not in lost or k in backed]


def _walk_slot(walk: _Walk, region: Region, img: HostImage) -> None:
    walk.memo.setdefault("walked", set()).add(len(walk.report.images))
    fr, buf, start, base, deep = walk.report, region.buf, region.start, region.where(0), walk.deep
    images, ir = fr.images, fr.ir
    # Most images of big libraries are SPIR-V, which the default mode only notes: read the
    # magic straight from the map and skip the sub-region and the walk (14k images in mkl).
    off, size = img.offset, img.size
    a = start + off
    kind = _SPIRV if size >= 4 and buf[a : a + 4] == SPIRV_MAGIC else sniff(bytes(buf[a : a + (size if size < 64 else 64)]), walk.readers.elf_kinds)
    if kind in _LEAF_KINDS and (problem := _slot_check(walk, img.triple, kind, size)) is not None:
        leaf = Image(len(images), base + off, size, kind, img.triple, False, img.section)
        images.append(leaf)
        _damaged(walk, leaf, problem)
        return
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
    elif kind == _ZSTD and not deep and (content := walk.readers.ir_of(img.triple)) is not None \
            and (facts := _zstd_frame_facts(buf, a, size)) is not None:
        # What _add_image does for a compressed IR image (SYCL spir64), minus its sub-regions
        # (19k such images in an XPU environment).
        stored, declared = facts
        leaf = Image(len(images), base + off, stored, kind, img.triple, True, img.section, content, declared)
        images.append(leaf)
        if img.listed_size is None and stored != size and size != declared:  # (onemkl lists the decompressed size)
            _damaged(walk, leaf, _slots().slot_problem(content, size, content, trailing=size - stored) or "")
            return
        if content not in ir:
            ir.append(content)
        if img.compile_options is not None or img.link_options is not None:
            leaf.compile_options, leaf.link_options = img.compile_options, img.link_options
        if img.listed_size is not None or stored != size:
            leaf.listed_size = size if img.listed_size is None else img.listed_size
    else:
        _add_image(walk, region.sub(off, size, f"image at {off:#x}"), triple=img.triple, section=img.section,
                   slot=True, exact=img.listed_size is None)
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


def _zstd_frame_facts(buf: object, at: int, size: int) -> tuple[int, int | None] | None:
    """:func:`aotwheel.formats.zstd.frame_facts`, imported at the first compressed image (then
    called directly: this name is rebound to it), not at start-up."""
    global _zstd_frame_facts
    from aotwheel.formats.zstd import frame_facts

    _zstd_frame_facts = frame_facts
    return frame_facts(buf, at, size)


_will_need = will_need  # formats.region's: also what aotwheel.carried asks before it searches a gap


def _cut_warning(index: int, listed: int, section: str | None, size: int) -> str:
    return f"image {index}: the image table lists {listed} bytes, past the end of {section or 'its segment'}; read as the {size} bytes there"


def _walk_offloading(walk: _Walk, region: Region, section: str | None) -> None:
    from aotwheel.formats.offload import read_all

    for entry in read_all(region, walk.readers.offload_image_kinds):
        triple = entry.strings.get("triple")
        _add_image(
            walk,
            region.sub(entry.image_offset, entry.image_size, "OffloadBinary image"),
            triple=triple,
            section=section,
            offload_arch=entry.strings.get("arch"),
        )


def _walk_static_archive(walk: _Walk, region: Region) -> None:
    """A static library, member by member: each host object is walked as a host binary of its own
    (its registered images, ``.llvm.offloading`` sections, the vendors' sections, its carried
    images), and what it carries is added to the archive's report, each image's section named
    ``member:section``; a member that is itself a device binary a reader names is one image."""
    from aotwheel.formats.ar import read_ar

    fr = walk.report
    for m in read_ar(region):
        member = region.sub(m.offset, m.size, f"ar member {m.name!r}")
        kind = sniff(member.head(64), walk.readers.elf_kinds)
        if kind in walk.readers.by_image_kind:  # a cubin, zebin or code object kept as a member
            _add_image(walk, member, triple=None, section=m.name)
            continue
        if kind != _ELF:
            continue  # host bitcode (LTO objects), text: no device code a runtime loads
        one = FileReport(path=fr.path, native_targets=[], ir=[], images=[], kernels=None, kind=_ELF)
        try:
            _walk_host_file(_Walk(one, walk.deep, walk.readers, walk.memo), member)
        except InspectError as exc:  # one unreadable object: the others are still reported, as a wheel's files are
            fr.warnings.append(f"{m.name}: not read: {exc}")
            continue
        _add_member(fr, one, m.name)
        if one.carried is not None:
            if fr.carried is None:
                fr.carried = FileReport(path=fr.path, native_targets=[], ir=[], images=[], kernels=None, kind=one.carried.kind)
            _add_member(fr.carried, one.carried, m.name)


def _add_member(fr: FileReport, one: FileReport, name: str) -> None:
    """Archive member ``name``'s report ``one`` into the archive's ``fr``: its images renumbered
    after those already there, sections prefixed with the member, warnings naming it. Kernel counts
    are per member (names repeat across members), so the archive's stays unknown."""
    shift = len(fr.images)
    for img in one.images:
        img.index += shift
        img.section = f"{name}:{img.section}" if img.section else name
    for t in one.native_targets:
        t.image += shift
    fr.images += one.images
    fr.native_targets += one.native_targets
    fr.ir += [k for k in one.ir if k not in fr.ir]
    fr.warnings += [f"{name}: {w}" for w in one.warnings]
    for backend, fields in one.vendor.items():
        fr.fields(backend).add_member(fields, name)
    for triple, n in one.ir_kernels_missing_from.items():
        fr.ir_kernels_missing_from[triple] = fr.ir_kernels_missing_from.get(triple, 0) + n


def _add_image(walk: _Walk, region: Region, *, triple: str | None, section: str | None, offload_arch: str | None = None,
               slot: bool = False, exact: bool = False) -> None:
    """One image into the report. ``slot``: an image table's slot, judged by :mod:`aotwheel.slots`
    before anything is read from it; ``exact``: the table's size is the slot's (a zstd frame must
    fill it)."""
    fr = walk.report
    index = len(fr.images)
    head = _head(region, 64)
    kind = sniff(head, walk.readers.elf_kinds)
    img = Image(index, region.where(0), region.size, kind, triple, kind == _ZSTD, section)  # positional: 13k calls in an XPU env
    if offload_arch is not None:
        img.arch = offload_arch
    fr.images.append(img)
    if slot and kind != _ZSTD and (problem := _slot_check(walk, triple, kind, region.size, head=head)) is not None:
        _damaged(walk, img, problem)
        return
    if kind == _ZSTD:
        from aotwheel.formats import zstd

        stored = zstd.frame_size(region)
        if stored != region.size:
            img.listed_size, img.size = region.size, stored
            if slot and exact and region.size != zstd.content_size(region):  # (onemkl lists the decompressed size)
                _damaged(walk, img, _slots().slot_problem(kind, region.size, None, trailing=region.size - stored) or "")
                return
            region = region.sub(0, stored, "zstd frame")
    if walk.deep:
        import hashlib

        img.sha256 = hashlib.sha256(region.view(0, region.size, "image")).hexdigest()
    if kind == _ZSTD:
        img.decompressed_size = zstd.content_size(region)
        if not walk.deep and (ir := walk.readers.ir_of(triple)) is not None:
            # A SYCL spir64 image is SPIR-V by what the compiler put there (a backend's
            # ReadSpec.ir_triples); decompressing just to see its magic cost ~10 us of zstd per
            # image (19k images in an XPU environment). Deep mode decompresses and reads the
            # content (documented in docs/report-schema.md).
            img.content = ir
            _note_ir(walk, ir)
            return
        head = zstd.peek(region, 64, _dctx(walk))
        img.content = sniff(head, walk.readers.elf_kinds)
        if slot and (problem := _slot_check(walk, triple, img.content, img.decompressed_size or 1, head=head)) is not None:
            _damaged(walk, img, problem)
            return
        # Native content can only be listed after decompression; SPIR-V needs it only in deep mode.
        if img.content in walk.readers.by_image_kind or img.content == _OFFLOAD or walk.deep:
            data = zstd.decompress(region)
            img.decompressed_size = len(data)
            inner = Region(data, f"{region.label} (image {index}, decompressed)")
            _walk_content(walk, inner, img.content, img, depth=1)
        else:
            _note_ir(walk, img.content)
        return
    _walk_content(walk, region, kind, img, depth=0)


def _head(region: Region, n: int) -> bytes:
    """``region.head(n)`` minus its call layers: it runs once per image (14k in large libraries)."""
    a = region.start
    return bytes(region.buf[a : a + min(n, region.size)])


def _note_ir(walk: _Walk, kind: str | None) -> None:
    if kind in _LEAF_KINDS:
        walk.add_ir(kind)  # type: ignore[arg-type]


def _walk_content(walk: _Walk, region: Region, kind: ImageKind, img: Image, depth: int, member: str | None = None) -> None:
    if depth > _MAX_DEPTH:
        raise region.error(0, "device images nested too deeply")
    if kind == _SPIRV:
        walk.add_ir(_SPIRV)
        if walk.deep or img.kind == _SPIRV and img.index == 0 and walk.report.kind == _SPIRV:
            from aotwheel.formats.spirv import read_spirv

            img.kernels = read_spirv(region, count_kernels=True).kernels
    elif kind == _LLVMBC:
        walk.add_ir(_LLVMBC)
    elif kind == _OFFLOAD:
        _walk_offloading(walk, region, img.section)
    elif kind == _ZSTD:
        raise region.error(0, "zstd image nested inside a compressed image")
    else:
        reader = walk.readers.by_image_kind.get(kind)
        if reader is not None:  # a vendor's format
            reader.read_image(walk, region, kind, img, depth, member)
