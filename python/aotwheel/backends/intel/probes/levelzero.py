"""Level Zero probe through ctypes on ``libze_loader.so.1`` (no Python package needed).

Struct layouts follow the Level Zero headers (``ze_api.h``): ``ze_device_properties_t`` is 368
bytes with ``name`` at offset 112, and ``ze_device_ip_version_ext_t`` chained through ``pNext``
gives the IP version the driver itself uses to pick a native image.
"""

from __future__ import annotations

import ctypes

from aotwheel.backends.intel.variables import ZE_LOADER
from aotwheel.results import ProbedDevice, ProbeResult

LIBRARY = "libze_loader.so.1"
ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES = 0x3
ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT = 0x1000F
ZE_DEVICE_TYPE = {1: "gpu", 2: "cpu", 3: "other", 4: "other", 5: "other"}  # GPU, CPU, FPGA, MCA, VPU
INTEL_VENDOR_ID = 0x8086
MAX_COUNT = 64  # more drivers/devices than this is a broken loader, not a machine


class _IpVersionExt(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("ipVersion", ctypes.c_uint32)]


class _DeviceProperties(ctypes.Structure):
    _fields_ = [
        ("stype", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("type", ctypes.c_uint32),
        ("vendorId", ctypes.c_uint32),
        ("deviceId", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("subdeviceId", ctypes.c_uint32),
        ("coreClockRate", ctypes.c_uint32),
        ("maxMemAllocSize", ctypes.c_uint64),
        ("maxHardwareContexts", ctypes.c_uint32),
        ("maxCommandQueuePriority", ctypes.c_uint32),
        ("numThreadsPerEU", ctypes.c_uint32),
        ("physicalEUSimdWidth", ctypes.c_uint32),
        ("numEUsPerSubslice", ctypes.c_uint32),
        ("numSubslicesPerSlice", ctypes.c_uint32),
        ("numSlices", ctypes.c_uint32),
        ("timerResolution", ctypes.c_uint64),
        ("timestampValidBits", ctypes.c_uint32),
        ("kernelTimestampValidBits", ctypes.c_uint32),
        ("uuid", ctypes.c_uint8 * 16),
        ("name", ctypes.c_char * 256),
    ]


assert ctypes.sizeof(_DeviceProperties) == 368 and _DeviceProperties.name.offset == 112


def _load(library: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(library)
    u32, ptr = ctypes.c_uint32, ctypes.c_void_p
    lib.zeInit.argtypes, lib.zeInit.restype = [u32], u32
    lib.zeDriverGet.argtypes, lib.zeDriverGet.restype = [ctypes.POINTER(u32), ptr], u32
    lib.zeDeviceGet.argtypes, lib.zeDeviceGet.restype = [ptr, ctypes.POINTER(u32), ptr], u32
    lib.zeDeviceGetProperties.argtypes = [ptr, ctypes.POINTER(_DeviceProperties)]
    lib.zeDeviceGetProperties.restype = u32
    return lib


def _handles(fn, *args) -> list[int]:
    """The two-call Level Zero enumeration: ask the count, then fill an array of handles."""
    count = ctypes.c_uint32(0)
    rc = fn(*args, ctypes.byref(count), None)
    if rc != 0:
        raise _ZeError(fn.__name__, rc)
    if count.value == 0:
        return []
    if count.value > MAX_COUNT:
        raise _ZeError(fn.__name__, rc, f"reported {count.value} handles")
    array = (ctypes.c_void_p * count.value)()
    rc = fn(*args, ctypes.byref(count), array)
    if rc != 0:
        raise _ZeError(fn.__name__, rc)
    return [h for h in array[: min(count.value, len(array))] if h]


class _ZeError(Exception):
    def __init__(self, call: str, rc: int, detail: str = "") -> None:
        super().__init__(f"{call} returned 0x{rc:08x}{' ' + detail if detail else ''}")


def probe(library: str | None = None) -> ProbeResult:
    """Devices from every Level Zero driver; an empty result with a reason when unusable."""
    library = library or ZE_LOADER.given() or LIBRARY
    try:
        lib = _load(library)
    except OSError as exc:
        return ProbeResult("levelzero", [], f"{library} not loadable ({exc}); install the Level Zero loader (level-zero / libze1)")
    except AttributeError as exc:
        return ProbeResult("levelzero", [], f"{library} is not a Level Zero loader (missing {exc})")
    rc = lib.zeInit(0)
    if rc != 0:
        # 0x78000001 = ZE_RESULT_ERROR_UNINITIALIZED: loader present, no driver or no device.
        return ProbeResult("levelzero", [], f"zeInit failed with 0x{rc:08x} (no Level Zero driver or no GPU)")
    from aotwheel.backends.intel.catalog import format_ip, ip_from_u32, load_catalog, valid_u32_ip

    catalog = load_catalog()
    devices: list[ProbedDevice] = []
    try:
        for driver in _handles(lib.zeDriverGet):
            for handle in _handles(lib.zeDeviceGet, ctypes.c_void_p(driver)):
                ext = _IpVersionExt(ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT, None, 0)
                props = _DeviceProperties()
                props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES
                props.pNext = ctypes.cast(ctypes.pointer(ext), ctypes.c_void_p)
                rc = lib.zeDeviceGetProperties(ctypes.c_void_p(handle), ctypes.byref(props))
                if rc != 0:
                    raise _ZeError("zeDeviceGetProperties", rc)
                # architecture 0 is a core number (22.43's OpenCL answers one), not an IP; reserved bits set: garbage
                real = ext.ipVersion >> 22 != 0 and valid_u32_ip(ext.ipVersion)
                ip = format_ip(ip_from_u32(ext.ipVersion)) if real else None
                known = catalog.by_ip(ext.ipVersion) if real else None
                if known is None and props.vendorId == INTEL_VENDOR_ID:
                    known = catalog.by_pci_id(props.deviceId)
                    ip = ip or (known.ip if known else None)
                devices.append(ProbedDevice(
                    name=props.name.decode("utf-8", "replace"),
                    backend="levelzero",
                    kind=ZE_DEVICE_TYPE.get(props.type, "other"),
                    vendor="intel" if props.vendorId == INTEL_VENDOR_ID else "0x%04x" % props.vendorId,
                    ip=ip,
                    catalog=known.name if known else None,
                    pci_id=props.deviceId,
                    index=len(devices),
                    spirv=True,
                ))
    except _ZeError as exc:
        return ProbeResult("levelzero", devices, f"Level Zero enumeration failed: {exc}")
    return ProbeResult("levelzero", devices, "" if devices else "Level Zero driver reports no device")
