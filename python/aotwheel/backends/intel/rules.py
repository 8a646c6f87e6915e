"""Native, JIT or unsupported: the GPU driver's own image lookup, as pure rules.

Given the native targets an inspector found in one binary (anything with ``.ip``, ``.member``,
``.name``, ``.generic``, ``.format``, optionally ``.core``), the IR kinds it carries and a device
(anything with ``.ip``, ``.kind``, ``.vendor``, ``.name``), :func:`decide` says what Intel's
compute-runtime would do and records the rule that decided it. ``release`` picks the driver
release (year, week) whose tables and lookup are modelled; None is the newest (docs/formats.md §10
quotes each source line and the release tag that first carries it).

The lookup mirrors compute-runtime ``shared/source/device_binary_format/device_binary_format_ar.cpp``
(``unpackSingleDeviceBinary<archive>``): for the device's product abbreviation ``P``
(``HwMapper<...>::abbreviation``: dg2, pvc, bmg, lnl, ptl, nvls, nvlp, cri, ...) it takes, for each
filter in order, the *first* archive member whose name *starts with*

1. ``64.<maj>.<min>.<rev>``  (the device IP),
2. ``64.<P>.<stepping>``     (not modelled separately: the stepping is the PCI revision, which no
   probe reports, and such a member also matches filter 4),
3. ``64.<maj>.<min>``        (a prefix: ``64.12.1`` also matches ``64.12.10.0``),
4. ``64.<P>``                (generic members such as ``64.dg2``, ``64.bmg``, ``64.ptl``),

and keeps it only if the image validates for the device: a zebin with a product-config note
(IP version) must equal the device's IP, or (since 24.45) be a key of ``AOT::compatibilityMapping``
that lists the device's IP (``validateTargetDevice`` in ``zebin_decoder.cpp``); a zebin without
one (ocloc 22.43's ``--format zebin``) must name the device's product family (and its core, when
it names one); a legacy patch-token image only needs the same GPU core family
(``device_binary_format_patchtokens.cpp``) before 26.18, and from 26.18 on its device code is
never used (``device_binary_format_ocl_elf.cpp`` ignores ``SHT_OPENCL_DEV_BINARY``: commits
25918894bc, 6def991ebd). An image that does not validate but carries its own SPIR-V (a zebin's
``.spv`` section, a legacy image's ``SPIRV Object``) is rebuilt from it (``unpackSingleZebin``;
in an archive, the first matched member's, before ``generic_ir``): JIT.
Since 25.44 the same filters then run for each product
``ProductConfigHelper::getCompatibilityFallbackProductAbbreviations(P)`` returns (it looks ``P`` up
as the first ``AOT::deviceAcronyms`` key equal to ``P`` or starting with ``P-``, and names the
products whose images the mapping lets serve that acronym's IP: lnl -> bmg; nothing for dg2, bmg,
ptl, nvls, nvlp, cri), with the *device's* IP in filters 1 and 3; then ``generic_ir`` (a rebuild
from SPIR-V: JIT), else "Couldn't find matching binary in AR archive".

:func:`acceptable` writes that lookup as an ordered list of :class:`aotwheel.acceptable.Acceptable`
ranks; :func:`decide` lets the core's :func:`aotwheel.acceptable.first_acceptable` walk it over the
binary's images with the driver's validation, and words the verdict from the pick.
"""

from __future__ import annotations

import functools
import re

# Not typing's; the core's lookup (aotwheel.acceptable) and verdicts (aotwheel.results) are
# imported where a verdict is made: a coverage plan (aotwheel resolve) asks native_image only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from aotwheel.acceptable import Acceptable, Offered, Picked
    from aotwheel.results import Device, Verdict, VerdictKind

POINTER_BITS = "64"
Release = tuple[int, int]  # compute-runtime (year, week): 25.44.36015.5 -> (25, 44)

