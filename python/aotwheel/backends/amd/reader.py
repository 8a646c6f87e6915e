"""AMD's binary readers (the :class:`aotwheel.backends.protocol.Reader` of the AMD backend).

HIP keeps its device code in clang offload bundles (a whole bundle file, or a host ELF's
``.hip_fatbin``; formats.bundle reads them, plain or CCOB-compressed); each ``amdgcn`` entry is a
code object (:mod:`.codeobject`), one native target named by its bundle entry's target id.
"""

from __future__ import annotations

from aotwheel.backends.amd import AMD
from aotwheel.backends.readspec import ReadSpec
from aotwheel.model import Image, ImageKind, Target

TYPE_CHECKING = False  # not typing's: the inspector imports every reader
if TYPE_CHECKING:
    from collections.abc import Callable

    from aotwheel.backends.protocol import ImageWalk
    from aotwheel.formats.elf import ElfView, HostOffload
    from aotwheel.formats.region import Region

CODE_OBJECT = ImageKind.declare("code-object")  # an HSA code object (offload bundle entry)
_EM_AMDGPU_LE = (224).to_bytes(2, "little")  # codeobject.EM_AMDGPU, as an x86 host keeps it

# HIP offload bundles, whole or in a host; code objects a library loads itself (read_carried).
READS = ReadSpec(file_kinds=(ImageKind.BUNDLE,), sections=(".hip_fatbin",), carried=(b"\x7fELF",))


def read_file(walk: ImageWalk, region: Region, kind: ImageKind) -> bool:
    """A whole clang offload bundle file."""
    _walk_hip(walk, region, None)
    return True


def read_host(walk: ImageWalk, region: Region, view: ElfView, host: HostOffload) -> None:
    hip = view.section(".hip_fatbin")
    if hip is not None and hip.type != "SHT_NOBITS" and hip.size:
        _walk_hip(walk, region.sub(hip.offset, hip.size, "section '.hip_fatbin'"), ".hip_fatbin")


def read_image(walk: ImageWalk, region: Region, kind: ImageKind, img: Image, depth: int, member: str | None) -> None:
    """No embedded image kind is AMD's (the spec claims none)."""


def read_carried(walk: ImageWalk, region: Region, magic: bytes, section: str) -> int:
    """A code object (an EM_AMDGPU ELF whose header and sections lie inside ``region``) that the
    library loads itself (hipModuleLoadData): one native target, its processor from ``e_flags``."""
    if region.size < 64 or region.read(18, 2, "ELF header") != _EM_AMDGPU_LE:
        return 0  # before any import: codeobject imports dataclasses, which `aotwheel inspect` of a host library must not
    from aotwheel.backends.amd.codeobject import EM_AMDGPU, processor_name, read_code_object
    from aotwheel.formats.elf import standalone_size

    size = standalone_size(region, (EM_AMDGPU,))
    if size is None:
        return 0
    code = read_code_object(region)
    fr = walk.report
    name = processor_name(code.mach)
    img = Image(index=len(fr.images), offset=region.where(0), size=size, kind=CODE_OBJECT, triple="amdgcn-amd-amdhsa", compressed=False,
                section=section, arch=name)
    fr.images.append(img)
    target_id = None if name is None else name + "".join(f":{f}{'+' if v == 'on' else '-'}" for f, v in (("sramecc", code.sramecc), ("xnack", code.xnack))
                                                         if v in ("on", "off"))
    fr.native_targets.append(Target(name=target_id, ip=None, member=None, format=CODE_OBJECT, size=size, image=img.index, vendor=AMD, arch=name))
    return size


def spirv_in(img: Image, load: Callable[[], bytes], label: str) -> bytes | None:
    return None


def _walk_hip(walk: ImageWalk, region: Region, section: str | None) -> None:
    """AMD: one Image per clang offload bundle (plain or CCOB), its entries as members, and one
    native target (vendor ``amd``) per code object, named by its bundle entry's target id."""
    from aotwheel.backends.amd.codeobject import read_code_object
    from aotwheel.formats.bundle import read_hip_fatbin

    fr = walk.report
    for b in read_hip_fatbin(region):
        img = Image(index=len(fr.images), offset=region.where(b.offset), size=b.stored_size, kind=ImageKind.BUNDLE, triple=None,
                    compressed=b.compressed is not None, section=section, content=ImageKind.BUNDLE,
                    decompressed_size=b.compressed.uncompressed_size if b.compressed else None,
                    members=[e.id for e in b.entries])
        if walk.deep:
            import hashlib

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
            fr.native_targets.append(Target(name=e.target_id or None, ip=None, member=e.id, format=CODE_OBJECT, size=e.size,
                                            image=img.index, vendor=AMD, arch=e.target_id.split(":")[0] or None))


def _feature_sign(target_id: str, feature: str) -> str | None:
    for part in target_id.split(":")[1:]:
        if part[:-1] == feature:
            return part[-1]
    return None
