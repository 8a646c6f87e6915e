"""The Intel part of the ``USE_AOT_DEVLIST`` grammar: catalog names, aliases, SYCL arch names,
IP versions (``12.60.7``) and groups (families, releases). Standard library only."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from aotwheel.backends.intel.catalog import Catalog, Device, load_catalog, parse_ip
from aotwheel.errors import DevlistError

KEYWORDS = ("none", "native", "no-jit")  # the core resolver's words, offered as suggestions too
_IP_SHAPE = re.compile(r"^\d+\.\d+\.\d+$")


def owns_token(token: str, catalog: Catalog | None = None) -> bool:
    """A catalog name, alias, IP-shaped token or group: the Intel grammar's."""
    catalog = catalog or load_catalog()
    return bool(catalog.by_name(token) or _IP_SHAPE.match(token) or catalog.group(token))


def lookup(token: str, raw: str, rest: Sequence[str], catalog: Catalog) -> tuple[str, tuple[Device, ...]]:
    dev = catalog.by_name(token)
    if dev is not None:
        if token == dev.name:
            kind = "device"
        elif token == dev.sycl_arch.lower():
            kind = "sycl-arch"
        else:
            kind = "alias"
        return kind, (dev,)
    if _IP_SHAPE.match(token):
        ip = parse_ip(token)
        dev = catalog.by_ip(ip) if ip else None
        if dev is None:
            raise DevlistError(unknown_ip_message(raw, catalog), raw, ())
        return "ip", (dev,)
    group = catalog.group(token)
    if group is not None:
        return "group", group.members
    suggestions = suggest(token, rest, catalog)
    hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else "; run 'aotwheel resolve --list' for valid names"
    raise DevlistError(f"USE_AOT_DEVLIST: unknown device '{raw}'{hint}", raw, suggestions)


def suggest(token: str, rest: Sequence[str], catalog: Catalog) -> tuple[str, ...]:
    vocabulary = catalog.vocabulary() + list(KEYWORDS)
    # "ats m150": a space inside a name splits it in two; offer the joined name.
    if rest:
        for joiner in ("-", ""):
            joined = f"{token}{joiner}{rest[0].lower()}"
            if catalog.by_name(joined) or catalog.group(joined):
                return (joined,)
    return tuple(difflib.get_close_matches(token, vocabulary, n=3, cutoff=0.6))


def unknown_ip_message(raw: str, catalog: Catalog) -> str:
    ip = parse_ip(raw)
    near = [d for d in catalog.devices if ip and d.ip_tuple[:2] == ip[:2]]
    if not near and ip:
        near = [d for d in catalog.devices if d.ip_tuple[0] == ip[0]]
    known = ", ".join(f"{d.ip} ({d.name})" for d in near[:4])
    hint = f"; known nearby: {known}" if known else "; run 'aotwheel resolve --list' for known IP versions"
    return f"USE_AOT_DEVLIST: IP version {raw} is not a known product{hint}"
