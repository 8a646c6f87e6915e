"""The Intel part of the ``USE_AOT_DEVLIST`` grammar: catalog names, aliases, SYCL arch names,
generic names (``bmg`` = bmg-g21, as ocloc builds it), IP versions (``12.60.7``, or the decimal
u32 ocloc also takes), PCI device ids (``0x9a49``), groups (families, releases) and ocloc's
product ranges (``dg1:acm-g10``, ``xe-hpg:``, ``:dg1``). Standard library only."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aotwheel.backends.intel.catalog import IP_FIELD_MAX, Catalog, Device, format_ip, ip_from_u32, load_catalog, parse_ip, valid_u32_ip
from aotwheel.errors import DevlistError

KEYWORDS = ("none", "native", "no-jit")  # the core resolver's words, offered as suggestions too
# Patterns, compiled (and cached by re) the first time a token needs them: a list of catalog names needs none.
_IP_SHAPE = r"^\d+\.\d+\.\d+$"
_DECIMAL_IP = r"^\d{5,10}$"  # ocloc's decimal form of a u32 IP version (12.10.0 = 50495488)
_PCI_ID = r"^0x[0-9a-f]{1,4}$"
_SYCL_IP = r"^intel_gpu_(\d+)_(\d+)_(\d+)$"  # icpx's numeric arch spelling (intel_gpu_20_1_4)


def owns_token(token: str, catalog: Catalog | None = None) -> bool:
    """A catalog name, alias, IP-shaped token or group: the Intel grammar's."""
    catalog = catalog or load_catalog()
    if ":" in token:  # a range of Intel names (AMD target ids use ':' too: gfx90a:xnack-)
        low, _, high = token.partition(":")
        return all(not part or catalog.by_name(part) or catalog.group(part) for part in (low, high))
    return bool(catalog.by_name(token) or re.match(_IP_SHAPE, token) or catalog.group(token)
                or re.match(_DECIMAL_IP, token) or re.match(_PCI_ID, token) or re.match(_SYCL_IP, token))


def lookup(token: str, raw: str, rest: Sequence[str], catalog: Catalog) -> tuple[str, tuple[Device, ...]]:
    dev = catalog.by_name(token)
    if dev is not None:
        if token == dev.name:
            kind = "device"
        elif token == dev.sycl_arch.lower():
            kind = "sycl-arch"
        elif catalog.generic_root(token) is dev and token not in dev.aliases:
            kind = "generic"
        else:
            kind = "alias"
        return kind, (dev,)
    sycl = re.match(_SYCL_IP, token)
    if sycl:  # a numeric SYCL arch the catalog does not list by that name: its IP
        token = ".".join(sycl.groups())
    if re.match(_IP_SHAPE, token) or re.match(_DECIMAL_IP, token):
        if re.match(_DECIMAL_IP, token) and not valid_u32_ip(int(token)):
            raise DevlistError(f"USE_AOT_DEVLIST: {raw} is not an IP version: a u32 holds arch:10 release:8 "
                               f"reserved:8 revision:6 bits ({'over 32 bits' if int(token) > 0xFFFFFFFF else 'reserved bits set'}); "
                               "name the device or its IP version (12.60.7)", raw, ())
        if re.match(_IP_SHAPE, token) and parse_ip(token) is None:
            raise DevlistError(f"USE_AOT_DEVLIST: {raw} is not an IP version: its fields hold at most "
                               f"{'.'.join(map(str, IP_FIELD_MAX))}; name the device or its IP version (12.60.7)", raw, ())
        ip = parse_ip(token) if re.match(_IP_SHAPE, token) else ip_from_u32(int(token))
        dev = catalog.by_ip(ip) if ip else None
        if dev is None and ip:
            dev = stepping(format_ip(ip), catalog)
        if dev is None:
            raise DevlistError(unknown_ip_message(format_ip(ip) if ip else raw, catalog), raw, ())
        return "ip", (dev,)
    if re.match(_PCI_ID, token):
        dev = catalog.by_pci_id(int(token, 16))
        if dev is None:
            raise DevlistError(f"USE_AOT_DEVLIST: PCI device id {raw} is not in the catalog{_ocloc_note(catalog)}; "
                               "name the device instead ('aotwheel resolve --list')", raw, ())
        return "pci-id", (dev,)
    group = catalog.group(token)
    if group is not None:
        if not group.members:
            raise DevlistError(f"USE_AOT_DEVLIST: '{raw}' holds no shipping product "
                               "(only pre-production IP versions); name a device or an IP version instead", raw, ())
        return "group", group.members
    if ":" in token:
        return "range", _range(token, raw, catalog)
    suggestions = suggest(token, rest, catalog)
    hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else "; run 'aotwheel resolve --list' for valid names"
    raise DevlistError(f"USE_AOT_DEVLIST: unknown device '{raw}'{hint}", raw, suggestions)


