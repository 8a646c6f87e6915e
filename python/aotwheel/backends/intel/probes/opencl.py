"""OpenCL probe through pyopencl (optional extra ``aotwheel[selftest]``), GPU and CPU devices.

pyopencl does not expose ``cl_intel_device_attribute_query``, so the IP version
(``CL_DEVICE_IP_VERSION_INTEL`` = 0x4250) and PCI id (``CL_DEVICE_ID_INTEL`` = 0x4251) are read
with ``clGetDeviceInfo`` through ctypes on the ICD loader pyopencl itself loaded.

Also here: finding Intel's CPU OpenCL runtime installed from PyPI (``intel-opencl-rt``) and
making an ICD vendors folder for it, which the command line uses when ``OCL_ICD_VENDORS`` is
unset (pyopencl wheels bundle an ICD loader that honours ``OCL_ICD_VENDORS`` but, as measured
here, not ``OCL_ICD_FILENAMES``).
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from pathlib import Path

from aotwheel.results import ProbedDevice, ProbeResult

CL_DEVICE_IP_VERSION_INTEL = 0x4250
CL_DEVICE_ID_INTEL = 0x4251
ATTRIBUTE_QUERY_EXT = "cl_intel_device_attribute_query"
INTEL_VENDOR_ID = 0x8086
SYSTEM_VENDORS_DIR = "/etc/OpenCL/vendors"
CPU_RUNTIME_LIBRARY = "libintelocl.so"


def _loaded_opencl_library() -> ctypes.CDLL | None:
    """The ICD loader already mapped into this process (pyopencl's bundled one, typically)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rsplit(" ", 1)[-1].strip()
                if "libOpenCL" in os.path.basename(path) and os.path.isfile(path):
                    return ctypes.CDLL(path)
    except OSError:
        pass
    try:
        return ctypes.CDLL("libOpenCL.so.1")
    except OSError:
        return None


def _query_u32(lib: ctypes.CDLL | None, device_ptr: int, param: int) -> int | None:
    if lib is None:
        return None
    fn = lib.clGetDeviceInfo
    fn.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = ctypes.c_int32
    value = ctypes.c_uint32(0)
    rc = fn(ctypes.c_void_p(device_ptr), param, ctypes.sizeof(value), ctypes.byref(value), None)
    return value.value if rc == 0 else None


def _kind(cl, device) -> str:
    if device.type & cl.device_type.GPU:
        return "gpu"
    if device.type & cl.device_type.CPU:
        return "cpu"
    return "other"


# CPUID vendor strings (/proc/cpuinfo "vendor_id") and the names CPU devices carry.
_CPU_VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd", "HygonGenuine": "hygon", "CentaurHauls": "centaur"}


def cpu_vendor(name: str, runtime_vendor: str, cpuinfo: str = "/proc/cpuinfo") -> str:
    """The maker of a CPU device. A CPU OpenCL runtime reports *its own* vendor (Intel's runtime
    says "Intel(R) Corporation", vendor id 0x8086, on an AMD EPYC): the device name, else the
    host's CPUID vendor, says whose CPU it is."""
    low = name.lower()
    for word, vendor in (("amd", "amd"), ("intel", "intel")):
        if re.search(rf"\b{word}\b", low):
            return vendor
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("vendor_id"):
                    ident = line.partition(":")[2].strip()
                    return _CPU_VENDORS.get(ident, ident.lower())
    except OSError:
        pass
    return runtime_vendor.strip().lower()


def describe(cl, platform, device, index: int = 0, lib_cache: list | None = None) -> ProbedDevice:
    """A :class:`ProbedDevice` for one pyopencl device (IP version read through ctypes)."""
    from aotwheel.backends.intel.catalog import format_ip, ip_from_u32, load_catalog, valid_u32_ip

    kind = _kind(cl, device)
    intel = device.vendor_id == INTEL_VENDOR_ID
    ip = catalog_name = pci_id = None
    if intel and kind == "gpu" and ATTRIBUTE_QUERY_EXT in device.extensions.split():
        cache = lib_cache if lib_cache is not None else []
        if not cache:
            cache.append(_loaded_opencl_library())
        raw = _query_u32(cache[0], device.int_ptr, CL_DEVICE_IP_VERSION_INTEL)
        pci_id = _query_u32(cache[0], device.int_ptr, CL_DEVICE_ID_INTEL)
        if raw and raw >> 22 and valid_u32_ip(raw):  # 22.43 answers a core number (architecture 0); reserved bits: garbage
            ip = format_ip(ip_from_u32(raw))
            known = load_catalog().by_ip(raw)
            catalog_name = known.name if known else None
        elif pci_id:  # the PCI id names the product, as Level Zero's probe falls back to
            known = load_catalog().by_pci_id(pci_id)
            ip, catalog_name = (known.ip, known.name) if known else (None, None)
    il = getattr(device, "il_version", "") or ""
    return ProbedDevice(
        name=device.name.strip(),
        backend="opencl",
        kind=kind,
        vendor=cpu_vendor(device.name, device.vendor) if kind == "cpu" else "intel" if intel else device.vendor.strip(),
        ip=ip,
        catalog=catalog_name,
        pci_id=pci_id,
        platform=platform.name.strip(),
        index=index,
        spirv="SPIR-V" in il,
        driver=device.driver_version.strip(),
    )


def probe() -> ProbeResult:
    """Every device of every OpenCL platform; empty with a reason when pyopencl/ICDs are missing."""
    try:
        import pyopencl as cl
    except ImportError:
        return ProbeResult("opencl", [], "pyopencl not installed (pip install 'aotwheel[selftest]')")
    try:
        platforms = cl.get_platforms()
    except Exception as exc:  # pyopencl raises LogicError(PLATFORM_NOT_FOUND_KHR) with no ICD
        return ProbeResult("opencl", [], f"no OpenCL platform ({exc}); install a driver or set OCL_ICD_VENDORS")
    lib: list[ctypes.CDLL | None] = []  # loaded on first need, shared by all devices
    devices: list[ProbedDevice] = []
    for platform in platforms:
        try:
            found = platform.get_devices()
        except Exception:
            continue  # a platform with no devices raises DEVICE_NOT_FOUND
        for device in found:
            devices.append(describe(cl, platform, device, len(devices), lib))
    return ProbeResult("opencl", devices, "" if devices else "OpenCL platforms found but no devices")


def find_cpu_runtime() -> Path | None:
    """``libintelocl.so`` from the PyPI package ``intel-opencl-rt`` in this environment, if any."""
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.environ.get("CONDA_PREFIX", ""))):
        if prefix:
            candidate = Path(prefix, "lib", CPU_RUNTIME_LIBRARY)
            if candidate.is_file():
                return candidate
    return None


