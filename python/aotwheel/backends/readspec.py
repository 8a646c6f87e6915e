"""What a vendor's binary reader reads: its ``READS``, a :class:`ReadSpec`.

A module of its own, below both the readers' list (:mod:`aotwheel.backends.readers`, which
imports the reader modules) and the reader modules that declare one, and apart from the registry
(:mod:`aotwheel.backends`), which every build step imports without :mod:`dataclasses`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReadSpec:
    """What of a binary a backend reads (a :class:`Reader` module's ``READS``).

    :mod:`aotwheel.inspector` walks the vendor-free containers (wheels, host ELFs and their
    ``.tgtimg`` tables and ``.llvm.offloading`` sections, static libraries, zstd frames,
    OffloadBinaries) and hands the payloads claimed here to the reader's functions."""

    magic: tuple[bytes, ...] = ()  # whole files starting with one of these (kind "unknown" to sniff): read_file
    file_kinds: tuple[str, ...] = ()  # whole files of these sniffed kinds: read_file, which may decline
    sections: tuple[str, ...] = ()  # host ELF sections: read_host runs when one of them is present
    image_kinds: tuple[str, ...] = ()  # embedded images and archive members of these kinds: read_image
    # (an offload triple's first component, the IR kind its images are): the inspector notes such
    # images as that IR without decompressing them (SYCL: spir64 -> SPIR-V)
    ir_triples: tuple[tuple[str, str], ...] = ()
    suffixes: tuple[str, ...] = ()  # file names (besides .so, .a, .o, .spv, .bin, .ar) a wheel or directory walk reads
    # Readers are asked in ascending ``order``, ties in the backends' registry order: a host binary's
    # images of several vendors follow that order in its report (HIP bundles before CUDA fat binaries).
    order: int = 0
    # Its ELF-based formats, (e_type, e_machine, kind) with None for any (formats.sniff.ElfKinds
    # says which rule wins): the inspector names a sniffed ELF (a whole file, an image, a zstd
    # frame's content) by them, and hands it to read_file / read_image by that kind.
    elf_kinds: tuple[tuple[int | None, int | None, str], ...] = ()
    # LLVM OffloadBinary image kind numbers of its formats -> their names (OffloadEntry.image_kind).
    offload_image_kinds: tuple[tuple[int, str], ...] = ()
    # What its whole files are called in the inspector's "not an ELF, wheel, ar, ..." error line.
    formats: tuple[str, ...] = ()
    # Its native targets have IP versions (Target.ip): ``aotwheel inspect``'s IP column shows "?"
    # for one it could not read, and "-" (does not apply) for the other vendors' targets.
    ip_versions: bool = False
    # Magic numbers of standalone images a library may keep in its data sections and load itself
    # (cuModuleLoadData, zeModuleCreate, hipModuleLoadData): the inspector finds each in a host
    # ELF's data sections, outside the images a runtime registers, and hands it to read_carried.
    carried: tuple[bytes, ...] = ()
    # Its reader defines ``serves(file) -> list[str]``: ``aotwheel inspect``'s note on images that
    # serve devices besides their own (Intel's shared members, such as 64.bmg).
    serves: bool = False