# compute-runtime HwMapper<IGFX_...>::abbreviation per product config (IP): the hardware config of each
# DEVICE_CONFIG in shared/source/dll/devices/product_config_base.inl and its hw_info_<platform>.cpp.
# WCL runs as IGFX_PTL ("ptl"); NVL-S/U/H as IGFX_NVL_XE3G ("nvls"); NVL-P as IGFX_NVL ("nvlp").
_ABBREVIATION = {
    "12.0.0": "tgllp", "12.1.0": "rkl", "12.2.0": "adls", "12.3.0": "adlp", "12.4.0": "adln",
    "12.10.0": "dg1",
    **dict.fromkeys(("12.55.0", "12.55.1", "12.55.4", "12.55.8", "12.56.0", "12.56.4", "12.56.5", "12.57.0"), "dg2"),
    **dict.fromkeys(("12.60.0", "12.60.1", "12.60.3", "12.60.5", "12.60.6", "12.60.7", "12.61.7"), "pvc"),
    **dict.fromkeys(("12.70.0", "12.70.4", "12.71.0", "12.71.4"), "mtl"), **dict.fromkeys(("12.74.0", "12.74.4"), "arl"),
    **dict.fromkeys(("20.1.0", "20.1.1", "20.1.4", "20.2.0"), "bmg"),  # 20.1.1/20.1.4: BMG_G21_A1/B0_RESERVED
    **dict.fromkeys(("20.4.0", "20.4.1", "20.4.4"), "lnl"),
    **dict.fromkeys(("30.0.0", "30.0.4", "30.1.0", "30.3.0", "30.3.1"), "ptl"),
    **dict.fromkeys(("30.4.0", "30.4.4", "30.5.0", "30.5.1", "30.5.4"), "nvls"),
    **dict.fromkeys(("35.10.0", "35.10.4"), "nvlp"), "35.11.0": "cri",
}

# AOT::deviceAcronyms (third_party/aot_config_headers/platforms.h) as IP versions: the catalog's
# names and aliases, which are those acronyms (tests/test_catalog.py compares them with the
# installed ocloc's), so one table holds each acronym's IP. In catalog order, canonical name first
# (for display); the driver's std::map walks them in key order (_device_acronyms).
@functools.cache
def _acronyms() -> dict[str, str]:
    from aotwheel.backends.intel.catalog import load_catalog

    return {name: d.ip for d in load_catalog().devices for name in (d.name, *d.aliases)}


@functools.cache
def _device_acronyms() -> list[tuple[str, str]]:
    return sorted(_acronyms().items())


@functools.cache
def _first_name_of_ip() -> dict[str, str]:
    """IP -> its first acronym in the driver's key order (:func:`_device_acronyms`)."""
    first: dict[str, str] = {}
    for name, ip in _device_acronyms():
        first.setdefault(ip, name)
    return first

