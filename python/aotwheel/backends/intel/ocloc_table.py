"""What the installed ocloc accepts for ``-device``, as data: the resolver's authority when an
ocloc is present, merged over the built-in catalog (which answers alone when none is).

Read once per ocloc binary (the build cache memoises it by path, size and mtime):

- ocloc 24.31 and newer: ``ocloc query SUPPORTED_DEVICES`` writes a YAML document mapping
  product acronyms (generic names included) to IP versions, family and release groups to IP
  lists, and IP versions to PCI device ids; stepping names (``bmg-g21-a0``) of the ``-device``
  list are asked one by one with ``ocloc ids``;
- older ones (Debian 12's 22.43): ``ocloc ids <word>`` for every word of ``ocloc compile
  --help``'s ``-device`` list (about 40 runs of ~3 ms).

Standard library only; every ocloc run takes an argument list (no shell).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from aotwheel.backends.intel.catalog import BOTH, CATALOG, OCLOC, Catalog, Device, Group, format_ip, ip_from_u32, load_catalog, parse_ip

TYPE_CHECKING = False  # not typing's: aotwheel resolve reads the cached table
if TYPE_CHECKING:
    from aotwheel.buildsteps.cache import DeviceCodeCache

SCHEMA = 1
_MAX_YAML = 4 << 20  # SUPPORTED_DEVICES of 26.27 is ~25 kB; refuse anything absurd
_HEX = r"0x[0-9a-fA-F]+"
# 22.43 lists family and release words in the same -device list as products; these shapes are
# groups there (gen8 ... gen12lp, xe, xe-hp, xe-hpc, xe-hpg, xe2, xe3p-xpc, ...): compiled when an
# ocloc is asked, not for every `aotwheel resolve`.
_GROUP_WORD = r"^(gen\d+(lp)?|xe\d*p?(-[a-z]+)*)$"
_STEPPING = re.compile(r"-[a-z]\d$|-[a-z]\d-")  # dg2-g10-c0, pvc-xt-c0-vg


def is_stepping_name(word: str) -> bool:
    """Whether an ocloc ``-device`` word names a stepping (``dg2-g10-c0``, ``pvc-xt-c0-vg``)."""
    return bool(_STEPPING.search(word))


@dataclass(frozen=True)
class OclocTable:
    """Every ``-device`` word one ocloc accepts: products (with steppings) and groups, by IP."""

    version: str
    products: tuple[tuple[str, str], ...]  # (acronym, "maj.min.rev"), in ocloc's order
    steppings: tuple[str, ...]  # acronyms that name a pre-production stepping, not a product
    groups: tuple[tuple[str, str, tuple[str, ...]], ...]  # (name, "family" | "release", IPs)
    pci_ids: tuple[tuple[int, str], ...] = ()  # (PCI device id, IP)

    def to_dict(self) -> dict[str, object]:
        return {"schema": SCHEMA, "version": self.version, "products": [list(p) for p in self.products],
                "steppings": list(self.steppings), "groups": [[n, k, list(ips)] for n, k, ips in self.groups],
                "pci_ids": [[i, ip] for i, ip in self.pci_ids]}

    @classmethod
    def from_dict(cls, doc: dict) -> OclocTable | None:
        """The table a :meth:`to_dict` wrote, or None for another schema or a damaged document."""
        try:
            if doc.get("schema") != SCHEMA:
                return None
            return cls(version=str(doc["version"]), products=tuple((str(a), str(ip)) for a, ip in doc["products"]),
                       steppings=tuple(str(s) for s in doc["steppings"]),
                       groups=tuple((str(n), str(k), tuple(str(i) for i in ips)) for n, k, ips in doc["groups"]),
                       pci_ids=tuple((int(i), str(ip)) for i, ip in doc["pci_ids"]))
        except (AttributeError, KeyError, TypeError, ValueError):
            return None


def _run(args: list[str], cwd: str) -> str:
    import subprocess  # here: reading a cached table (aotwheel resolve) runs no ocloc

    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout + proc.stderr if proc.returncode == 0 else ""


def _ids(ocloc: str, word: str, cwd: str) -> tuple[str, ...]:
    """``ocloc ids <word>``: the IP versions it matches (empty if ocloc refuses the word)."""
    out = _run([ocloc, "ids", word], cwd)
    return tuple(m for m in re.findall(r"^\s*(\d+\.\d+\.\d+)\s*$", out, re.M))


def _hex_ip(text: str) -> str:
    return format_ip(ip_from_u32(int(text, 16)))


def parse_supported_devices(text: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, tuple[str, ...]]], list[tuple[int, str]]]:
    """``(products, groups, pci_ids)`` from ``ocloc query SUPPORTED_DEVICES``'s YAML (the subset of
    YAML ocloc writes: two-level maps, flow lists of hex numbers)."""
    products: list[tuple[str, str]] = []
    groups: list[tuple[str, str, tuple[str, ...]]] = []
    pci: list[tuple[int, str]] = []
    section = ""
    last_ip = None
    for line in text.splitlines():
        head = re.match(r"^  ([a-z_]+):\s*$", line)
        if head:
            section = head[1]
            continue
        if section == "acronym":
            m = re.match(rf"^    ([a-z0-9][a-z0-9-]*):\s*({_HEX})\s*$", line)
            if m:
                products.append((m[1], _hex_ip(m[2])))
        elif section in ("family_groups", "release_groups"):
            m = re.match(r"^    ([a-z0-9][a-z0-9-]*):\s*\[([^\]]*)\]\s*$", line)
            if m:
                ips = tuple(_hex_ip(v) for v in re.findall(_HEX, m[2]))
                groups.append((m[1], "family" if section == "family_groups" else "release", ips))
        elif section == "ip_to_dev_rev_id":
            m = re.match(rf"^\s+- ip:\s*({_HEX})\s*$", line)
            if m:
                last_ip = _hex_ip(m[1])
            m = re.match(rf"^\s+device_id:\s*({_HEX})\s*$", line)
            if m and last_ip:
                pci.append((int(m[1], 16), last_ip))
    return products, groups, pci


def query_table(ocloc: str, version: str, words: frozenset[str]) -> OclocTable:
    """Ask the ocloc at ``ocloc`` for its table; ``words`` is its ``-device`` list
    (:func:`aotwheel.backends.intel.ocloc_query._acronyms`)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="aotwheel-ocloc-") as tmp:
        products: list[tuple[str, str]] = []
        groups: list[tuple[str, str, tuple[str, ...]]] = []
        pci: list[tuple[int, str]] = []
        if _run([ocloc, "query", "SUPPORTED_DEVICES"], tmp):
            found = sorted(Path(tmp).glob("*.yaml"))
            if found and found[0].stat().st_size <= _MAX_YAML:
                products, groups, pci = parse_supported_devices(found[0].read_text(errors="replace"))
        from_yaml = bool(products)
        known = {a for a, _ in products} | {n for n, _, _ in groups}
        steppings: list[str] = []
        for word in sorted(words - known):
            ips = _ids(ocloc, word, tmp)
            if not ips:
                continue
            if len(ips) > 1 or (not from_yaml and re.match(_GROUP_WORD, word)):
                groups.append((word, "family" if re.fullmatch(r"xe\d*p?|gen\d+", word) else "release", ips))
            else:
                products.append((word, ips[0]))
                if from_yaml or _STEPPING.search(word):  # the YAML names every product: the rest are steppings
                    steppings.append(word)
    return OclocTable(version=version, products=tuple(products), steppings=tuple(steppings),
                      groups=tuple(groups), pci_ids=tuple(pci))