def stepping(ip: str, catalog: Catalog) -> Device | None:
    """Another stepping of a catalog product (``20.1.4``, the bmg-g21 stepping icpx's
    ``intel_gpu_bmg_g21`` and ``ocloc ids xe2`` name; ``12.60.1`` ...): an IP version compute-runtime's
    AOT tables name whose major.minor is one catalog product's. It is its own target, named by its
    IP (ocloc builds it as ``-device 20.1.4``; the driver matches images against that IP)."""
    from dataclasses import replace

    from aotwheel.backends.intel.rules import product_configs

    parsed = parse_ip(ip)
    products = [d for d in catalog.devices if parsed and d.ip_tuple[:2] == parsed[:2]]
    if ip not in product_configs() or not products:
        return None
    base = min(products, key=lambda d: (not d.shipping, d.ip_tuple))
    return replace(base, name=ip, ip=ip, aliases=(), sycl_arch=f"intel_gpu_{ip.replace('.', '_')}", pci_ids=(), shipping=False,
                   description=f"a {base.name} stepping ({base.description})")


def _range(token: str, raw: str, catalog: Catalog) -> tuple[Device, ...]:
    """ocloc's ``a:b`` (inclusive), ``a:`` (a and newer) and ``:b`` (b and older): the shipping
    products whose IP versions lie between the endpoints (a family or release endpoint spans
    all of its products)."""
    if token.count(":") != 1 or token == ":":
        raise DevlistError(f"USE_AOT_DEVLIST: '{raw}' is not a range; write first:last, first: or :last (e.g. dg1:acm-g10)", raw, ())
    low_name, high_name = token.split(":")
    ends: list[list[tuple[int, int, int]]] = []
    for name in (low_name, high_name):
        if not name:
            ends.append([])
            continue
        dev = catalog.by_name(name)
        group = catalog.group(name)
        ips = [dev.ip_tuple] if dev else [m.ip_tuple for m in group.members] if group else []
        if not ips:
            hint = suggest(name, (), catalog)
            did = f"; did you mean {' or '.join(hint)}?" if hint else "; run 'aotwheel resolve --list' for valid names"
            raise DevlistError(f"USE_AOT_DEVLIST: unknown device '{name}' in the range '{raw}'{did}", raw, hint)
        ends.append(ips)
    low = min(ends[0]) if ends[0] else (0, 0, 0)
    high = max(ends[1]) if ends[1] else (1 << 10, 0, 0)
    # As ocloc means it: the targets the installed ocloc knows, when one was asked.
    known = (lambda d: catalog.source(d.name) != "catalog") if catalog.ocloc_version else (lambda d: True)
    members = tuple(sorted((d for d in catalog.devices if d.shipping and known(d) and low <= d.ip_tuple <= high),
                           key=lambda d: d.ip_tuple))
    if not members:
        raise DevlistError(f"USE_AOT_DEVLIST: the range '{raw}' holds no shipping product; is it reversed? "
                           "(ranges run from older to newer, e.g. dg1:acm-g10)", raw, ())
    return members


def _ocloc_note(catalog: Catalog) -> str:
    return f" nor known to the installed ocloc {catalog.ocloc_version}" if catalog.ocloc_version else " (no ocloc installed to ask)"


def suggest(token: str, rest: Sequence[str], catalog: Catalog) -> tuple[str, ...]:
    vocabulary = catalog.vocabulary() + list(KEYWORDS)
    # "ats m150": a space inside a name splits it in two; offer the joined name.
    if rest:
        for joiner in ("-", ""):
            joined = f"{token}{joiner}{rest[0].lower()}"
            if catalog.by_name(joined) or catalog.group(joined):
                return (joined,)
    # A letter typed for a look-alike digit (acm-g1O, acm-gl0): the name it spells comes first.
    plain = token.translate(_LOOK_ALIKES)
    first = [plain] if plain != token and plain in vocabulary else []
    import difflib  # a misspelt token's suggestions only: a list that resolves never needs them

    close = difflib.get_close_matches(token, vocabulary, n=3, cutoff=0.6)
    return tuple(dict.fromkeys([*first, *close]))[:3]


_LOOK_ALIKES = str.maketrans({"o": "0", "l": "1", "i": "1"})


def unknown_ip_message(raw: str, catalog: Catalog) -> str:
    ip = parse_ip(raw)
    near = [d for d in catalog.devices if ip and d.ip_tuple[:2] == ip[:2]]
    if not near and ip:
        near = [d for d in catalog.devices if d.ip_tuple[0] == ip[0]]
    known = ", ".join(f"{d.ip} ({d.name})" for d in near[:4])
    hint = f"; known nearby: {known}" if known else "; run 'aotwheel resolve --list' for known IP versions"
    return f"USE_AOT_DEVLIST: IP version {raw} is not a known product{_ocloc_note(catalog) if catalog.ocloc_version else ''}{hint}"