# AOT::compatibilityMapping (platforms.h): an image built for the first IP also serves the second,
# from the first compute-runtime release tag whose platforms.h lists the pair until (exclusive) the
# first that drops it. The BMG_G21_A1/B0_RESERVED keys (20.1.1, 20.1.4) have no acronym and no
# device reports them, but they are what getCompatibilityFallbackProductAbbreviations finds for bmg.
_COMPATIBILITY: dict[tuple[str, str], tuple[Release, Release | None]] = {
    ("12.55.8", "12.56.5"): ((24, 26), None), ("12.55.8", "12.57.0"): ((24, 26), None),  # DG2_G10_C0
    ("12.70.4", "12.71.4"): ((24, 26), None),                                              # MTL_U_B0
    ("20.1.0", "20.4.4"): ((24, 48), None), ("20.1.0", "20.2.0"): ((25, 27), None),       # BMG_G21_A0
    ("20.1.1", "20.1.0"): ((24, 48), None), ("20.1.1", "20.4.4"): ((24, 48), None), ("20.1.1", "20.2.0"): ((25, 27), None),
    ("20.1.4", "20.1.0"): ((24, 48), None), ("20.1.4", "20.4.4"): ((24, 48), None), ("20.1.4", "20.2.0"): ((25, 27), None),
    ("30.0.4", "30.1.0"): ((25, 18), None),                                                # PTL_H_B0 -> PTL_U_A0
    ("30.0.4", "30.3.0"): ((25, 35), (26, 5)),                                             # -> WCL_A0, replaced by WCL_A1
    ("30.0.4", "30.3.1"): ((26, 5), None), ("30.0.4", "30.4.4"): ((26, 5), None),         # -> WCL_A1, NVL_S_B0
    ("30.0.4", "30.5.4"): ((26, 14), None),                                                # -> NVL_U_B0
}
PRODUCT_CONFIG_SINCE: Release = (22, 53)  # validateTargetDevice compares the product-config note (7b8d1925a9); before: family and core
MAPPING_SINCE: Release = (24, 45)   # validateTargetDevice consults the mapping (c65b45471b7f)
LEGACY_IGNORED_SINCE: Release = (26, 18)  # a legacy image's device binary is ignored (25918894bc, 6def991ebd)
LEGACY_LAST: Release = (26, 14)  # the last release before it that aotwheel models (its release tags: 26.14, then 26.18)
FALLBACK_SINCE: Release = (25, 44)  # the ar lookup tries fallback products (4a9b918a856b)
# Releases at which the modelled lookup changes, oldest first (for "native since" answers).
BREAKPOINTS: tuple[Release, ...] = tuple(sorted(
    {MAPPING_SINCE, FALLBACK_SINCE} | {r for span in _COMPATIBILITY.values() for r in span if r and r > MAPPING_SINCE}))

# GPU core family per catalog release (what a legacy patch-token image is checked against).
_CORE = {
    "gen12lp": "GEN12LP", "xe-hpg": "XE_HPG", "xe-hpc": "XE_HPC", "xe-lpg": "XE_HPG",
    "xe-lpgplus": "XE_HPG", "xe2-hpg": "XE2_HPG", "xe2-lpg": "XE2_HPG", "xe3-lpg": "XE3", "xe3p": "XE3P",
    "xe3p-lpg": "XE3P", "xe3p-xpc": "XE3P",
}

RULES = {
    "exact-ip": "64.<maj.min.rev> member matches the device IP",
    "major-minor": "64.<maj.min> prefix match",
    "name": "64.<product> member (generic name)",
    "compat": "compatibility fallback product",
    "single-binary": "the binary is one native image",
    "ir": "no usable native image; SPIR-V is rebuilt at first use",
    "own-ir": "the matched image does not fit; the driver rebuilds the SPIR-V it carries at first use",
    "cpu-ir": "CPU OpenCL device; SPIR-V is compiled at first use",
    "non-intel": "non-Intel device; only SPIR-V can serve it",
    "no-ip": "the runtime does not report the device's IP version",
    "no-match": "no native image and no IR",
    "no-device": "no device was found to decide for (aotwheel.runtime.check)",
    "opencl-bindless": "OpenCL rebuilds a program with bindless kernels from IR (backends.intel.addressing)",
}


@functools.lru_cache(maxsize=1024)  # a coverage plan asks it thousands of times for a few dozen IPs
def _ip_tuple(ip: str | None) -> tuple[int, int, int] | None:
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", ip or "")
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def _core_key(text: str | None) -> str | None:
    if not text:
        return None
    key = re.sub(r"[^A-Z0-9]+", "_", text.upper()).strip("_")
    key = re.sub(r"^IGFX_|_CORE$", "", key)
    return key or None


def _catalog_device(ip: str | None):
    from aotwheel.backends.intel.catalog import load_catalog

    return load_catalog().by_ip(ip) if ip else None


def _core_of_ip(ip: str | None) -> str | None:
    dev = _catalog_device(ip)
    return _CORE.get(dev.release) if dev else None


def product_configs() -> frozenset[str]:
    """The IP versions compute-runtime's AOT tables name (every product config, steppings included)."""
    return frozenset(_ABBREVIATION)