def merge(catalog: Catalog, table: OclocTable) -> Catalog:
    """The catalog as the installed ocloc sees it: its names resolve to the IPs it reports, its
    groups hold the shipping products among the IPs it lists, products only it knows join as
    devices; names only the catalog knows stay (so a too-new device is refused with advice, not
    as unknown)."""
    by_ip: dict[str, Device] = {d.ip: d for d in catalog.devices}
    names_of_ip: dict[str, list[str]] = {}
    for acronym, ip in table.products:
        names_of_ip.setdefault(ip, []).append(acronym)
    generic = dict(catalog.generic)
    stepping = set(table.steppings)
    devices = list(catalog.devices)
    for ip, names in names_of_ip.items():
        if parse_ip(ip) is None:
            continue
        products = [n for n in names if n not in stepping]
        dev = by_ip.get(ip)
        if dev is None:
            first = (products or names)[0]
            group_of = {kind: next((n for n, k, ips in table.groups if k == kind and ip in ips), "") for kind in ("family", "release")}
            dev = Device(name=first, ip=ip, aliases=(), generic=None, family=first.split("-")[0],
                         release=group_of["release"] or group_of["family"], sycl_arch="intel_gpu_" + ip.replace(".", "_"),
                         pci_ids=(), shipping=bool(products), description=f"(from ocloc {table.version})")
            devices.append(dev)
        extra = tuple(n for n in names if n not in (dev.name, *dev.aliases) and n not in generic)
        if extra:
            devices[devices.index(dev)] = replace(dev, aliases=dev.aliases + extra)
    devices.sort(key=lambda d: d.ip_tuple)
    pci_extra: dict[str, list[int]] = {}
    for pci_id, ip in table.pci_ids:
        pci_extra.setdefault(ip, []).append(pci_id)
    devices = [replace(d, pci_ids=d.pci_ids + ids) if (ids := tuple(p for p in pci_extra.get(d.ip, ()) if p not in d.pci_ids)) else d
               for d in devices]  # (a copy only where ocloc adds ids: 22.43 lists none)
    final = {d.ip: d for d in devices}
    groups: dict[str, Group] = {g.name: g for g in catalog.groups}
    for name, _kind, ips in table.groups:
        members = tuple(final[ip] for ip in sorted(ips, key=lambda t: parse_ip(t) or (0, 0, 0)) if ip in final and final[ip].shipping)
        old = groups.get(name)
        groups[name] = Group(name=name, aliases=old.aliases if old else (), members=members)
    # ocloc's generic names (dg2, bmg, ...) are products in its table: keep the catalog's meaning
    # (the root) unless ocloc maps them to another IP.
    for acronym, ip in table.products:
        if acronym in generic and ip in final:
            generic[acronym] = final[ip].name
    # IP versions it builds count as names it knows (a stepping target is named by its IP: grammar.stepping)
    ocloc_names = {a for a, _ in table.products} | {n for n, _, _ in table.groups} | {
        ip for _, ip in table.products} | {ip for _, _, ips in table.groups for ip in ips}
    catalog_names = {k.lower() for d in catalog.devices for k in (d.name, *d.aliases)} | {
        k.lower() for g in catalog.groups for k in (g.name, *g.aliases)} | set(dict(catalog.generic))
    sources = tuple(sorted((n, BOTH if n in ocloc_names and n in catalog_names else OCLOC if n in ocloc_names else CATALOG)
                           for n in ocloc_names | catalog_names))
    group_list = tuple(groups.values())
    return Catalog(devices=tuple(devices), groups=group_list, generic=tuple(generic.items()),
                   ocloc_version=table.version, sources=sources)


