"""Native, JIT or unsupported: the GPU driver's own image lookup, as pure rules.

Given the native targets an inspector found in one binary (anything with ``.ip``, ``.member``,
``.name``, ``.generic``, ``.format``, optionally ``.core``), the IR kinds it carries and a device
(anything with ``.ip``, ``.kind``, ``.vendor``, ``.name``), :func:`decide` says what Intel's
compute-runtime would do and records the rule that decided it.

The lookup mirrors compute-runtime ``shared/source/device_binary_format/device_binary_format_ar.cpp``
(``unpackSingleDeviceBinary<archive>``, 2025): for the device's product abbreviation ``P``
(``HwMapper<...>::abbreviation``: dg2, pvc, bmg, lnl, ...) it takes, for each filter in order,
the *first* archive member whose name *starts with*

1. ``64.<maj>.<min>.<rev>``  (the device IP),
2. ``64.<P>.<stepping>``     (not modelled separately: the stepping is the PCI revision, which no
   probe reports, and such a member also matches filter 4),
3. ``64.<maj>.<min>``        (a prefix: ``64.12.1`` also matches ``64.12.10.0``),
4. ``64.<P>``                (generic members such as ``64.dg2``, ``64.bmg``),

and keeps it only if the image validates for the device: a zebin with a product-config note
(IP version) must equal the device's IP, or be listed for it in ``AOT::compatibilityMapping``
(``platforms.h``) when compatibility mode is on (``validateTargetDevice`` in
``zebin_decoder.cpp``); a legacy patch-token image only needs the same GPU core family
(``device_binary_format_patchtokens.cpp``). Then the same filters for each product
``AOT::getCompatibilityFallbackProductAbbreviations(P)`` returns (``neo_aot_platforms.h``; e.g.
lnl -> bmg; nothing for dg2, so acm-g11 never uses an acm-g10 image), then ``generic_ir`` (a
rebuild from SPIR-V: JIT), else "Couldn't find matching binary in AR archive".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from aotwheel.model import JIT, NATIVE, UNKNOWN, UNSUPPORTED, Verdict

POINTER_BITS = "64"

# compute-runtime HwMapper<IGFX_...>::abbreviation per catalog device (hw_info_<platform>.cpp).
_ABBREVIATION = {
    "tgllp": "tgllp", "rkl": "rkl", "adl-s": "adls", "adl-p": "adlp", "adl-n": "adln", "dg1": "dg1",
    "acm-g10": "dg2", "acm-g11": "dg2", "acm-g12": "dg2", "pvc-sdv": "pvc", "pvc": "pvc", "pvc-vg": "pvc",
    "mtl-u": "mtl", "mtl-h": "mtl", "arl-h": "arl", "bmg-g21": "bmg", "bmg-g31": "bmg", "lnl-m": "lnl",
    "ptl-h": "ptl", "ptl-u": "ptl",
}

# AOT::deviceAcronyms from platforms.h (a std::map, so iterated in key order) as IP versions;
# the driver's compatibility fallback walks it by name.
_DEVICE_ACRONYMS = sorted({
    "tgllp": "12.0.0", "tgl": "12.0.0", "rkl": "12.1.0", "adl-s": "12.2.0", "rpl-s": "12.2.0",
    "adl-p": "12.3.0", "rpl-p": "12.3.0", "adl-n": "12.4.0", "dg1": "12.10.0",
    "acm-g10": "12.55.8", "dg2-g10": "12.55.8", "ats-m150": "12.55.8",
    "acm-g11": "12.56.5", "dg2-g11": "12.56.5", "ats-m75": "12.56.5",
    "acm-g12": "12.57.0", "dg2-g12": "12.57.0",
    "pvc-sdv": "12.60.1", "pvc": "12.60.7", "pvc-vg": "12.61.7",
    "mtl-u": "12.70.4", "mtl-s": "12.70.4", "mtl-m": "12.70.4", "arl-u": "12.70.4", "arl-s": "12.70.4",
    "mtl-h": "12.71.4", "mtl-p": "12.71.4", "arl-h": "12.74.4",
    "bmg-g21": "20.1.0", "bmg-g31": "20.2.0", "lnl-m": "20.4.4",
    "ptl-h": "30.0.4", "ptl-u": "30.1.0", "wcl": "30.3.1",
}.items())

# AOT::compatibilityMapping (platforms.h): an image built for the key also serves these IPs.
_COMPATIBILITY = {
    "12.55.8": ("12.56.5", "12.57.0"),               # DG2_G10_C0 -> DG2_G11_B1, DG2_G12_A0
    "12.70.4": ("12.71.4",),                          # MTL_U_B0 -> MTL_H_B0
    "20.1.0": ("20.2.0", "20.4.4"),                   # BMG_G21_A0 -> BMG_G31_A0, LNL_B0
    "20.1.1": ("20.1.0", "20.2.0", "20.4.4"),         # BMG_G21_A1_RESERVED
    "20.1.4": ("20.1.0", "20.2.0", "20.4.4"),         # BMG_G21_B0_RESERVED
    "30.0.4": ("30.1.0", "30.3.0"),                   # PTL_H_B0 -> PTL_U_A0, WCL_A0
}

# GPU core family per catalog release (what a legacy patch-token image is checked against).
_CORE = {
    "gen12lp": "GEN12LP", "xe-hpg": "XE_HPG", "xe-hpc": "XE_HPC", "xe-lpg": "XE_HPG",
    "xe-lpgplus": "XE_HPG", "xe2-hpg": "XE2_HPG", "xe2-lpg": "XE2_HPG", "xe3-lpg": "XE3", "xe3p": "XE3P",
}

RULES = {
    "exact-ip": "64.<maj.min.rev> member matches the device IP",
    "major-minor": "64.<maj.min> prefix match",
    "name": "64.<product> member (generic name)",
    "compat": "compatibility fallback product",
    "single-binary": "the binary is one native image",
    "ir": "no usable native image; SPIR-V is rebuilt at first use",
    "cpu-ir": "CPU OpenCL device; SPIR-V is compiled at first use",
    "non-intel": "non-Intel device; only SPIR-V can serve it",
    "no-ip": "the runtime does not report the device's IP version",
    "no-match": "no native image and no IR",
    "no-device": "no device was found to decide for (aotwheel.runtime.check)",
}


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


def product_abbreviation(ip: str | None) -> str | None:
    """The driver's product abbreviation for a device IP (``"dg2"`` for 12.56.5)."""
    dev = _catalog_device(ip)
    if dev is None:
        return None
    return _ABBREVIATION.get(dev.name, dev.family)