def product_abbreviation(ip: str | None) -> str | None:
    """The driver's product abbreviation for a device IP (``"dg2"`` for 12.56.5, ``"nvls"`` for 30.4.4);
    for an IP compute-runtime's tables lack, the catalog family."""
    if ip in _ABBREVIATION:
        return _ABBREVIATION[ip]
    dev = _catalog_device(ip)
    return dev.family if dev is not None else None


@functools.lru_cache(maxsize=64)  # per release: a coverage plan asks it for every device and member (callers only read it)
def _mapping(release: Release | None) -> dict[str, list[str]]:
    """compatibilityMapping as the given release has it: image IP -> device IPs, keys in enum order."""
    result: dict[str, list[str]] = {}
    for (image_ip, device_ip), (since, until) in sorted(_COMPATIBILITY.items(), key=lambda kv: _ip_tuple(kv[0][0]) or (0, 0, 0)):
        if (until is None or (release is not None and release < until)) and (release is None or since <= release):
            result.setdefault(image_ip, []).append(device_ip)
    return result


def compatible(image_ip: str, device_ip: str, release: Release | None = None) -> bool:
    """Whether ``validateTargetDevice`` of that release accepts an ``image_ip`` zebin on ``device_ip``
    through the compatibility mapping (never before 24.45)."""
    if release is not None and release < MAPPING_SINCE:
        return False
    return device_ip in _mapping(release).get(image_ip, ())


def release_text(release: Release) -> str:
    """``"26.05"`` for (26, 5): compute-runtime's release tag prefix."""
    return f"{release[0]}.{release[1]:02d}"


def _acronym(ip: str) -> str | None:
    return next((name for name, value in _acronyms().items() if value == ip), None)


@functools.cache  # per product: a coverage plan asks it for every catalog device at every release
def _first_acronym(product: str) -> tuple[str, str] | None:
    return next(((n, ip) for n, ip in _device_acronyms() if n == product or n.startswith(product + "-")), None)


def compatibility_fallbacks(product: str, release: Release | None = None) -> list[str]:
    """``ProductConfigHelper::getCompatibilityFallbackProductAbbreviations``: other products whose members
    the driver also tries, found from the first acronym named ``product`` or ``product-*`` (so for
    ``bmg`` from bmg-g21's IP, whatever the device); empty before 25.44, which had no such pass."""
    if release is not None and release < FALLBACK_SINCE:
        return []
    first = _first_acronym(product)
    if first is None:
        return []
    result: list[str] = []
    for image_ip, served in _mapping(release).items():
        if first[1] in served:
            name = _first_name_of_ip().get(image_ip)
            if name is not None and name.split("-")[0] not in result:
                result.append(name.split("-")[0])
    return result


def _no_fallback_note(product: str, device_ip: str, release: Release | None, device_name: str | None = None) -> str:
    """Why the driver tries no other product for this device, naming what would have served it."""
    if release is not None and release < FALLBACK_SINCE:
        why = f"the driver's fat-binary lookup tries no other product before compute-runtime {release_text(FALLBACK_SINCE)}"
    else:
        first = _first_acronym(product)
        if first is None:
            why = f"the driver has no compatibility fallback for {product} (no AOT acronym is named {product} or {product}-*)"
        elif first[1] != device_ip:
            why = (f"the driver has no compatibility fallback for {product}: it looks {product} up as {first[0]} ({first[1]}), "
                   "not as this device, and no named product's image is mapped to that IP")
        else:
            why = f"the driver has no compatibility fallback for {product}"
    servers = [ip for ip, served in _mapping(release).items() if device_ip in served and _acronym(ip)]
    if servers and (release is None or release >= MAPPING_SINCE):
        names = ", ".join(f"{_acronym(ip)} -> {device_name or _acronym(device_ip) or device_ip}" for ip in servers)
        why += (f" (the compatibility mapping {names} applies only to a member the filters for {product} find, such as "
                f"{POINTER_BITS}.{product}, or to a single-device binary)")
    return why


def _member_name(target: Any) -> str:
    return (getattr(target, "member", None) or "").rstrip("/")


