"""Which devices this machine has, through whichever runtimes happen to be installed.

Every backend is optional and lazy: a missing or broken runtime yields an empty
:class:`ProbeResult` with a ``reason``; nothing here raises because a runtime is absent.
``AOTWHEEL_DEVICE`` (see :mod:`aotwheel.probe.override`) replaces the probes entirely.

Backends, in the order they are asked: Level Zero (ctypes), OpenCL (pyopencl), SYCL (dpctl),
``torch.xpu``. The last two sit on the same Level Zero driver and cost seconds to import, so
:func:`detect_devices` asks them only when the application already imported dpctl / torch;
``aotwheel devices`` (``probe_all(heavy=True)``) always asks them.
"""

from __future__ import annotations

import functools
import importlib
import sys
from dataclasses import asdict, dataclass, field

BACKENDS = ("levelzero", "opencl", "sycl", "torchxpu", "cuda")

# Module each heavy backend imports; probed implicitly only once the application imported it.
_HEAVY = {"sycl": "dpctl", "torchxpu": "torch"}


@dataclass(frozen=True)
class ProbedDevice:
    """One device as a runtime reports it.

    ``kind`` is ``"gpu"``, ``"cpu"`` or ``"other"``; ``ip`` is ``"maj.min.rev"`` when the runtime
    can tell it (Level Zero, OpenCL with ``cl_intel_device_attribute_query``, torch.xpu), else
    ``None``; ``catalog`` is the aotwheel catalog name for that IP.
    """

    name: str
    backend: str  # "levelzero" | "opencl" | "sycl" | "torchxpu" | "override"
    kind: str = "gpu"
    vendor: str = "intel"
    ip: str | None = None
    catalog: str | None = None
    pci_id: int | None = None
    platform: str | None = None
    index: int = 0
    spirv: bool | None = None  # accepts SPIR-V input (OpenCL il_version), when known
    driver: str | None = None

    @property
    def label(self) -> str:
        """Short human name: catalog name (or device name) plus the backend."""
        base = self.catalog or self.name
        return f"{base} [{self.backend}]" if self.backend != "override" else base

    @property
    def key(self) -> str:
        """Identity used to warn once per device: kind + IP, else kind + name."""
        return f"{self.kind}:{self.ip or self.name}"

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["pci_id"] = None if self.pci_id is None else "0x%04x" % self.pci_id
        return data


@dataclass
class ProbeResult:
    """What one backend found; ``reason`` says why it found nothing (or is empty)."""

    backend: str
    devices: list[ProbedDevice] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"backend": self.backend, "devices": [d.to_dict() for d in self.devices], "reason": self.reason}


def run_backend(name: str) -> ProbeResult:
    """Run one backend's probe; any exception becomes the result's reason."""
    try:
        module = importlib.import_module(f"aotwheel.probe.{name}")
        return module.probe()
    except Exception as exc:  # a probe must never take the caller down
        return ProbeResult(name, [], f"probe failed: {type(exc).__name__}: {exc}")


@functools.lru_cache(maxsize=2)
def _cached_results(heavy: bool) -> tuple[ProbeResult, ...]:
    results: list[ProbeResult] = []
    for name in BACKENDS:
        module = _HEAVY.get(name)
        if module and not heavy and module not in sys.modules:
            results.append(ProbeResult(name, [], f"skipped: {module} not imported by the application (aotwheel devices asks it)"))
            continue
        results.append(run_backend(name))
    return tuple(results)


def probe_all(*, heavy: bool = False, refresh: bool = False) -> list[ProbeResult]:
    """Every backend's result, cached per process; ``heavy=True`` also imports dpctl / torch
    when they are installed; ``refresh=True`` probes again."""
    if refresh:
        _cached_results.cache_clear()
    return list(_cached_results(heavy))


def merge(results: list[ProbeResult]) -> list[ProbedDevice]:
    """One entry per physical device: GPUs from the first backend that saw any, CPUs from OpenCL.

    Level Zero, SYCL and torch.xpu all sit on the same driver, so a GPU seen by several of
    them is listed once; OpenCL CPU devices have no other backend.
    """
    gpus: list[ProbedDevice] = []
    others: list[ProbedDevice] = []
    # NVIDIA GPUs come from the CUDA driver (their own loading rules); an OpenCL view of the
    # same GPUs would be a duplicate judged by the wrong rules.
    cuda = [d for r in results if r.backend == "cuda" for d in r.devices]
    for result in results:
        if result.backend == "cuda":
            continue
        res_gpus = [d for d in result.devices if d.kind == "gpu" and not (cuda and "nvidia" in d.vendor.lower())]
        if res_gpus and not gpus:
            gpus = res_gpus
        others.extend(d for d in result.devices if d.kind != "gpu" and d.key not in {o.key for o in others})
    return gpus + cuda + others


def detect_devices(*, use_override: bool = True) -> list[ProbedDevice]:
    """The devices on this machine (probed once per process), or ``AOTWHEEL_DEVICE``'s.

    Raises :class:`~aotwheel.errors.DevlistError` only for a malformed ``AOTWHEEL_DEVICE``.
    """
    if use_override:
        from aotwheel.probe.override import from_environment

        forced = from_environment()
        if forced is not None:
            return forced
    return merge(probe_all())


__all__ = ["BACKENDS", "ProbedDevice", "ProbeResult", "detect_devices", "merge", "probe_all", "run_backend"]
