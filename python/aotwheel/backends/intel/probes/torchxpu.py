"""``torch.xpu`` probe, when PyTorch with XPU support is installed.

``torch.xpu.get_device_properties(i).architecture`` is the SYCL ``architecture`` enum value;
intel/llvm has encoded Intel GPUs two ways: the IP version u32 itself (``intel_gpu_pvc =
0x030f0007``) and, later, that u32 shifted left by 8 under a zero vendor byte
(``0x000000030f000700``). Both decode to the same IP version.
"""

from __future__ import annotations

from aotwheel.backends.intel import INTEL
from aotwheel.results import ProbedDevice, ProbeResult


def ip_from_sycl_architecture(value: int) -> str | None:
    """``"12.60.7"`` for an Intel GPU architecture enum value, else ``None``."""
    from aotwheel.backends.intel.catalog import format_ip, ip_from_u32, valid_u32_ip

    if value <= 0:
        return None
    if value > 0xFFFFFFFF:
        if value >> 56:  # nonzero vendor byte: NVIDIA, AMD, x86 CPU
            return None
        value = (value >> 8) & 0xFFFFFFFF
    if not valid_u32_ip(value):
        return None
    ip = ip_from_u32(value)
    return format_ip(ip) if ip[0] else None


def probe() -> ProbeResult:
    try:
        import torch
    except ImportError:
        return ProbeResult("torchxpu", [], "torch not installed")
    xpu = getattr(torch, "xpu", None)
    try:
        if xpu is None or not xpu.is_available():
            return ProbeResult("torchxpu", [], "torch.xpu not available (no XPU build or no device)")
        count = int(xpu.device_count())
    except Exception as exc:
        return ProbeResult("torchxpu", [], f"torch.xpu failed: {exc}")
    from aotwheel.backends.intel.catalog import load_catalog

    catalog = load_catalog()
    devices = []
    for i in range(count):
        props = xpu.get_device_properties(i)
        arch = getattr(props, "architecture", None)
        ip = ip_from_sycl_architecture(int(arch)) if isinstance(arch, int) else None
        known = catalog.by_ip(ip) if ip else None
        devices.append(ProbedDevice(name=str(props.name), backend="torchxpu", kind="gpu", vendor=INTEL, ip=ip,
                                    catalog=known.name if known else None, index=i, spirv=True))
    return ProbeResult("torchxpu", devices, "" if devices else "torch.xpu reports no device")