def write_vendors_dir(folder: str | os.PathLike, library: str | os.PathLike, *, include_system: bool = True) -> Path:
    """Write ``intel-cpu.icd`` naming ``library`` into ``folder`` (plus the system's ICD files,
    because ``OCL_ICD_VENDORS`` replaces ``/etc/OpenCL/vendors`` rather than adding to it)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / "intel-cpu.icd").write_text(f"{Path(library).resolve()}\n", encoding="utf-8")
    system = Path(SYSTEM_VENDORS_DIR)
    if include_system and system.is_dir():
        for icd in sorted(system.glob("*.icd")):
            target = out / f"system-{icd.name}"
            try:
                target.write_bytes(icd.read_bytes())
            except OSError:
                continue
    return out


def use_cpu_runtime_if_installed() -> Path | None:
    """For command-line entry points only: if ``OCL_ICD_VENDORS`` is unset, pyopencl has not
    talked to a loader yet and ``intel-opencl-rt`` is installed, point the loader at it.

    Returns the vendors folder it set, else ``None``. Library code never calls this: changing
    a process's environment is the application's decision.
    """
    if os.environ.get("OCL_ICD_VENDORS") or "pyopencl" in sys.modules:
        return None
    library = find_cpu_runtime()
    if library is None:
        return None
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="aotwheel-icd-"))
    atexit.register(shutil.rmtree, folder, True)
    write_vendors_dir(folder, library)
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    return folder