def installed_catalog(explicit: str | None = None, cache: DeviceCodeCache | None = None) -> Catalog:
    """The device catalog as the installed ocloc sees it (:func:`merge`); the built-in catalog
    alone when no ocloc is found or it does not run. The ocloc's table is asked once per ocloc
    binary (path, size, mtime) and kept beside its other facts in the cache (``cache``, else the
    one the environment names, whose facts are read without the cache object while the table is
    there: ``aotwheel resolve`` runs no ocloc and imports no pathlib or hashlib); the
    version/acronym facts themselves stay the configure step's to find (and to share through a
    remote cache)."""
    import os

    from aotwheel.backends.intel.ocloc import ocloc_path

    base = load_catalog()
    path = ocloc_path(explicit)
    if path is None or not os.path.isfile(path):
        return base
    if cache is None:
        from aotwheel.buildsteps.toolfacts import read_facts

        facts = read_facts(path) or {}
    else:
        facts = cache.tool_facts(path) or {}
    table = OclocTable.from_dict(facts.get("device_table") or {})
    if table is None:
        from aotwheel.backends.intel.ocloc import find_ocloc
        from aotwheel.errors import ToolchainError

        try:
            found = find_ocloc(path)
        except ToolchainError:
            return base
        table = query_table(path, found.version, found.acronyms)
        if table.products:
            if cache is None:
                from aotwheel.buildsteps.cache import DeviceCodeCache

                cache = DeviceCodeCache.from_env()
            cache.store_tool_facts(path, {**(cache.tool_facts(path) or {}), "device_table": table.to_dict()})
    return merge(base, table) if table.products else base


def needs_installed_table(text: str, catalog: Catalog) -> bool:
    """Whether ``text`` has an Intel token whose meaning the installed ocloc decides: anything but a
    product, alias, SYCL arch name, generic name or IP version of the catalog (whose IPs equal
    ocloc's: tests/test_catalog.py), the keywords and other vendors' targets."""
    from aotwheel import backends

    for token in re.split(r"[,\s]+", text.lower()):
        if not token or token in ("none", "native", "no-jit"):
            continue
        owner = backends.for_token(token)
        if owner is not None and owner.name != "intel":
            continue
        if catalog.by_name(token) is None and catalog.by_ip(token) is None:
            return True
    return False


def catalog_for(text: str, explicit: str | None = None) -> Catalog:
    """The catalog to resolve ``text`` with: the installed ocloc's view where it can differ
    (:func:`needs_installed_table`), else the built-in catalog (no ocloc run)."""
    base = load_catalog()
    return installed_catalog(explicit) if needs_installed_table(text, base) else base