def _device_product(device_ip: str) -> str | None:
    """The product family (``PVC``) a device of this IP reports (``gfx.ABBREVIATION_PRODUCT``)."""
    from aotwheel.backends.intel.gfx import ABBREVIATION_PRODUCT

    return ABBREVIATION_PRODUCT.get(product_abbreviation(device_ip) or "")


def _validate(target: Any, device_ip: str, compatibility: bool, release: Release | None = None,
              device_name: str | None = None) -> tuple[bool, str]:
    """Whether the driver accepts this image on the device, and why."""
    fmt = (getattr(target, "format", None) or "zebin").lower()
    if fmt == "legacy" and (release is None or release >= LEGACY_IGNORED_SINCE):
        return False, (f"a legacy (patch-token) image, whose device code compute-runtime {release_text(LEGACY_IGNORED_SINCE)} "
                       "and newer ignore")
    # The IP the image declares (product-config note); a record without notes read (no product
    # family either) stands for its IP.
    product = getattr(target, "product", None)
    t_ip = getattr(target, "arch", None) or (getattr(target, "ip", None) if product is None else None)
    if fmt != "legacy" and not t_ip and product:
        want = _device_product(device_ip)
        if want == product:
            return True, f"the zebin declares product family {product}, the device's (no product config: the driver checks the family)"
        return False, f"the zebin declares product family {product}, not the device's {want or 'unknown'}"
    if fmt != "legacy" and t_ip and release is not None and release < PRODUCT_CONFIG_SINCE:
        # 22.43's validateTargetDevice reads the product family and core notes only: any DG2 image serves any DG2.
        mine, theirs = product_abbreviation(t_ip), product_abbreviation(device_ip)
        if mine and mine == theirs:
            return True, (f"compute-runtime before {release_text(PRODUCT_CONFIG_SINCE)} validates a zebin by product family and core "
                          f"only ({mine}), not by its product config {t_ip}")
        return False, f"its product family {mine or t_ip} differs from the device's {theirs or device_ip}"
    if fmt != "legacy" and t_ip:
        if t_ip == device_ip:
            return True, f"its product config {t_ip} equals the device's"
        pair = f"{_acronym(t_ip) or t_ip} -> {device_name or _acronym(device_ip) or device_ip}"
        if compatibility and compatible(t_ip, device_ip, release):
            since = max(MAPPING_SINCE, _COMPATIBILITY[(t_ip, device_ip)][0])
            return True, (f"the driver's compatibility mapping {pair} lets a {t_ip} image serve {device_ip} "
                          f"(compute-runtime {release_text(since)} and newer)")
        if compatibility and compatible(t_ip, device_ip):
            return False, f"its product config {t_ip} differs from the device's {device_ip} (this driver's compatibility mapping lacks {pair})"
        return False, f"its product config {t_ip} differs from the device's {device_ip}"
    want = _core_of_ip(device_ip)
    have = _core_of_ip(t_ip) or _core_key(getattr(target, "core", None))
    if want and have and want == have:
        return True, f"{fmt} image for the same core family {have}"
    return False, f"{fmt} image for core {have or 'unknown'}, device core {want or 'unknown'}"


# Image kinds this backend offers the core's lookup (aotwheel.acceptable).
MEMBER, BARE, IR = "member", "image", "ir"


def _filter_prefixes(ip: tuple[int, int, int], product: str | None) -> list[tuple[str, str]]:
    """``(rule, member-name prefix)`` of each archive filter for ``product`` with the device's IP, in order."""
    filters = [("exact-ip", f"{POINTER_BITS}.{ip[0]}.{ip[1]}.{ip[2]}"), ("major-minor", f"{POINTER_BITS}.{ip[0]}.{ip[1]}")]
    if product:
        filters.append(("name", f"{POINTER_BITS}.{product}"))
    return filters


