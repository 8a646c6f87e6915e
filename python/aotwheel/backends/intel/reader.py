"""Intel's binary readers (the :class:`aotwheel.backends.protocol.Reader` of the Intel backend).

The inspector walks the containers and hands over what is Intel's: ocloc fat binaries (ar archives
of ``64.<ip>`` / ``64.<name>`` / ``generic_ir`` members, the C scanner ``formats.fastscan`` reads
them in one call), zebin and legacy patch-token GPU binaries, CPU AOT images and IR-only ELFs.
Every native binary becomes one :class:`aotwheel.model.Target` named from the catalog.
"""

from __future__ import annotations

from aotwheel.backends.intel import INTEL
from aotwheel.backends.intel.kinds import CPU_AOT, ELF_KINDS, ELF_LOOKUP, IR_ELF, LEGACY, ZEBIN
from aotwheel.backends.readspec import ReadSpec
from aotwheel.formats.region import Region
from aotwheel.formats.sniff import sniff
from aotwheel.model import Image, ImageKind, NativeTarget, Target
from aotwheel.report import note_contained_ir

TYPE_CHECKING = False  # not typing's: the inspector imports every reader
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from aotwheel.backends.protocol import ImageWalk
    from aotwheel.formats.elf import ElfView, HostOffload
    from aotwheel.report import FileReport

CPU_TRIPLE = "spir64_x86_64"  # the name a CPU AOT image's native target carries
GPU_TRIPLE = "spir64_gen"  # SYCL's triple of ocloc's GPU images
IR_TRIPLE = "spir64"  # SYCL's triple of SPIR-V images

# Whole ocloc fat binaries (an ar, when it is not a static library) and legacy binaries; embedded
# fat binaries, zebin/legacy GPU binaries, CPU AOT images and IR-only ELFs (the ELF files
# kinds.ELF_KINDS names); SYCL's spir64 images are SPIR-V; a SYCL host's .tgtsym tells which
# kernels only the IR serves.
READS = ReadSpec(file_kinds=(ImageKind.AR, LEGACY), sections=(".tgtsym",), image_kinds=(ImageKind.AR, ZEBIN, LEGACY, CPU_AOT, IR_ELF),
                 ir_triples=((IR_TRIPLE, ImageKind.SPIRV),), suffixes=(".zebin",), elf_kinds=ELF_KINDS, formats=("zebin",),
                 ip_versions=True, carried=(b"\x7fELF", b"\x03\x02\x23\x07"),  # library-loaded zebins and SPIR-V: read_carried
                 serves=True)
# SPIR-V that a binary carries only inside a GPU fat binary (its generic_ir member, or an IR-only
# ELF): the runtime never hands it to a CPU (issue 14).
note_contained_ir(ImageKind.SPIRV, "generic_ir: Intel GPUs only")
_FASTSCAN = ("fastscan",)  # the walk's memo key of the C scanner module (or None)
_ZEBIN, _LEGACY, _CPU_AOT, _IR_ELF, _AR = ZEBIN, LEGACY, CPU_AOT, IR_ELF, ImageKind.AR


def read_file(walk: ImageWalk, region: Region, kind: ImageKind) -> bool:
    """A whole ocloc fat binary (an ar that is not a static library) or legacy binary."""
    if kind == _AR and not _is_fat_binary(region):
        return False  # a static library: the inspector reads its members' offload sections
    walk.add_image(region, triple=None, section=None)
    if kind == _AR:
        walk.report.kernels = _fat_binary_kernels(region)
    if kind == _LEGACY:
        from aotwheel.backends.intel.legacy import read_legacy

        walk.report.kernels = read_legacy(region).kernels
    return True


def _fat_binary_kernels(region: Region) -> int | None:
    """Kernels of a bare fat binary: its generic_ir SPIR-V's entry points, else the first native
    member's kernels (as ``inspect k.spv`` counts them)."""
    from aotwheel.backends.intel.grf import kernel_grf
    from aotwheel.backends.intel.legacy import ir_payload
    from aotwheel.formats.ar import read_ar
    from aotwheel.formats.arname import member_target
    from aotwheel.formats.spirv import read_spirv

    members = [m for m in read_ar(region) if not m.is_padding]
    for m in members:
        if m.name == "generic_ir":
            payload = ir_payload(region.sub(m.offset, m.size, "ar member 'generic_ir'"))
            if payload is not None and sniff(payload.head(8)) == ImageKind.SPIRV:
                return read_spirv(payload, count_kernels=True).kernels
    for m in members:
        if member_target(m.name)[0]:
            return len(kernel_grf(region.read(m.offset, m.size, f"ar member {m.name!r}"), f"{region.label} member {m.name}")) or None
    return None