def compatibility_fallbacks(product: str) -> list[str]:
    """``AOT::getCompatibilityFallbackProductAbbreviations``: other products whose members the
    driver also tries, found by the first acronym named ``product`` or ``product-*``."""
    requested = next((ip for name, ip in _DEVICE_ACRONYMS if name == product or name.startswith(product + "-")), None)
    if requested is None:
        return []
    result: list[str] = []
    for image_ip in sorted(_COMPATIBILITY, key=lambda text: _ip_tuple(text) or (0, 0, 0)):
        if requested in _COMPATIBILITY[image_ip]:
            name = next((n for n, ip in _DEVICE_ACRONYMS if ip == image_ip), None)
            if name is not None and name.split("-")[0] not in result:
                result.append(name.split("-")[0])
    return result


def _member_name(target: Any) -> str:
    return (getattr(target, "member", None) or "").rstrip("/")


def _validate(target: Any, device_ip: str, compatibility: bool) -> tuple[bool, str]:
    """Whether the driver accepts this image on the device, and why."""
    fmt = (getattr(target, "format", None) or "zebin").lower()
    t_ip = getattr(target, "ip", None)
    if fmt != "legacy" and t_ip:
        if t_ip == device_ip:
            return True, f"its product config {t_ip} equals the device's"
        if compatibility and device_ip in _COMPATIBILITY.get(t_ip, ()):
            return True, f"the driver's compatibility mapping lets a {t_ip} image serve {device_ip}"
        return False, f"its product config {t_ip} differs from the device's {device_ip}"
    want = _core_of_ip(device_ip)
    have = _core_of_ip(t_ip) or _core_key(getattr(target, "core", None))
    if want and have and want == have:
        return True, f"{fmt} image for the same core family {have}"
    return False, f"{fmt} image for core {have or 'unknown'}, device core {want or 'unknown'}"


def _search(members: Sequence[Any], product: str | None, ip: tuple[int, int, int], device_ip: str,
            compatibility: bool) -> tuple[str, Any, str, list[str]] | None:
    filters = [("exact-ip", f"{POINTER_BITS}.{ip[0]}.{ip[1]}.{ip[2]}"), ("major-minor", f"{POINTER_BITS}.{ip[0]}.{ip[1]}")]
    if product:
        filters.append(("name", f"{POINTER_BITS}.{product}"))
    rejected: list[str] = []
    for rule, prefix in filters:
        hit = next((t for t in members if _member_name(t).startswith(prefix)), None)
        if hit is None:
            continue
        ok, why = _validate(hit, device_ip, compatibility)
        if ok:
            return rule, hit, why, rejected
        rejected.append(f"{_member_name(hit)} ({why})")
    return None if not rejected else ("", None, "", rejected)