def _filters(ip: tuple[int, int, int], product: str | None, rule: str | None = None) -> list[Acceptable]:
    """The archive filters for ``product`` with the device's IP: the first member starting with
    each prefix is validated, and a refusal moves to the next filter. ``rule`` names every filter's
    verdict alike (a compatibility fallback's ``compat:<product>``)."""
    from aotwheel.acceptable import Acceptable
    from aotwheel.results import NATIVE

    return [Acceptable(MEMBER, (prefix,), NATIVE, rule or key, prefix=True, first_only=True) for key, prefix in _filter_prefixes(ip, product)]


@functools.lru_cache(maxsize=2048)  # per (IP, release): a check asks it for every file and driver breakpoint, a coverage plan for every catalog IP
def acceptable(device_ip: str, release: Release | None = None) -> tuple[Acceptable, ...]:
    """The images compute-runtime (``release``; None: the newest) takes for a device of IP
    ``device_ip`` (``maj.min.rev``), best first: a single-device binary (validated directly), the
    archive filters for the device's product, the same for each compatibility fallback product,
    then generic_ir / SPIR-V (JIT)."""
    from aotwheel.acceptable import Acceptable
    from aotwheel.results import JIT, NATIVE

    ip = _ip_tuple(device_ip)
    if ip is None:
        raise ValueError(f"not an IP version: {device_ip!r}")
    product = product_abbreviation(device_ip)
    order = [Acceptable(BARE, ("",), NATIVE, "single-binary", prefix=True), *_filters(ip, product)]
    for other in _fallbacks(product, release):
        order += _filters(ip, other, f"compat:{other}")
    return (*order, Acceptable(IR, ("",), JIT, "ir", prefix=True))


@functools.lru_cache(maxsize=2048)
def member_prefixes(device_ip: str, release: Release | None = None) -> tuple[str, ...]:
    """Every archive member name prefix :func:`acceptable`'s filters look for: a member that starts
    with none of them is never picked for this device, whatever else the archive holds. The prefixes
    of :func:`_filters` without making the ranks: a coverage plan asks it for every catalog device
    at every release (tests/test_coverage.py compares the two)."""
    ip = _ip_tuple(device_ip)
    if ip is None:
        raise ValueError(f"not an IP version: {device_ip!r}")
    product = product_abbreviation(device_ip)
    return tuple(prefix for name in (product, *_fallbacks(product, release)) for _, prefix in _filter_prefixes(ip, name))


@functools.lru_cache(maxsize=256)
def _fallbacks(product: str | None, release: Release | None) -> tuple[str, ...]:
    return tuple(p for p in compatibility_fallbacks(product, release) if p != product) if product else ()


def _offered(targets: Sequence[Any], ir: Sequence[str]) -> list[Offered]:
    """A binary's images as the lookup names them: archive members by name, bare images, IR forms."""
    from aotwheel.acceptable import Offered

    return ([Offered(MEMBER if _member_name(t) else BARE, _member_name(t), t) for t in targets]
            + [Offered(IR, k) for k in ir if k])


def _label(device: Any) -> str:
    return str(getattr(device, "label", None) or getattr(device, "catalog", None) or getattr(device, "name", "device"))


# Kept for wheels already published: their _aot.py (written before aotwheel.aot) imports it.
def target_names(targets: Sequence[Any]) -> tuple[str, ...]:
    """Readable names of native targets: catalog name, generic name or IP."""
    names: list[str] = []
    for t in targets:
        core = _core_key(getattr(t, "core", None))
        name = (getattr(t, "name", None) or getattr(t, "generic", None) or getattr(t, "ip", None) or _member_name(t)
                or (f"{core} image" if core else "unidentified image"))
        if name not in names:
            names.append(name)
    return tuple(names)