def read_host(walk: ImageWalk, region: Region, view: ElfView, host: HostOffload) -> None:
    """A SYCL host binary (``.tgtsym``): the kernels that only its IR images serve."""
    fr = walk.report
    if any(t.vendor == INTEL for t in fr.native_targets):  # kernels only the IR serves matter only then
        fr.ir_kernels_missing_from = host.ir_only_kernels(IR_TRIPLE, (GPU_TRIPLE, CPU_TRIPLE))


def read_image(walk: ImageWalk, region: Region, kind: ImageKind, img: Image, depth: int, member: str | None) -> None:
    if kind == _AR:
        _walk_fat_binary(walk, region, img, depth)
    elif kind == _ZEBIN or kind == _LEGACY:
        walk.report.native_targets.append(_native_target(walk, region, kind, img.index, member))
    elif kind == _CPU_AOT:
        from aotwheel.backends.intel.cpu_aot import read_cpu_aot

        info = read_cpu_aot(region)
        walk.report.native_targets.append(Target(name=CPU_TRIPLE, ip=None, member=member, format=_CPU_AOT, size=region.size,
                                                 image=img.index, vendor=INTEL, arch=info.machine, rebuildable=info.has_ir))
    elif kind == _IR_ELF:
        from aotwheel.backends.intel.legacy import ir_payload

        payload = ir_payload(region)
        walk.note_ir(sniff(payload.head(64)) if payload is not None else None)


def read_carried(walk: ImageWalk, region: Region, magic: bytes, section: str) -> int:
    """A zebin (an EM_INTELGT ELF whose header and sections lie inside ``region``) or a SPIR-V
    module (header and instructions: standalone.spirv_size) that the library loads itself."""
    from aotwheel.backends.intel.standalone import EM_INTELGT, SPIRV_MAGIC, spirv_size, zebin_size

    if magic == SPIRV_MAGIC:
        size = spirv_size(region)
    elif region.size >= 52 and region.read(18, 2, "ELF header") == EM_INTELGT.to_bytes(2, "little"):
        size = zebin_size(region)
    else:
        return 0  # another vendor's ELF
    if size is None:
        return 0
    walk.add_image(region.sub(0, size, "standalone image"), triple=None, section=section)
    return size


def spirv_in(img: Image, load: Callable[[], bytes], label: str) -> bytes | None:
    """The SPIR-V of a fat binary's ``generic_ir`` member."""
    if "generic_ir" not in img.members:
        return None
    from aotwheel.backends.intel.legacy import ir_payload
    from aotwheel.formats.ar import read_ar

    region = Region(load(), label)
    for m in read_ar(region):
        if m.name == "generic_ir":
            payload = ir_payload(region.sub(m.offset, m.size, "ar member 'generic_ir'"))
            if payload is not None and sniff(payload.head(8)) == ImageKind.SPIRV:
                return payload.read(0, payload.size, "generic_ir SPIR-V")
    return None


def _is_fat_binary(region: Region) -> bool:
    from aotwheel.formats.ar import read_ar
    from aotwheel.formats.arname import member_target

    return any(m.is_padding or m.name == "generic_ir" or member_target(m.name)[0] for m in read_ar(region))


def _walk_fat_binary(walk: ImageWalk, region: Region, img: Image, depth: int) -> None:
    # The C scanner reads the ar headers and each zebin's notes in one call (~1,000 members in
    # vllm-xpu-kernels); None (not built, switched off, or not sure) means the Python readers.
    # Looked up once per walk (AOTWHEEL_NO_FASTSCAN is an environment read): 251 fat binaries.
    fs = walk.memo.get(_FASTSCAN, False)
    if fs is False:
        from aotwheel.formats import fastscan

        fs = walk.memo[_FASTSCAN] = None if walk.deep else fastscan.module()
    scanned = None
    if fs is not None and depth + 1 <= walk.max_depth:
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
            target = _target(walk, _ZEBIN, facts, size, img.index, name)
            targets.append(target)
            if _lacks_fp64(walk.memo, target):
                _mark_poisoned(walk, target, region.sub(offset, size, f"ar member {name!r}"))
            continue
        if type(facts) is bytes:  # generic_ir's IR payload head: what read_image notes for an ir-elf
            walk.note_ir(sniff(facts))
            continue
        body = region.sub(offset, size, f"ar member {name!r}")
        kind = sniff(body.head(64), ELF_LOOKUP)  # Intel's ELF formats by its own rules
        if name == "generic_ir":
            walk.walk_content(body, kind, img, depth + 1)
        elif kind == _ZEBIN or kind == _LEGACY:
            walk.walk_content(body, kind, img, depth + 1, member=name)
        else:
            warnings.append(f"image {img.index}: ar member {name!r} is {kind}, not a device binary")


