"""The Intel wheel-variant vocabulary (draft PEP 817 / 825 / 850): aotwheel's own provider's values,
and the property of each Intel image in a wheel (the module :mod:`aotwheel.variants` asks; the
backend names it).

Vocabulary (namespace ``aotwheel_intel``, one multi-value feature ``image``):

- ``aotwheel_intel :: image :: 12.60.7`` -- the wheel carries a native image for that Intel GPU IP
  version (an ar member ``64.12.60.7``, as aotwheel builds them);
- ``aotwheel_intel :: image :: spirv`` -- SPIR-V only (JIT). The JIT-only wheel of a matrix is
  published as the *null* variant instead, which every machine accepts and ranks last.

The provider plugin is ``aotwheel.variants:IntelGpuPlugin`` (:data:`PLUGIN_API`, the path that
published variant metadata and aotwheel's ``variant_plugins`` entry point name): the core's
plugin class over this module, which probes the devices (``AOTWHEEL_DEVICE`` overrides them).
:func:`supported_values` turns them into values: per Intel GPU, its exact IP first, then every
other IP whose ``64.<ip>`` member compute-runtime's lookup would load natively on it
(:func:`aotwheel.backends.intel.rules.decide`, newest driver modelled), then ``spirv``. A probe
that fails or finds no Intel GPU leaves ``spirv`` only: an install never fails because of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aotwheel.backends.intel import INTEL

NAMESPACE = "aotwheel_intel"
FEATURE = "image"
JIT_VALUE = "spirv"
PLUGIN_API = "aotwheel.variants:IntelGpuPlugin"  # a stable public path: published wheels name it
PROVIDER_REQUIRES = "aotwheel>=0.1.0"  # the first aotwheel with this plugin
ALWAYS = True  # aotwheel's own provider: in the provider table of every wheel it labels


@dataclass(frozen=True)
class _Member:
    """A ``64.<ip>`` zebin member as aotwheel's fat binaries carry it (what rules.decide reads)."""

    ip: str
    format: str = "zebin"

    @property
    def member(self) -> str:
        return f"64.{self.ip}"

    @property
    def name(self) -> str:
        return self.ip


def native_ips(device: Any, candidates: list[str]) -> list[str]:
    """The IPs among ``candidates`` whose ``64.<ip>`` member the driver loads natively on ``device``
    (one member per fat binary, as compute-runtime's lookup would meet it): exact IP first."""
    from aotwheel.backends.intel.rules import decide
    from aotwheel.results import NATIVE

    native = [ip for ip in candidates if decide([_Member(ip)], [], device).verdict == NATIVE]
    own = getattr(device, "ip", None)
    return sorted(native, key=lambda ip: ip != own)  # stable: the exact IP, then catalog order


def supported_values(devices: list[Any]) -> list[str]:
    """``image`` values this machine supports, best first: each Intel GPU's exact IP, then the IPs
    the driver's rules let serve it, then ``spirv``."""
    from aotwheel.backends.intel.catalog import load_catalog

    candidates = list(dict.fromkeys(d.ip for d in load_catalog().devices if d.ip))
    gpus = [d for d in devices if d.kind == "gpu" and str(d.vendor).lower() == "intel" and d.ip]
    per_device = [native_ips(d, candidates) for d in gpus]
    values: list[str] = []
    for rank in (0, 1):  # exact IPs of all devices before any compatible IP
        for ips in per_device:
            for ip in (ips[:1] if rank == 0 else ips[1:]):
                if ip not in values:
                    values.append(ip)
    return values + [JIT_VALUE]


def all_values() -> list[str]:
    """Every valid ``image`` value: each catalog IP, then ``spirv``."""
    from aotwheel.backends.intel.catalog import load_catalog

    return list(dict.fromkeys(d.ip for d in load_catalog().devices if d.ip)) + [JIT_VALUE]


def target_property(target: Any) -> tuple[str | None, str] | None:
    """``(property, "")`` for an Intel native image, ``(None, why none)`` for one without an IP
    version; ``None`` for another vendor's."""
    if target.vendor != INTEL:
        return None
    if target.ip:
        return f"{NAMESPACE} :: {FEATURE} :: {target.ip}", ""
    return None, f"no IP version (a {target.format} image); no property"


def ir_property(kind: str) -> str | None:
    """SPIR-V is no property: a JIT-only wheel is the null variant."""
    return None