def decide(targets: Sequence[Any], ir: Sequence[str], device: Device, *, binary: str | None = None,
           compatibility: bool = True, release: Release | None = None) -> Verdict:
    """The driver's verdict for one binary (its native ``targets`` and ``ir`` kinds) on ``device``.

    ``compatibility`` models compute-runtime's compatibility mode (``AOT::compatibilityMapping``
    accepted at validation); turn it off to model a driver that demands an exact product config.
    ``release`` is the compute-runtime (year, week) modelled; None models the newest.
    """
    from aotwheel.results import JIT, NATIVE, UNKNOWN, UNSUPPORTED, Verdict

    label, dev_ip, kind = _label(device), device.ip, device.kind
    names = target_names(targets)
    has_ir = any(k for k in ir)
    ir_image = "generic_ir" if any(_member_name(t) for t in targets) else "spirv"
    embedded = ", ".join(names) or "none"

    def make(verdict: VerdictKind, image: str | None, rule: str, reason: str) -> Verdict:
        return Verdict(label, dev_ip, verdict, image, reason, rule, binary, kind, names)

    if kind != "gpu" or str(device.vendor).lower() not in ("intel", "any"):
        rule = "cpu-ir" if kind == "cpu" else "non-intel"
        if has_ir and getattr(device, "spirv", None) is not False:
            return make(JIT, ir_image, rule, f"{label} is not an Intel GPU; its OpenCL compiler builds the embedded SPIR-V at first use")
        why = "the binary carries no SPIR-V" if not has_ir else "the device does not accept SPIR-V"
        return make(UNSUPPORTED, None, rule, f"{label} is not an Intel GPU and {why}")

    if _ip_tuple(dev_ip) is None:
        if not targets:
            return (make(JIT, ir_image, "ir", f"the binary has no native image (embedded: none); {label} builds SPIR-V at first use")
                    if has_ir else make(UNSUPPORTED, None, "no-match", "the binary has neither native images nor SPIR-V"))
        fallback = "JIT from SPIR-V" if has_ir else "unsupported"
        return make(UNKNOWN, None, "no-ip", f"{label}'s IP version is unknown to its runtime; native if it is one of {embedded}, else {fallback}")
    device_ip = str(dev_ip)  # it parsed as maj.min.rev above
    dev_name = device.catalog or _acronym(device_ip)
    picked = _lookup(targets, ir, device_ip, release, compatibility, dev_name)
    rank, hit = picked.acceptable, picked.image
    if rank is not None and hit is not None and rank.verdict == NATIVE:
        return _poison_note(_native(picked, make, device_ip), hit.item, label)
    return _not_native(picked, targets, release, device_ip, dev_name, dev_ip, embedded, make)


def _lookup(targets: Sequence[Any], ir: Sequence[str], device_ip: str, release: Release | None, compatibility: bool,
            device_name: str | None) -> Picked:
    """The driver's pick for an Intel GPU of IP ``device_ip`` (``maj.min.rev``): :func:`decide`'s lookup, before any wording."""
    from aotwheel.acceptable import first_acceptable
    from aotwheel.results import JIT

    def validate(rank: Acceptable, image: Offered) -> tuple[bool, str]:
        return (True, "") if rank.verdict == JIT else _validate(image.item, device_ip, compatibility, release, device_name)

    return first_acceptable(acceptable(device_ip, release), _offered(targets, ir), validate)


def native_image(targets: Sequence[Any], device_ip: str, device_name: str | None = None, release: Release | None = None) -> str | None:
    """The image :func:`decide` names for a native verdict on an Intel GPU of IP ``device_ip``
    (``maj.min.rev``), None where its verdict is not native: the same lookup without the verdict's
    words or the ranks' records, which a coverage plan (hundreds of lookups per list) never reads:
    :func:`acceptable`'s native ranks in order (every bare image, then per archive filter of
    :func:`member_prefixes` the first member it names), each image the driver's validation
    accepts. tests/test_coverage.py holds it to :func:`decide` over every catalog device."""
    if _ip_tuple(device_ip) is None:
        raise ValueError(f"not an IP version: {device_ip!r}")
    name = device_name or _acronym(device_ip)
    for t in targets:  # the single-binary rank: every bare image, validated in turn
        if not _member_name(t) and _validate(t, device_ip, True, release, name)[0]:
            return f"image {getattr(t, 'image', 0)} ({getattr(t, 'format', 'zebin')})"
    for prefix in member_prefixes(device_ip, release):  # each filter validates only the first member it names
        hit = next((t for t in targets if _member_name(t) and _member_name(t).startswith(prefix)), None)
        if hit is not None and _validate(hit, device_ip, True, release, name)[0]:
            return _member_name(hit)
    return None


