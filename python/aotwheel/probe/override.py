"""``AOTWHEEL_DEVICE`` / ``--device``: name the devices instead of probing them.

For tests and for users who know better (a container without device nodes, a machine being
planned for). The value is a comma/space separated list of anything the device catalog knows
(``pvc``, ``ats-m150``, ``intel_gpu_bmg_g21``, ``12.60.7``, family names such as ``bmg``), NVIDIA
GPUs by compute capability (``sm_90``), AMD GPUs by target id (``gfx90a``, ``gfx90a:xnack-``),
plus ``cpu`` for an OpenCL CPU device. Example: ``AOTWHEEL_DEVICE=acm-g11,sm_90,gfx942,cpu``.
"""

from __future__ import annotations

from dataclasses import replace

from aotwheel.errors import DevlistError
from aotwheel.results import ProbedDevice, ProbeResult
from aotwheel.variables import DEVICE, DEVLIST

TYPE_CHECKING = False  # not typing's: `aotwheel check --device` imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping

ENV = DEVICE.name
CPU_TOKEN = "cpu"
# Resolver keywords that make no sense as "the device I have" ("native" would even recurse).
_REJECTED = ("none", "native", "no-jit")


def parse(text: str, *, source: str = ENV) -> list[ProbedDevice]:
    """Devices named by ``text``; raises :class:`DevlistError` naming the bad token.

    Each token goes to the backend whose grammar owns it (tokens nobody owns to the default
    backend, whose catalog suggests the nearest name); ``cpu`` is an OpenCL CPU device of any vendor.
    """
    from aotwheel import backends

    devices: list[ProbedDevice] = []
    for token in text.replace(",", " ").split():  # comma or whitespace separated (str.split's whitespace is re's \s)
        low = token.lower()
        if low == CPU_TOKEN:
            if not any(d.kind == "cpu" for d in devices):
                devices.append(ProbedDevice(name="cpu", backend="override", kind="cpu", vendor="any", spirv=True))
            continue
        if low in _REJECTED:
            raise DevlistError(f"{source}: '{token}' does not name a device; use a device name, IP version or '{CPU_TOKEN}', "
                               f"e.g. {ENV}={_examples()[0]}", token)
        owner = backends.for_token(low) or backends.default()
        try:
            named = owner.devlist_grammar().devices(low, token, source)
        except DevlistError as exc:  # a backend's grammar speaks of USE_AOT_DEVLIST: name this input instead
            raise DevlistError(str(exc).replace(DEVLIST.name, source, 1), exc.token, exc.suggestions) from None
        for dev in named:
            if not any(d.vendor == dev.vendor and d.catalog == dev.catalog for d in devices):
                devices.append(replace(dev, index=len(devices)))
    if not devices:
        raise DevlistError(f"{source} is empty; name a device (e.g. {', '.join((*_examples(), CPU_TOKEN))}) or unset it")
    return devices


def _examples() -> tuple[str, ...]:
    """The examples the messages offer: the default backend's (a device name first, then other token kinds)."""
    from aotwheel import backends

    return tuple(backends.default_settings().DEVICE_MESSAGE_EXAMPLES)


def from_environment(env: Mapping[str, str] | None = None) -> list[ProbedDevice] | None:
    """The override from ``AOTWHEEL_DEVICE`` in ``env`` (default: this process's environment),
    or ``None`` when it is unset or empty."""
    text = DEVICE.given(env)
    return parse(text) if text else None


def probe() -> ProbeResult:
    """Backend-shaped view of the override (for ``aotwheel devices``)."""
    text = DEVICE.given()
    if not text:
        return ProbeResult("override", [], f"{ENV} not set")
    return ProbeResult("override", parse(text), "")