def _native_target(walk: ImageWalk, region: Region, kind: ImageKind, image: int, member: str | None) -> NativeTarget:
    facts: tuple[int | None, int | None, int | None, object, bool]
    if kind == _ZEBIN:
        from aotwheel.backends.intel.zebin import read_zebin, read_zebin_summary
        from aotwheel.backends.intel.zeinfo import validate_zebin

        if walk.deep:  # well formed as the driver's decoder reads it (issue 37), not only its notes
            validate_zebin(region)
        z = read_zebin(region) if walk.deep else read_zebin_summary(region)
        facts = (z.ip_u32, z.product_family, z.gfx_core, None, z.has_spirv)
    else:
        from aotwheel.backends.intel.legacy import read_legacy

        info = read_legacy(region)
        facts = (None, None, info.gfx_core, None, info.has_spirv)  # no IP or product note
    target = _target(walk, kind, facts, region.size, image, member)
    if _lacks_fp64(walk.memo, target):
        _mark_poisoned(walk, target, region)
    return target


def _lacks_fp64(memo: dict[Any, Any], target: NativeTarget) -> bool:
    """Whether the image is for a device without fp64 (catalog ``no_fp64``), the only images
    IGC poisons kernels in: by catalog name, else by the product family's devlist word."""
    word = target.name or target.generic
    if word is None:  # a bare legacy image names only its core: IGC poisons nothing where fp64 exists, so look
        return target.format == _LEGACY
    key = ("no-fp64", word)
    if key not in memo:
        from aotwheel.backends.intel.catalog import load_catalog

        catalog = load_catalog()
        dev = catalog.by_name(word) if word else None
        memo[key] = dev is not None and not catalog.has_fp64(dev)
    return bool(memo[key])


def _mark_poisoned(walk: ImageWalk, target: NativeTarget, region: Region) -> None:
    """Name the kernels IGC replaced by fp64 poison stubs in this image (kept on the target, and
    one warning line: such a kernel returns without computing on that device)."""
    from aotwheel.errors import InspectError

    try:
        if target.format == _ZEBIN:
            from aotwheel.backends.intel.zeinfo import poisoned_kernels
        else:
            from aotwheel.backends.intel.legacy import poisoned_kernels
        names = poisoned_kernels(region)
    except InspectError as exc:
        walk.report.warnings.append(f"{_where(target.image, target.member)}: kernels not read for fp64 poisoning: {exc}")
        return
    if names:
        target.poisoned = names
        device = target.name or target.generic or f"this {target.core or 'GPU'} device"
        walk.report.warnings.append(
            f"{_where(target.image, target.member)}: {device} has no fp64: kernel{'s' if len(names) != 1 else ''} "
            f"{', '.join(names)} {'are' if len(names) != 1 else 'is'} poisoned there (-cl-poison-unsupported-fp64-kernels: "
            "returns without computing)")


def _target(walk: ImageWalk, kind: ImageKind, facts: tuple[int | None, int | None, int | None, object, bool], size: int, image: int,
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
    device_name, ip, generic, core, product, rebuildable, declared = fields
    return NativeTarget(device_name, ip, member, kind, size, image, generic, core, product, rebuildable, INTEL, declared)


def _target_fields(memo: dict[Any, Any], kind: ImageKind, member: str | None, facts: tuple[int | None, int | None, int | None, object, bool]
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
    if kind == _ZEBIN:
        product = _gfx_name(memo, "product", product_family)
        if core is None and product is not None:  # ocloc 22.43's zebins name their product, not their core
            from aotwheel.backends.intel.gfx import PRODUCT_CORE

            core = PRODUCT_CORE.get(product)
        if note_ip is None and name_ip is None and generic is None and product is not None:
            # no IP anywhere: the product family is what the driver checks, named as a devlist word
            from aotwheel.backends.intel.gfx import PRODUCT_TOKEN

            generic = PRODUCT_TOKEN.get(product)
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
    # ``arch``: the IP the image itself declares (its product-config note), which the driver checks
    # it against; None when it declares none (legacy images, ocloc 22.43's zebins: product family).
    return (device_name, ip, generic, core, product, rebuildable, note_ip), tuple(problems)


def _where(image: int, member: str | None) -> str:
    return f"image {image}" + (f" member {member!r}" if member else "")


def _member_name_ip(member: str | None) -> tuple[str | None, str | None]:
    """``64.12.60.7`` -> (IP, None); ``64.bmg`` -> (None, "bmg"); no member -> (None, None)."""
    from aotwheel.backends.intel.catalog import parse_ip
    from aotwheel.formats.arname import member_target

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


def serves(file: FileReport) -> list[str]:
    """``aotwheel inspect``'s per-image note: the devices an image serves natively besides its own
    (a generic member such as 64.bmg, a plain zebin): :func:`.coverage.serves_lines`."""
    targets = [t for t in file.native_targets if t.vendor == INTEL and t.format != _CPU_AOT and t.ip]
    if not any(t.generic or not t.member for t in targets):
        return []  # 64.<ip> members serve their own device only
    from aotwheel.backends.intel.coverage import serves_lines

    return serves_lines(targets)
