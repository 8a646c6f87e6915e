"""Bindless kernels in a zebin, and what the OpenCL driver does with them.

compute-runtime's OpenCL rebuilds from IR every program whose kernels use bindless addressing
(``opencl/source/program/program.cpp``: ``rebuild |= AddressingModeHelper::containsBindlessKernel(...)``,
first release 24.22, commit 59829aeb11; with no IR the binary is refused), while Level Zero loads
them as they are (``level_zero/core/source/module/module_imp.cpp`` has no such rule). ocloc 24.22
and newer compile bindless wherever a release enables it (``offline_compiler.cpp``, unless
``-stateful_address_mode bindful``): measured with ocloc 26.27, dg2, mtl and arl images of a
kernel with buffer arguments carry ``addrmode: bindless`` arguments, pvc, bmg, lnl, ptl, nvl and cri
ones stateless only. A kernel's addressing is in the zebin's ``.ze_info`` (YAML), read here.
"""

from __future__ import annotations

import re
from typing import Any

OPENCL_REBUILDS_SINCE = (24, 22)  # compute-runtime release whose OpenCL rebuilds bindless programs
ZE_INFO = ".ze_info"
MAX_ZE_INFO = 16 * 1024 * 1024  # a larger .ze_info is not a real one: read no further
_BINDLESS = re.compile(rb"^\s*addrmode:\s*bindless\s*$", re.M)


def has_bindless_kernels(zebin: bytes, label: str = "zebin") -> bool:
    """Whether any kernel argument of ``zebin`` (one zebin ELF) is addressed bindless."""
    from aotwheel.formats.elf import open_elf
    from aotwheel.formats.region import Region

    region = Region(zebin, label)
    section = open_elf(region).section(ZE_INFO)
    if section is None or section.size > MAX_ZE_INFO:
        return False
    return _BINDLESS.search(region.read(section.offset, section.size, ZE_INFO)) is not None


def image_of(path: str, file: Any, target: Any) -> bytes | None:
    """The zebin ``target`` (a native target of the inspected ``file``) stands for: the bare image,
    or its member of an ocloc fat binary, read through the containers of layer 1 (a wheel member
    ``wheel!member`` through zipfile); None when it cannot be found."""
    from aotwheel.formats.ar import read_ar
    from aotwheel.formats.region import Region

    image = next((img for img in getattr(file, "images", ()) if img.index == getattr(target, "image", None)), None)
    if image is None:
        return None
    data = _stored(path, image.offset, image.size)
    if image.compressed:
        from aotwheel.formats import zstd

        data = zstd.decompress(Region(data, f"{path} (image {image.index})"))
    member = (getattr(target, "member", None) or "").rstrip("/")
    if not member:
        return data
    region = Region(data, f"{path} (image {image.index})")
    found = next((m for m in read_ar(region) if m.name == member), None)
    return region.read(found.offset, found.size, member) if found is not None else None


def _stored(path: str, offset: int, size: int) -> bytes:
    outer, sep, member = path.partition("!")
    if sep:
        import zipfile

        with zipfile.ZipFile(outer) as wheel, wheel.open(member) as fh:
            fh.seek(offset)
            return fh.read(size)
    with open(path, "rb") as fh:
        fh.seek(offset)
        return fh.read(size)
