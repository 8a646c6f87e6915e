"""Which devices this machine has, through whichever runtimes happen to be installed.

Every backend is optional and lazy: a missing or broken runtime yields an empty
:class:`ProbeResult` with a ``reason``; nothing here raises because a runtime is absent.
``AOTWHEEL_DEVICE`` (see :mod:`aotwheel.probe.override`) replaces the probes entirely.

The probes are the backends' (``Capabilities.probes``, in registry order; Intel's: Level Zero, OpenCL,
SYCL, ``torch.xpu``; NVIDIA's: the CUDA driver). A probe marked ``heavy`` (SYCL, ``torch.xpu``: they
sit on the same Level Zero driver and cost seconds to import) runs in :func:`detect_devices` only
when the application already imported its module; ``aotwheel devices`` (``probe_all(heavy=True)``)
always asks it.
"""

from __future__ import annotations

import functools
import sys

from aotwheel.results import ProbedDevice, ProbeResult  # re-exported: the probes' result types


def probe_names() -> tuple[str, ...]:
    """Every backend's probes by name, in the order they are asked."""
    from aotwheel import backends

    return tuple(spec.name for spec in backends.probe_specs())


def run_backend(name: str) -> ProbeResult:
    """Run one probe (by its name, e.g. ``"opencl"``); any exception becomes the result's reason."""
    from aotwheel import backends

    try:
        import importlib

        spec = next(s for s in backends.probe_specs() if s.name == name)
        return importlib.import_module(spec.module).probe()
    except Exception as exc:  # a probe must never take the caller down
        return ProbeResult(name, [], f"probe failed: {type(exc).__name__}: {exc}")


@functools.lru_cache(maxsize=2)
def _cached_results(heavy: bool) -> tuple[ProbeResult, ...]:
    from aotwheel import backends

    results: list[ProbeResult] = []
    for spec in backends.probe_specs():
        if spec.heavy and not heavy and spec.heavy not in sys.modules:
            results.append(ProbeResult(spec.name, [], f"skipped: {spec.heavy} not imported by the application (aotwheel devices asks it)"))
            continue
        results.append(run_backend(spec.name))
    return tuple(results)


def probe_all(*, heavy: bool = False, refresh: bool = False) -> list[ProbeResult]:
    """Every backend's result, cached per process; ``heavy=True`` also imports dpctl / torch
    when they are installed; ``refresh=True`` probes again."""
    if refresh:
        _cached_results.cache_clear()
    return list(_cached_results(heavy))


def merge(results: list[ProbeResult]) -> list[ProbedDevice]:
    """One entry per physical device: GPUs from the first probe that saw any, each vendor's own
    driver's GPUs (a ``native`` probe), CPUs from OpenCL.

    Level Zero, SYCL and torch.xpu all sit on the same driver, so a GPU seen by several of
    them is listed once; OpenCL CPU devices have no other probe. A vendor's own driver (CUDA)
    loads with its own rules, so an OpenCL view of the same GPUs would be a duplicate judged
    by the wrong rules.
    """
    from aotwheel import backends

    native_probes = {s.name for s in backends.probe_specs() if s.native}
    gpus: list[ProbedDevice] = []
    others: list[ProbedDevice] = []
    native = [d for r in results if r.backend in native_probes for d in r.devices]
    native_vendors = {d.vendor.lower() for d in native}
    for result in results:
        if result.backend in native_probes:
            continue
        res_gpus = [d for d in result.devices if d.kind == "gpu" and not any(v in d.vendor.lower() for v in native_vendors)]
        if res_gpus and not gpus:
            gpus = res_gpus
        others.extend(d for d in result.devices if d.kind != "gpu" and d.key not in {o.key for o in others})
    return [_with_driver(d, results) for d in gpus] + native + others


def _with_driver(device: ProbedDevice, results: list[ProbeResult]) -> ProbedDevice:
    """``device`` with the driver version another probe reports for the same GPU (same vendor and
    PCI id) when its own probe reports none: Level Zero's version numbers are not the driver
    release the loading rules depend on, OpenCL's driver version is."""
    if device.driver or device.pci_id is None:
        return device
    from dataclasses import replace

    for result in results:
        for other in result.devices:
            if other.kind == "gpu" and other.driver and other.pci_id == device.pci_id and other.vendor == device.vendor:
                return replace(device, driver=other.driver)
    return device


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


__all__ = ["ProbedDevice", "ProbeResult", "detect_devices", "merge", "probe_all", "probe_names", "run_backend"]
