"""NVIDIA GPUs through the CUDA driver API (ctypes on ``libcuda.so.1``; no Python package needed).

Only the driver is asked (``cuInit``, ``cuDeviceGetCount``, ``cuDeviceGet``, ``cuDeviceGetName``,
``cuDeviceGetAttribute`` for the compute capability, ``cuDriverGetVersion``), so this works
without the CUDA toolkit, CuPy or PyTorch. It never raises: an absent or broken driver gives no
devices and a ``reason``. ``CUDA_VISIBLE_DEVICES`` applies, as for every CUDA program.
"""

from __future__ import annotations

import ctypes
from dataclasses import asdict, dataclass, field

LIBRARY = "libcuda.so.1"
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CUDA_ERROR_NO_DEVICE = 100
MAX_DEVICES = 256  # more than this is a broken driver, not a machine
_NAME_LEN = 256


@dataclass(frozen=True)
class CudaDevice:
    """One GPU as the CUDA driver reports it."""

    index: int  # CUDA device ordinal (after CUDA_VISIBLE_DEVICES)
    name: str  # "NVIDIA H100 80GB HBM3"
    cc: tuple[int, int]  # compute capability (9, 0)
    driver_version: int | None = None  # cuDriverGetVersion: 13000 for CUDA 13.0

    @property
    def arch(self) -> int:
        """``90`` for compute capability 9.0."""
        return self.cc[0] * 10 + self.cc[1]

    @property
    def target(self) -> str:
        """The ``USE_AOT_DEVLIST`` token that builds natively for this GPU (``sm_90``)."""
        return f"sm_{self.arch}"

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["cc"] = "%d.%d" % self.cc
        data["target"] = self.target
        return data


@dataclass
class CudaProbe:
    """The devices found, or an empty list and why."""

    devices: list[CudaDevice] = field(default_factory=list)
    reason: str = ""
    library: str = LIBRARY

    def to_dict(self) -> dict[str, object]:
        return {"backend": "cuda", "library": self.library, "devices": [d.to_dict() for d in self.devices], "reason": self.reason}


def probe_cuda(library: str = LIBRARY) -> CudaProbe:
    """Ask the CUDA driver in ``library`` for its GPUs; never raises."""
    try:
        lib = ctypes.CDLL(library)
    except OSError as exc:
        return CudaProbe([], f"no CUDA driver: cannot load {library} ({_short(exc)})", library)
    try:
        return _probe(lib, library)
    except AttributeError as exc:
        return CudaProbe([], f"{library} is not a CUDA driver: {_short(exc)}", library)
    except Exception as exc:  # a probe must never take the caller down
        return CudaProbe([], f"CUDA probe failed: {type(exc).__name__}: {_short(exc)}", library)


def _probe(lib: ctypes.CDLL, library: str) -> CudaProbe:
    c_int, ptr = ctypes.c_int, ctypes.POINTER(ctypes.c_int)
    lib.cuInit.argtypes, lib.cuInit.restype = [ctypes.c_uint], c_int
    lib.cuDeviceGetCount.argtypes, lib.cuDeviceGetCount.restype = [ptr], c_int
    lib.cuDeviceGet.argtypes, lib.cuDeviceGet.restype = [ptr, c_int], c_int
    lib.cuDeviceGetName.argtypes, lib.cuDeviceGetName.restype = [ctypes.c_char_p, c_int, c_int], c_int
    lib.cuDeviceGetAttribute.argtypes, lib.cuDeviceGetAttribute.restype = [ptr, c_int, c_int], c_int

    rc = lib.cuInit(0)
    if rc == CUDA_ERROR_NO_DEVICE:
        return CudaProbe([], f"the CUDA driver found no GPU (cuInit: {_err(lib, rc)})", library)
    if rc != 0:
        return CudaProbe([], f"cuInit failed: {_err(lib, rc)}", library)
    count = c_int(0)
    rc = lib.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0:
        return CudaProbe([], f"cuDeviceGetCount failed: {_err(lib, rc)}", library)
    if not 0 <= count.value <= MAX_DEVICES:
        return CudaProbe([], f"cuDeviceGetCount returned {count.value} devices; the driver is broken", library)
    driver = _driver_version(lib)
    devices: list[CudaDevice] = []
    problems: list[str] = []
    for ordinal in range(count.value):
        dev = c_int(0)
        if (rc := lib.cuDeviceGet(ctypes.byref(dev), ordinal)) != 0:
            problems.append(f"cuDeviceGet({ordinal}): {_err(lib, rc)}")
            continue
        buf = ctypes.create_string_buffer(_NAME_LEN)
        rc = lib.cuDeviceGetName(buf, _NAME_LEN, dev.value)
        name = buf.value.decode("utf-8", "replace") if rc == 0 else f"CUDA device {ordinal}"
        major, minor = c_int(-1), c_int(-1)
        rc1 = lib.cuDeviceGetAttribute(ctypes.byref(major), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev.value)
        rc2 = lib.cuDeviceGetAttribute(ctypes.byref(minor), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev.value)
        if rc1 or rc2 or not (0 < major.value < 100 and 0 <= minor.value < 10):
            problems.append(f"device {ordinal}: compute capability unreadable ({_err(lib, rc1 or rc2)})")
            continue
        devices.append(CudaDevice(ordinal, name, (major.value, minor.value), driver))
    reason = "; ".join(problems) if problems else ("" if devices else "the CUDA driver reports 0 devices")
    return CudaProbe(devices, reason, library)


def _driver_version(lib: ctypes.CDLL) -> int | None:
    try:
        fn = lib.cuDriverGetVersion
    except AttributeError:
        return None
    fn.argtypes, fn.restype = [ctypes.POINTER(ctypes.c_int)], ctypes.c_int
    v = ctypes.c_int(0)
    return v.value if fn(ctypes.byref(v)) == 0 else None


def _err(lib: ctypes.CDLL, rc: int) -> str:
    """``CUDA_ERROR_NO_DEVICE (100)``; the number alone if the driver cannot name it."""
    try:
        fn = lib.cuGetErrorName
        fn.argtypes, fn.restype = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)], ctypes.c_int
        name = ctypes.c_char_p()
        if fn(rc, ctypes.byref(name)) == 0 and name.value:
            return f"{name.value.decode('ascii', 'replace')} ({rc})"
    except AttributeError:
        pass
    return f"error {rc}"


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__


def probe():  # type: ignore[no-untyped-def]
    """The CUDA devices as an :class:`aotwheel.probe.ProbeResult` (backend ``"cuda"``), for
    :func:`aotwheel.probe.run_backend`. ``catalog`` holds the ``sm_XY`` target; ``ip`` stays None
    because it is an Intel IP version."""
    from aotwheel.results import ProbedDevice, ProbeResult

    found = probe_cuda()
    devices = [
        ProbedDevice(
            name=d.name,
            backend="cuda",
            kind="gpu",
            vendor="nvidia",
            catalog=d.target,
            index=d.index,
            driver=str(d.driver_version) if d.driver_version else None,
        )
        for d in found.devices
    ]
    return ProbeResult("cuda", devices, found.reason)
