"""The device catalog: Intel GPU AOT targets, loaded from ``catalog.json`` shipped in the package.

One :class:`Device` per IP version; its aliases compile to the same binary. Groups (families such
as ``xe2`` and release names such as ``xe-hpc``) expand to shipping products only. Generic names
(``dg2``, ``mtl``, ``bmg``, ``ptl``) mean what ocloc makes of them: the group's root product
(compute-runtime's ``AOT::genericIdAcronyms``), whose binary the driver also runs on the rest of
the group. When an ocloc is installed, :mod:`aotwheel.backends.intel.ocloc_table` merges what it
accepts into this catalog (:attr:`Catalog.sources` says where each name came from).
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass

_IP_RE = re.compile(r"^(\d{1,4})\.(\d{1,3})\.(\d{1,2})$")


# The fields' widths in the packed u32 (arch:10 | release:8 | reserved:8 | revision:6): the largest
# value of each; a larger one would wrap into its neighbour when packed.
IP_FIELD_MAX = (0x3FF, 0xFF, 0x3F)
_RESERVED_BITS = 0xFF << 6


def parse_ip(text: str) -> tuple[int, int, int] | None:
    """``"12.60.7"`` -> ``(12, 60, 7)``; ``None`` if ``text`` is not an IP version (a field wider
    than its bits in the u32 included: 12.256.0 is none)."""
    m = _IP_RE.match(text)
    if not m:
        return None
    ip = (int(m[1]), int(m[2]), int(m[3]))
    return ip if all(v <= most for v, most in zip(ip, IP_FIELD_MAX)) else None


def valid_u32_ip(value: int) -> bool:
    """Whether ``value`` is a packed IP version: within 32 bits, its reserved bits clear. A larger
    number (4345462784 = 2**32 + 12.10.0) or a set reserved bit is none (it used to wrap)."""
    return 0 <= value <= 0xFFFFFFFF and not value & _RESERVED_BITS


def ip_to_u32(ip: tuple[int, int, int]) -> int:
    """Pack an IP version the way Level Zero and zebin do: arch:10 | release:8 | reserved:8 | revision:6."""
    arch, release, revision = ip
    return (arch << 22) | (release << 14) | revision


def ip_from_u32(value: int) -> tuple[int, int, int]:
    """Unpack a u32 IP version (see :func:`ip_to_u32`)."""
    return ((value >> 22) & 0x3FF, (value >> 14) & 0xFF, value & 0x3F)


def format_ip(ip: tuple[int, int, int]) -> str:
    return "%d.%d.%d" % ip


@dataclass(frozen=True)
class Device:
    """One AOT target: a canonical name per IP version, with everything known about it."""

    name: str
    ip: str
    aliases: tuple[str, ...]
    generic: str | None
    family: str
    release: str
    sycl_arch: str
    pci_ids: tuple[int, ...]
    shipping: bool
    description: str
    vendor: str = "intel"

    @property
    def ip_tuple(self) -> tuple[int, int, int]:
        parsed = parse_ip(self.ip)
        assert parsed is not None
        return parsed

    @property
    def ip_u32(self) -> int:
        return ip_to_u32(self.ip_tuple)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "ip": self.ip,
            "aliases": list(self.aliases),
            "generic": self.generic,
            "family": self.family,
            "release": self.release,
            "sycl_arch": self.sycl_arch,
            "pci_ids": ["0x%04x" % p for p in self.pci_ids],
            "shipping": self.shipping,
            "description": self.description,
            "vendor": self.vendor,
        }


@dataclass(frozen=True)
class Group:
    """A family or release name and the shipping products it stands for."""

    name: str
    aliases: tuple[str, ...]
    members: tuple[Device, ...]


CATALOG = "catalog"  # a name only aotwheel's own catalog knows
OCLOC = "ocloc"  # a name only the installed ocloc knows
BOTH = "catalog+ocloc"


@dataclass(frozen=True)
class Catalog:
    devices: tuple[Device, ...]
    groups: tuple[Group, ...]
    generic: tuple[tuple[str, str], ...] = ()  # (generic name, root device name)
    ocloc_version: str | None = None  # the ocloc whose table was merged in, if any
    sources: tuple[tuple[str, str], ...] = ()  # (lower-case name, CATALOG | OCLOC | BOTH) after a merge

    def source(self, name: str) -> str:
        """Where ``name`` comes from: :data:`CATALOG`, :data:`OCLOC` or :data:`BOTH`."""
        return dict(self.sources).get(name.lower(), CATALOG)

    # Catalog names of the devices without fp64 (double), and of those among them whose fp64
    # conversions icpx can emulate (-fsycl-fp64-conv-emu); sourced in catalog.json.
    no_fp64: frozenset[str] = frozenset()
    fp64_conv_emulation: frozenset[str] = frozenset()

    def has_fp64(self, device: Device | str) -> bool:
        """False for a device without fp64 (ocloc refuses a kernel with ``double`` for it)."""
        return (device if isinstance(device, str) else device.name) not in self.no_fp64

    @functools.cached_property
    def _names(self) -> dict[str, Device]:
        table: dict[str, Device] = {}
        for dev in self.devices:
            for key in (dev.name, *dev.aliases, dev.sycl_arch):
                table[key.lower()] = dev
        roots = {d.name: d for d in self.devices}
        for name, root in self.generic:
            if root in roots:
                table.setdefault(name, roots[root])
        return table

    @functools.cached_property
    def _ips(self) -> dict[tuple[int, int, int], Device]:
        return {dev.ip_tuple: dev for dev in self.devices}

    @functools.cached_property
    def _groups(self) -> dict[str, Group]:
        return {key: g for g in self.groups for key in (g.name, *g.aliases)}

    def by_name(self, token: str) -> Device | None:
        """Canonical name, alias or SYCL arch name (``intel_gpu_pvc``), case-insensitive."""
        return self._names.get(token.lower())

    def by_ip(self, ip: str | int | tuple[int, int, int]) -> Device | None:
        """Look up by ``"12.60.7"``, a u32 IP version, or a ``(12, 60, 7)`` tuple."""
        key: tuple[int, int, int] | None
        if isinstance(ip, str):
            key = parse_ip(ip)
        elif isinstance(ip, int):
            key = ip_from_u32(ip) if valid_u32_ip(ip) else None
        else:
            key = (ip[0], ip[1], ip[2])
        return self._ips.get(key) if key is not None else None

    def generic_root(self, token: str) -> Device | None:
        """The root product of a generic name (``bmg`` -> bmg-g21), else None."""
        root = dict(self.generic).get(token.lower())
        return self.by_name(root) if root else None

    def by_pci_id(self, pci_id: int) -> Device | None:
        for dev in self.devices:
            if pci_id in dev.pci_ids:
                return dev
        return None

    def group(self, token: str) -> Group | None:
        return self._groups.get(token.lower())

    def vocabulary(self) -> list[str]:
        """Every word the resolver accepts for a device or group (for suggestions)."""
        return sorted({*self._names, *self._groups})


def _load(raw: dict) -> Catalog:
    devices = tuple(
        Device(
            name=d["name"],
            ip=d["ip"],
            aliases=tuple(d["aliases"]),
            generic=d["generic"],
            family=d["family"],
            release=d["release"],
            sycl_arch=d["sycl_arch"],
            pci_ids=tuple(int(p, 16) for p in d["pci_ids"]),
            shipping=d["shipping"],
            description=d["description"],
        )
        for d in raw["devices"]
    )
    by_name = {d.name: d for d in devices}
    groups = tuple(
        Group(name=name, aliases=tuple(g["aliases"]), members=tuple(by_name[m] for m in g["members"]))
        for name, g in raw["groups"].items()
    )
    generic = tuple((name.lower(), root) for name, root in raw.get("generic", {}).items())
    no_fp64 = frozenset(raw.get("no_fp64", ()))
    emulated = frozenset(raw.get("fp64_conv_emulation", ()))
    unknown = sorted((no_fp64 | emulated) - set(by_name))
    if unknown or not emulated <= no_fp64:
        raise ValueError(f"catalog.json: no_fp64 / fp64_conv_emulation name unknown devices or disagree: {unknown}")
    return Catalog(devices=devices, groups=groups, generic=generic, no_fp64=no_fp64, fp64_conv_emulation=emulated)


@functools.lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The catalog shipped with aotwheel (parsed once, on first use)."""
    # Beside this module, as the package installs it (importlib.resources, for zipped packages aotwheel
    # never is, imports pathlib, zipfile and tempfile: a fifth of a short command's start-up).
    with open(os.path.join(os.path.dirname(__file__), "catalog.json"), encoding="utf-8") as f:
        text = f.read()
    return _load(json.loads(text))