def _label(device: Any) -> str:
    return str(getattr(device, "label", None) or getattr(device, "catalog", None) or getattr(device, "name", "device"))


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


def decide(targets: Sequence[Any], ir: Sequence[str], device: Any, *, binary: str | None = None,
           compatibility: bool = True) -> Verdict:
    """The driver's verdict for one binary (its native ``targets`` and ``ir`` kinds) on ``device``.

    ``compatibility`` models compute-runtime's compatibility mode (``AOT::compatibilityMapping``
    accepted at validation); turn it off to model a driver that demands an exact product config.
    """
    label, dev_ip, kind = _label(device), getattr(device, "ip", None), getattr(device, "kind", "gpu")
    names = target_names(targets)
    has_ir = any(k for k in ir)
    ir_image = "generic_ir" if any(_member_name(t) for t in targets) else "spirv"
    embedded = ", ".join(names) or "none"

    def make(verdict: str, image: str | None, rule: str, reason: str) -> Verdict:
        return Verdict(label, dev_ip, verdict, image, reason, rule, binary, kind, names)

    if kind != "gpu" or str(getattr(device, "vendor", "intel")).lower() not in ("intel", "any"):
        rule = "cpu-ir" if kind == "cpu" else "non-intel"
        if has_ir and getattr(device, "spirv", None) is not False:
            return make(JIT, ir_image, rule, f"{label} is not an Intel GPU; its OpenCL compiler builds the embedded SPIR-V at first use")
        why = "the binary carries no SPIR-V" if not has_ir else "the device does not accept SPIR-V"
        return make(UNSUPPORTED, None, rule, f"{label} is not an Intel GPU and {why}")

    ip = _ip_tuple(dev_ip)
    if ip is None:
        if not targets:
            return (make(JIT, ir_image, "ir", f"the binary has no native image (embedded: none); {label} builds SPIR-V at first use")
                    if has_ir else make(UNSUPPORTED, None, "no-match", "the binary has neither native images nor SPIR-V"))
        fallback = "JIT from SPIR-V" if has_ir else "unsupported"
        return make(UNKNOWN, None, "no-ip", f"{label}'s IP version is unknown to its runtime; native if it is one of {embedded}, else {fallback}")
    device_ip = str(dev_ip)  # it parsed as maj.min.rev above

    members = [t for t in targets if _member_name(t)]
    bare = [t for t in targets if not _member_name(t)]
    notes: list[str] = []
    for t in bare:  # a single-device binary: the driver validates it directly
        ok, why = _validate(t, device_ip, compatibility)
        if ok:
            return make(NATIVE, f"image {getattr(t, 'image', 0)} ({getattr(t, 'format', 'zebin')})", "single-binary", f"native: {why}")
        notes.append(why)

    product = product_abbreviation(device_ip)
    found = _search(members, product, ip, device_ip, compatibility) if members else None
    if found and found[1] is not None:
        rule, hit, why, rejected = found
        return make(NATIVE, _member_name(hit), rule, f"native: member {_member_name(hit)} chosen by rule {rule} ({RULES[rule]}); {why}")
    if found:
        notes.extend(found[3])
    for other in compatibility_fallbacks(product) if product and members else []:
        found = _search(members, other, ip, device_ip, compatibility)
        if found and found[1] is not None:
            _, hit, why, _ = found
            return make(NATIVE, _member_name(hit), f"compat:{other}",
                        f"native: compatibility fallback {product} -> {other} chose {_member_name(hit)}; {why}")
        if found:
            notes.extend(found[3])

    dev_name = getattr(device, "catalog", None) or product or dev_ip
    why_not = f"no image for {dev_name} ({dev_ip}) among {embedded}"
    if notes:
        why_not += "; rejected: " + "; ".join(notes)
    if product and not compatibility_fallbacks(product):
        why_not += f"; the driver has no compatibility fallback for {product}"
    if has_ir:
        return make(JIT, ir_image, "ir", f"JIT: {why_not}; the driver rebuilds {ir_image} (SPIR-V) at first use")
    return make(UNSUPPORTED, None, "no-match", f"unsupported: {why_not}, and no SPIR-V was kept (built with JIT fallback off); the driver reports \"Couldn't find matching binary\"")