def _image_name(hit: Offered) -> str:
    """A native verdict's ``image``: the archive member, or a bare image's index and format."""
    return f"image {getattr(hit.item, 'image', 0)} ({getattr(hit.item, 'format', 'zebin')})" if hit.kind == BARE else hit.name


def _poison_note(v: Verdict, image: Any, label: str) -> Verdict:
    """A native verdict, naming the kernels the chosen image holds only as fp64 poison stubs."""
    names = tuple(getattr(image, "poisoned", ()) or ())
    if not names:
        return v
    from dataclasses import replace

    many = len(names) != 1
    return replace(v, reason=f"{v.reason}; kernel{'s' if many else ''} {', '.join(names)} {'are' if many else 'is'} poisoned in this "
                             f"image ({label} has no fp64: -cl-poison-unsupported-fp64-kernels) and return{'' if many else 's'} "
                             "without computing")


def _native(picked: Any, make: Any, device_ip: str) -> Verdict:
    """The native verdict for the image the lookup picked, worded by the rank that found it."""
    from aotwheel.results import NATIVE

    rank, hit = picked.acceptable, picked.image
    if hit.kind == BARE:
        return make(NATIVE, _image_name(hit), rank.rule, f"native: {picked.why}")
    if rank.rule.startswith("compat:"):
        return make(NATIVE, hit.name, rank.rule,
                    f"native: compatibility fallback {product_abbreviation(device_ip)} -> {rank.rule.removeprefix('compat:')} "
                    f"(compute-runtime {release_text(FALLBACK_SINCE)} and newer) chose {hit.name}; {picked.why}")
    return make(NATIVE, hit.name, rank.rule, f"native: member {hit.name} chosen by rule {rank.rule} ({RULES[rank.rule]}); {picked.why}")


def _not_native(picked: Any, targets: Sequence[Any], release: Release | None, device_ip: str, dev_name: str | None, dev_ip: Any,
                embedded: str, make: Any) -> Verdict:
    """JIT (a refused image's own SPIR-V, else generic_ir / SPIR-V) or unsupported, saying why no
    image served."""
    from aotwheel.results import JIT, UNSUPPORTED

    rank = picked.acceptable
    ir_image = "generic_ir" if any(_member_name(t) for t in targets) else "spirv"
    product = product_abbreviation(device_ip)
    members = any(_member_name(t) for t in targets)
    # one note per image (filters 1 and 3 can match the same member)
    notes = list(dict.fromkeys(why if image.kind == BARE else f"{image.name} ({why})" for _, image, why in picked.refused))
    # The first refused image that carries SPIR-V of its own is rebuilt from it, before generic_ir.
    own = next((image for _, image, _ in picked.refused if getattr(image.item, "rebuildable", False)), None)
    why_not = f"no image for {dev_name or product or dev_ip} ({dev_ip}) among {embedded}"
    if notes:
        why_not += "; rejected: " + "; ".join(notes)
    if product and members and not _fallbacks(product, release):
        why_not += "; " + _no_fallback_note(product, device_ip, release, dev_name)
    if own is not None:
        where = own.name or f"image {getattr(own.item, 'image', 0)}"
        return make(JIT, f"{where} (its own SPIR-V)", "own-ir",
                    f"JIT: {why_not}; the driver rebuilds the SPIR-V that {where} carries (its .spv / SPIRV Object section) at first use")
    if rank is not None:  # the IR rank
        return make(JIT, ir_image, "ir", f"JIT: {why_not}; the driver rebuilds {ir_image} (SPIR-V) at first use")
    return make(
        UNSUPPORTED,
        None,
        "no-match",
        f'unsupported: {why_not}, and no SPIR-V was kept (built with JIT fallback off); the driver reports "Couldn\'t find matching binary"',
    )
