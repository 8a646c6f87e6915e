"""SYCL probe through dpctl, when it is installed. dpctl does not report IP versions, so
GPUs found here carry only a name (verdicts for them are "unknown" unless the binary is
JIT-only); Level Zero and OpenCL are asked first for that reason."""

from __future__ import annotations

from aotwheel.results import ProbedDevice, ProbeResult


def probe() -> ProbeResult:
    try:
        import dpctl
    except ImportError:
        return ProbeResult("sycl", [], "dpctl not installed")
    try:
        found = dpctl.get_devices()
    except Exception as exc:
        return ProbeResult("sycl", [], f"dpctl.get_devices() failed: {exc}")
    devices = []
    for i, dev in enumerate(found):
        kind = "gpu" if getattr(dev, "is_gpu", False) else "cpu" if getattr(dev, "is_cpu", False) else "other"
        vendor = str(getattr(dev, "vendor", "") or "")
        devices.append(ProbedDevice(
            name=str(dev.name),
            backend="sycl",
            kind=kind,
            vendor="intel" if "intel" in vendor.lower() else vendor,
            platform=str(getattr(dev, "backend", "") or "") or None,
            index=i,
            driver=str(getattr(dev, "driver_version", "") or "") or None,
        ))
    return ProbeResult("sycl", devices, "" if devices else "dpctl found no SYCL device")
