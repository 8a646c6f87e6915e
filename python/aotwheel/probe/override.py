"""``AOTWHEEL_DEVICE`` / ``--device``: name the devices instead of probing them.

For tests and for users who know better (a container without device nodes, a machine being
planned for). The value is a comma/space separated list of anything the device catalog knows
(``pvc``, ``ats-m150``, ``intel_gpu_bmg_g21``, ``12.60.7``, family names such as ``bmg``), NVIDIA
GPUs by compute capability (``sm_90``), AMD GPUs by target id (``gfx90a``, ``gfx90a:xnack-``),
plus ``cpu`` for an OpenCL CPU device. Example: ``AOTWHEEL_DEVICE=acm-g11,sm_90,gfx942,cpu``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from aotwheel.errors import DevlistError
from aotwheel.probe import ProbeResult, ProbedDevice

ENV = "AOTWHEEL_DEVICE"  # aotwheel.config.DEVICE
CPU_TOKEN = "cpu"
# Resolver keywords that make no sense as "the device I have" ("native" would even recurse).
_REJECTED = ("none", "native", "no-jit")
_SPLIT = re.compile(r"[,\s]+")


def parse(text: str, *, source: str = ENV) -> list[ProbedDevice]:
    """Devices named by ``text``; raises :class:`DevlistError` naming the bad token."""
    from aotwheel import backends
    from aotwheel.backends.intel import grammar
    from aotwheel.backends.intel.catalog import load_catalog

    devices: list[ProbedDevice] = []
    for token in (t for t in _SPLIT.split(text.strip()) if t):
        low = token.lower()
        if low == CPU_TOKEN:
            if not any(d.kind == "cpu" for d in devices):
                devices.append(ProbedDevice(name="cpu", backend="override", kind="cpu", vendor="any", spirv=True))
            continue
        owner = backends.for_token(low)
        if owner is not None and owner.name == "nvidia" and not low.startswith(("sm_", "nvidia_gpu_sm_")):
            raise DevlistError(f"{source}: '{token}' is not a GPU; name an NVIDIA GPU by its cubin target, e.g. {ENV}=sm_90", token)
        if owner is not None and owner.name == "amd":
            from aotwheel.backends.amd.targets import require_target_id

            tid = str(require_target_id(low))
            if not any(d.catalog == tid for d in devices):
                devices.append(ProbedDevice(name=f"AMD {tid}", backend="override", kind="gpu", vendor="amd", catalog=tid, index=len(devices)))
            continue
        if low.startswith(("sm_", "nvidia_gpu_sm_")):
            from aotwheel.backends.nvidia.targets import DEVICE_ARCHS, parse_cuda_target

            try:
                target = parse_cuda_target(low, supported=DEVICE_ARCHS)
            except DevlistError as exc:
                raise DevlistError(str(exc).replace("USE_AOT_DEVLIST", source, 1), exc.token, exc.suggestions) from None
            if not any(d.catalog == target.name for d in devices):
                devices.append(ProbedDevice(name=f"NVIDIA {target.name}", backend="override", kind="gpu", vendor="nvidia",
                                            catalog=target.name, index=len(devices)))
            continue
        if low in _REJECTED:
            raise DevlistError(f"{source}: '{token}' does not name a device; use a device name, IP version or 'cpu', e.g. {ENV}=pvc", token)
        try:
            _, targets = grammar.lookup(low, token, (), load_catalog())
        except DevlistError as exc:
            raise DevlistError(str(exc).replace("USE_AOT_DEVLIST", source, 1), exc.token, exc.suggestions) from None
        for dev in targets:
            if not any(d.catalog == dev.name for d in devices):
                devices.append(ProbedDevice(name=dev.name, backend="override", kind="gpu", ip=dev.ip,
                                            catalog=dev.name, index=len(devices), spirv=True))
    if not devices:
        raise DevlistError(f"{source} is empty; name a device (e.g. pvc, 12.60.7, cpu) or unset it")
    return devices


def from_environment(env: Mapping[str, str] | None = None) -> list[ProbedDevice] | None:
    """The override from ``AOTWHEEL_DEVICE`` in ``env`` (default: this process's environment),
    or ``None`` when it is unset or empty."""
    text = (os.environ if env is None else env).get(ENV, "").strip()
    return parse(text) if text else None


def probe() -> ProbeResult:
    """Backend-shaped view of the override (for ``aotwheel devices``)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return ProbeResult("override", [], f"{ENV} not set")
    return ProbeResult("override", parse(text), "")
