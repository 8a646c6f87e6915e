"""Intel's GPU driver as the judge: compute-runtime in simulation mode, no GPU needed.

Debian's release builds of compute-runtime honour their debug keys when ``NEOReadDebugKeys=1``:
with ``SetCommandStreamReceiver=1`` (command streams go to an AUB capture file) the OpenCL ICD
(``libigdrcl.so``) and the Level Zero driver (``libze_intel_gpu.so``) create a GPU device of the
product ``ProductFamilyOverride`` names, with the IP ``OverrideHwIpVersion`` sets (26.x; 22.43
knows one device per product). Loading a binary there runs the driver's real archive lookup and
validation: a native image is taken, or the program is rebuilt from its IR (the build log says
``-Wrecompiled-from-ir``), or loading fails. Kernels never execute. docs/formats.md, "The driver as
the judge", has the recipe and what it proves per driver release.

:func:`judge` starts one subprocess per device (the keys never touch the caller's environment),
loads every binary through OpenCL (``clCreateProgramWithBinary`` + ``clBuildProgram``) and, where a
Level Zero driver is installed, through ``zeModuleCreate`` (native format), creates every kernel,
and answers with a :class:`Judgement`: per binary and API ``native`` / ``jit`` / ``fail``, plus the
driver version and the identity the driver reports. Both APIs go through ctypes on the system
loaders (``libOpenCL.so.1``, which ``intel-opencl-icd`` depends on; ``libze_loader.so.1``), the
OpenCL one pointed at the Intel ICD alone.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

NATIVE, JIT, FAIL = "native", "jit", "fail"
OPENCL, LEVELZERO = "opencl", "levelzero"
RECOMPILED = "-Wrecompiled-from-ir"  # compute-runtime's CompilerWarnings::recompiledFromIr
SYSTEM_ICD = Path("/etc/OpenCL/vendors/intel.icd")  # intel-opencl-icd's ICD file (libigdrcl.so)
OPENCL_LOADER = "libOpenCL.so.1"
ZE_LOADER = "libze_loader.so.1"
MAX_LOG = 64 * 1024  # a build log longer than this is cut (the verdict needs its first lines)


@dataclass(frozen=True)
class Simulated:
    """One device as the driver is told to simulate it: the catalog name, compute-runtime's
    product word (``hardwarePrefix``: ``pvc``, ``dg2``, ``bmg``, ``ptl``, ``nvls`` ...), the IP it
    must report (``OverrideHwIpVersion``), a PCI id (``ForceDeviceId``: 22.43 answers no IP, so
    its probes know the device by this id) and the slice x subslice x EU shape
    (``HardwareInfoOverride``, which 26.x requires; Gen12LP aborts with the default 1x4x8)."""

    name: str
    product: str
    ip: str
    pci_id: int | None = None
    shape: str = "1x4x8"
    revision: int | None = None  # OverrideRevision: 22.43 derives a DG2's IP from PCI id and revision (26.x takes the IP)


def _ip_u32(ip: str) -> int:
    major, minor, rev = (int(p) for p in ip.split("."))
    return (major << 22) | (minor << 14) | rev


# Catalog devices and how compute-runtime simulates each (measured with 22.43.24595 and 26.27.39122).
DEVICES: tuple[Simulated, ...] = (
    Simulated("tgllp", "tgllp", "12.0.0", 0x9A49, "1x6x16"),
    Simulated("rkl", "rkl", "12.1.0", 0x4C8A),
    Simulated("adl-s", "adls", "12.2.0", 0x4680),
    Simulated("adl-p", "adlp", "12.3.0", 0x46A6),
    Simulated("adl-n", "adln", "12.4.0", 0x46D0),
    Simulated("dg1", "dg1", "12.10.0", 0x4905, "1x6x16"),
    Simulated("acm-g10", "dg2", "12.55.8", 0x56A0, revision=8),  # C0
    Simulated("acm-g11", "dg2", "12.56.5", 0x56A5, revision=5),  # B1
    Simulated("acm-g12", "dg2", "12.57.0", 0x5696, revision=0),  # A0
    Simulated("pvc", "pvc", "12.60.7", 0x0BD5),
    Simulated("pvc-vg", "pvc", "12.61.7", 0x0BD4),
    Simulated("mtl-u", "mtl", "12.70.4", 0x7D40),
    Simulated("mtl-h", "mtl", "12.71.4", 0x7D55),
    Simulated("arl-h", "arl", "12.74.4", 0x7D51),
    Simulated("bmg-g21", "bmg", "20.1.0", 0xE20B),
    Simulated("bmg-g31", "bmg", "20.2.0", 0xE220),
    Simulated("lnl-m", "lnl", "20.4.4", 0x64A0),
    Simulated("ptl-h", "ptl", "30.0.4", 0xB080),
    Simulated("ptl-u", "ptl", "30.1.0", 0xB090),
    Simulated("wcl", "ptl", "30.3.1", 0xFD80),
    Simulated("nvl-s", "nvls", "30.4.4", 0xD740),
    Simulated("nvl-h", "nvls", "30.5.4", 0xD741),
    Simulated("cri", "cri", "35.11.0", 0x674C),
)
BY_NAME = {d.name: d for d in DEVICES}

# Which of them each measured driver release simulates (release -> names). 22.43 knows the
# products up to pvc and dg2, one product config each (a DG2 zebin of 22.43 names the product
# family only, so acm-g10/g11/g12 are the same device to it); 26.27 knows everything but nvl-p
# (it aborts in bindless_heaps_helper.cpp even with UseBindlessMode=0).
MEASURED: dict[tuple[int, int], tuple[str, ...]] = {
    (22, 43): ("tgllp", "rkl", "adl-s", "adl-p", "adl-n", "dg1", "acm-g10", "acm-g11", "acm-g12", "pvc"),
    (26, 27): tuple(d.name for d in DEVICES),
}


def devices_for(release: tuple[int, int] | None) -> list[Simulated]:
    """The devices a driver release simulates: the newest measured release at or before it
    (the oldest measured one for an older driver)."""
    known = sorted(MEASURED)
    pick = max((r for r in known if release is not None and r <= release), default=known[0])
    return [BY_NAME[n] for n in MEASURED[pick]]


def environment(device: Simulated, scratch: str | os.PathLike[str]) -> dict[str, str]:
    """The keys that make compute-runtime simulate ``device``, writing its capture files into
    ``scratch`` (and nothing into the user's compiler cache). Every key is set for every release:
    22.43 ignores the ones it lacks (``OverrideHwIpVersion``), 26.x needs ``UseAubStream=0`` and
    ``HardwareInfoOverride`` (Debian builds it without aubstream), and Level Zero on newer
    products ``UseBindlessMode=0`` (else it aborts in bindless_heaps_helper.cpp)."""
    keys = {
        "NEOReadDebugKeys": "1",
        "SetCommandStreamReceiver": "1",
        "UseAubStream": "0",
        "HardwareInfoOverride": device.shape,
        "UseBindlessMode": "0",
        "ProductFamilyOverride": device.product,
        "OverrideHwIpVersion": str(_ip_u32(device.ip)),
        "AUBDumpCaptureDirPath": os.fspath(scratch),
        "NEO_CACHE_PERSISTENT": "0",
    }
    if device.pci_id is not None:
        keys["ForceDeviceId"] = f"{device.pci_id:04x}"
    if device.revision is not None:
        keys["OverrideRevision"] = str(device.revision)
    return keys


def vendors_dir(scratch: str | os.PathLike[str], icd: Path = SYSTEM_ICD) -> Path | None:
    """An ICD vendors folder naming only Intel's GPU driver (from ``intel.icd``), so that no other
    OpenCL platform (the CPU runtime a venv points ``OCL_ICD_VENDORS`` at) answers; None when the
    driver is not installed."""
    try:
        library = icd.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not library:
        return None
    folder = Path(scratch, "vendors")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "intel.icd").write_text(library + "\n", encoding="utf-8")
    return folder


def simulation_env(device: Simulated, scratch: str | os.PathLike[str], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A whole environment for a child process that sees ``device``: ``base`` (default: this
    process's) plus :func:`environment` and ``OCL_ICD_VENDORS`` naming Intel's driver alone."""
    env = dict(os.environ if base is None else base)
    env.update(environment(device, scratch))
    folder = vendors_dir(scratch)
    if folder is not None:
        env["OCL_ICD_VENDORS"] = str(folder)
    env.pop("OCL_ICD_FILENAMES", None)
    from aotwheel.variables import DEVICE

    env.pop(DEVICE.name, None)  # the probes must see the simulated device, not a named one
    return env


@dataclass(frozen=True)
class Load:
    """One binary loaded through one API: ``native``, ``jit`` (rebuilt from IR, or IR given) or
    ``fail`` (nothing the driver could take); ``built`` whether the program then built and every
    kernel was created (a JIT from IR the device's compiler refuses is still ``jit``: the driver
    chose the IR, as a verdict says); ``kernels`` the kernels created; ``log`` the build log or error."""

    binary: str
    api: str
    outcome: str
    built: bool = True
    kernels: tuple[str, ...] = ()
    log: str = ""


@dataclass(frozen=True)
class Judgement:
    """What the driver answered for one simulated device: its version (OpenCL's
    ``CL_DRIVER_VERSION``, else Level Zero's), the IP and PCI id it reports (None where it
    answers none: 22.43), every load, and ``error`` when the device could not be started."""

    device: Simulated
    driver: str | None = None
    ip: str | None = None
    pci_id: int | None = None
    apis: tuple[str, ...] = ()
    loads: tuple[Load, ...] = ()
    error: str = ""

    def outcome(self, binary: str | os.PathLike[str], api: str = OPENCL) -> str | None:
        """The outcome for ``binary`` through ``api``, None when it was not loaded that way."""
        key = os.fspath(binary)
        return next((ld.outcome for ld in self.loads if ld.binary == key and ld.api == api), None)

    @property
    def release(self) -> tuple[int, int] | None:
        """The driver's (year, week): ``(26, 27)`` for 26.27.039122."""
        from aotwheel.backends.intel.judge import driver_release

        return driver_release(self.driver)


def judge(device: Simulated, binaries: Iterable[str | os.PathLike[str]], *, apis: Sequence[str] = (OPENCL, LEVELZERO),
          timeout: float = 300, python: str | None = None) -> Judgement:
    """Load every binary on the simulated ``device`` in one child process (``python``: default
    this interpreter) and say what the driver did. An API whose loader or driver is missing is
    left out of ``apis`` in the answer (Debian 12 has no Level Zero GPU driver)."""
    paths = [os.path.abspath(os.fspath(b)) for b in binaries]
    with tempfile.TemporaryDirectory(prefix="aotwheel-sim-") as scratch:
        env = simulation_env(device, scratch)
        if not env.get("OCL_ICD_VENDORS", "").startswith(scratch):  # no Intel OpenCL driver installed
            apis = [a for a in apis if a != OPENCL]
        request = json.dumps({"binaries": paths, "apis": list(apis)})
        cmd = [python or sys.executable, "-m", "aotwheel.backends.intel.simulate", request]
        try:
            proc = subprocess.run(cmd, env=env, cwd=scratch, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return Judgement(device, error=f"the driver did not answer within {timeout:.0f} s")
    answer = _last_json(proc.stdout)
    if answer is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return Judgement(device, error=f"the simulated device did not start (exit {proc.returncode}): {' | '.join(tail)}")
    loads = tuple(Load(ld["binary"], ld["api"], ld["outcome"], bool(ld.get("built")), tuple(ld.get("kernels", ())), ld.get("log", ""))
                  for ld in answer["loads"])
    ip = answer.get("ip")
    return Judgement(device, answer.get("driver"), ip if _valid_ip(ip) else None, answer.get("pci_id"), tuple(answer.get("apis", ())),
                     loads, answer.get("error", ""))


def _valid_ip(ip: object) -> bool:
    """22.43 answers CL_DEVICE_IP_VERSION_INTEL with a core number, not an IP (arch 0)."""
    return isinstance(ip, str) and not ip.startswith("0.")


def _last_json(text: str) -> dict | None:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


# --- aotwheel selftest --simulate ---------------------------------------------------------------


def named_devices(text: str) -> list[Simulated]:
    """The devices of a ``--simulate`` list: catalog names (``pvc,bmg-g21``), or ``all`` for every
    device the installed driver simulates. Raises :class:`~aotwheel.errors.AotwheelError` for a
    name the harness does not know, naming those it does."""
    from aotwheel.errors import AotwheelError

    words = [w.strip().lower() for w in text.replace(" ", ",").split(",") if w.strip()]
    if words == ["all"]:
        first = judge(BY_NAME["pvc"], [], apis=(OPENCL,))
        if first.error:
            raise AotwheelError(f"the Intel driver does not simulate a GPU here ({first.error}); install intel-opencl-icd")
        return devices_for(first.release)
    unknown = [w for w in words if w not in BY_NAME]
    if unknown or not words:
        raise AotwheelError(f"--simulate: unknown device {', '.join(unknown) or repr(text)}; use all or some of {', '.join(BY_NAME)}")
    return [BY_NAME[w] for w in dict.fromkeys(words)]


def selftest(modules: Sequence[object], devices: str | Sequence[Simulated], verdict: Callable[[str, object], str]) -> list[object]:
    """``aotwheel selftest --simulate``: every module's device code (its fat binary, else its
    SPIR-V) loaded by the driver on each simulated device, through OpenCL and Level Zero, and
    every kernel created (none runs). One result per device and API: the driver's native / jit /
    fail, and beside it aotwheel's own verdict for the same file and driver release (``verdict(path,
    probed_device)``, handed in by the command: the core's check, a layer above this package)."""
    from aotwheel.outcomes import DeviceResult, KernelResult
    from aotwheel.results import ProbedDevice

    chosen = named_devices(devices) if isinstance(devices, str) else list(devices)
    results: list[object] = []
    with tempfile.TemporaryDirectory(prefix="aotwheel-selftest-sim-") as tmp:
        files: list[tuple[str, Path]] = []
        for n, mod in enumerate(modules):
            data = getattr(mod, "fatbinary", None) or getattr(mod, "spirv", None)
            if data:
                files.append((str(getattr(mod, "source", n)), Path(tmp, f"module{n}.bin")))
                files[-1][1].write_bytes(data)
        for device in chosen:
            j = judge(device, [f[1] for f in files])
            if j.error:
                results.append(DeviceResult(f"{device.name} [simulated]", "gpu", "fail", "", error=j.error))
                continue
            probed = ProbedDevice(name=device.name, backend=OPENCL, kind="gpu", vendor="intel", ip=device.ip, catalog=device.name,
                                  spirv=True, driver=j.driver)
            for api in j.apis:
                res = DeviceResult(f"{device.name} [simulated {api}, driver {j.driver}]", "gpu", "", "")
                outcomes, notes = [], []
                for source, path in files:
                    load = next(ld for ld in j.loads if ld.binary == str(path) and ld.api == api)
                    outcomes.append(load.outcome)
                    ours = verdict(str(path), replace(probed, backend=api))
                    agrees = {"native": NATIVE, "jit": JIT, "unsupported": FAIL}.get(str(ours)) == load.outcome
                    notes.append(f"{source}: driver {load.outcome}, aotwheel {ours}" + ("" if agrees else " (DISAGREE)"))
                    if load.outcome == FAIL or not load.built:
                        res.error = f"{source}: {load.log.splitlines()[0] if load.log else load.outcome}"
                    res.kernels += [KernelResult(k, None, 0.0, load.built, "created, not run (simulation)") for k in load.kernels]
                res.verdict = "/".join(sorted(set(outcomes)))
                res.program_from = "simulated"
                res.reason = "; ".join(notes)
                results.append(res)
    return results


# --- the child process: talks to the drivers through ctypes -------------------------------------

CL_DEVICE_TYPE_GPU = 4
CL_DEVICE_NAME, CL_DRIVER_VERSION = 0x102B, 0x102D
CL_DEVICE_IP_VERSION_INTEL, CL_DEVICE_ID_INTEL = 0x4250, 0x4251
CL_PROGRAM_BUILD_LOG, CL_PROGRAM_BINARY_TYPE = 0x1183, 0x1184
CL_PROGRAM_BINARY_TYPE_EXECUTABLE = 0x4
CL_PROGRAM_KERNEL_NAMES = 0x1168
SPIRV_MAGIC = (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03")


class _DriverProperties(ctypes.Structure):  # ze_driver_properties_t
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("uuid", ctypes.c_uint8 * 16), ("driverVersion", ctypes.c_uint32)]


class _ModuleDesc(ctypes.Structure):  # ze_module_desc_t
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("format", ctypes.c_uint32), ("inputSize", ctypes.c_size_t),
                ("pInputModule", ctypes.c_void_p), ("pBuildFlags", ctypes.c_char_p), ("pConstants", ctypes.c_void_p)]


class _KernelDesc(ctypes.Structure):  # ze_kernel_desc_t
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32), ("pKernelName", ctypes.c_char_p)]


def _format_ip(value: int) -> str:
    return f"{value >> 22}.{(value >> 14) & 0xFF}.{value & 0x3F}"


class _OpenCl:
    def __init__(self) -> None:
        C = ctypes
        self.C = C
        lib = C.CDLL(OPENCL_LOADER)
        p, u32, i32, sz = C.c_void_p, C.c_uint32, C.c_int32, C.c_size_t
        lib.clGetPlatformIDs.argtypes = [u32, C.POINTER(p), C.POINTER(u32)]
        lib.clGetDeviceIDs.argtypes = [p, C.c_uint64, u32, C.POINTER(p), C.POINTER(u32)]
        lib.clGetDeviceInfo.argtypes = [p, u32, sz, p, C.POINTER(sz)]
        lib.clCreateContext.restype = p
        lib.clCreateContext.argtypes = [p, u32, C.POINTER(p), p, p, C.POINTER(i32)]
        lib.clCreateProgramWithBinary.restype = p
        lib.clCreateProgramWithBinary.argtypes = [p, u32, C.POINTER(p), C.POINTER(sz), C.POINTER(C.c_char_p), C.POINTER(i32), C.POINTER(i32)]
        lib.clBuildProgram.argtypes = [p, u32, C.POINTER(p), C.c_char_p, p, p]
        lib.clGetProgramBuildInfo.argtypes = [p, p, u32, sz, p, C.POINTER(sz)]
        lib.clGetProgramInfo.argtypes = [p, u32, sz, p, C.POINTER(sz)]
        lib.clCreateKernel.restype = p
        lib.clCreateKernel.argtypes = [p, C.c_char_p, C.POINTER(i32)]
        lib.clReleaseKernel.argtypes = [p]
        lib.clReleaseProgram.argtypes = [p]
        self.lib = lib
        platform, count = p(), u32()
        if lib.clGetPlatformIDs(1, C.byref(platform), C.byref(count)) != 0 or not count.value:
            raise RuntimeError("no OpenCL platform: the Intel GPU driver (intel-opencl-icd) did not load")
        self.device = p()
        if lib.clGetDeviceIDs(platform, CL_DEVICE_TYPE_GPU, 1, C.byref(self.device), C.byref(count)) != 0:
            raise RuntimeError("the Intel OpenCL driver created no GPU device")
        err = i32()
        self.context = lib.clCreateContext(None, 1, C.byref(self.device), None, None, C.byref(err))
        if not self.context:
            raise RuntimeError(f"clCreateContext failed ({err.value})")

    def text(self, param: int) -> str:
        buf = self.C.create_string_buffer(4096)
        self.lib.clGetDeviceInfo(self.device, param, 4096, buf, None)
        return buf.value.decode("utf-8", "replace").strip()

    def u32(self, param: int) -> int | None:
        value = self.C.c_uint32()
        rc = self.lib.clGetDeviceInfo(self.device, param, 4, self.C.byref(value), None)
        return value.value if rc == 0 else None

    def _program_text(self, program: object, param: int, build: bool) -> str:
        C, size = self.C, self.C.c_size_t()
        get = (lambda n, b, s: self.lib.clGetProgramBuildInfo(program, self.device, param, n, b, s)) if build else (
            lambda n, b, s: self.lib.clGetProgramInfo(program, param, n, b, s))
        if get(0, None, C.byref(size)) != 0:
            return ""
        buf = C.create_string_buffer(size.value + 1)
        get(size.value, buf, None)
        return buf.value[:MAX_LOG].decode("utf-8", "replace").strip()

    def load(self, data: bytes) -> tuple[str, bool, tuple[str, ...], str]:
        C = self.C
        buf = C.create_string_buffer(data, len(data))
        ptr, size, status, err = C.c_void_p(C.addressof(buf)), C.c_size_t(len(data)), C.c_int32(), C.c_int32()
        program = self.lib.clCreateProgramWithBinary(self.context, 1, C.byref(self.device), C.byref(size),
                                                     C.cast(C.byref(ptr), C.POINTER(C.c_char_p)), C.byref(status), C.byref(err))
        if not program or err.value != 0:  # 26.27 on cri hands back a program object along with CL_INVALID_BINARY
            if program:
                self.lib.clReleaseProgram(program)
            return FAIL, False, (), f"clCreateProgramWithBinary failed ({err.value}, binary status {status.value})"
        try:
            kind = C.c_uint32()
            self.lib.clGetProgramBuildInfo(program, self.device, CL_PROGRAM_BINARY_TYPE, 4, C.byref(kind), None)
            rc = self.lib.clBuildProgram(program, 1, C.byref(self.device), b"", None, None)
            log = self._program_text(program, CL_PROGRAM_BUILD_LOG, True)
            rebuilt = RECOMPILED in log or kind.value != CL_PROGRAM_BINARY_TYPE_EXECUTABLE
            outcome = JIT if rebuilt else NATIVE
            if rc != 0:
                return (outcome if rebuilt else FAIL), False, (), f"clBuildProgram failed ({rc}): {log}"
            names = tuple(n for n in self._program_text(program, CL_PROGRAM_KERNEL_NAMES, False).split(";") if n)
            for name in names:  # every kernel must be creatable (no execution)
                kernel = self.lib.clCreateKernel(program, name.encode(), C.byref(err))
                if not kernel:
                    return outcome, False, names, f"clCreateKernel({name}) failed ({err.value})"
                self.lib.clReleaseKernel(kernel)
            return outcome, True, names, log
        finally:
            self.lib.clReleaseProgram(program)


class _LevelZero:
    def __init__(self) -> None:
        C = ctypes
        self.C = C
        lib = C.CDLL(ZE_LOADER)
        p, u32 = C.c_void_p, C.c_uint32
        lib.zeInit.argtypes = [u32]
        lib.zeDriverGet.argtypes = [C.POINTER(u32), C.POINTER(p)]
        lib.zeDeviceGet.argtypes = [p, C.POINTER(u32), C.POINTER(p)]
        lib.zeContextCreate.argtypes = [p, p, C.POINTER(p)]
        lib.zeModuleCreate.argtypes = [p, p, p, C.POINTER(p), C.POINTER(p)]
        lib.zeModuleBuildLogGetString.argtypes = [p, C.POINTER(C.c_size_t), p]
        lib.zeModuleBuildLogDestroy.argtypes = [p]
        lib.zeModuleGetKernelNames.argtypes = [p, C.POINTER(u32), C.POINTER(C.c_char_p)]
        lib.zeKernelCreate.argtypes = [p, p, C.POINTER(p)]
        lib.zeKernelDestroy.argtypes = [p]
        lib.zeModuleDestroy.argtypes = [p]
        lib.zeDriverGetProperties.argtypes = [p, p]
        self.lib = lib
        rc = lib.zeInit(0)
        if rc != 0:
            raise RuntimeError(f"zeInit returned 0x{rc:08x} (no Level Zero GPU driver: libze-intel-gpu1)")
        count, driver = u32(1), p()
        if lib.zeDriverGet(C.byref(count), C.byref(driver)) != 0 or not count.value:
            raise RuntimeError("zeDriverGet found no driver")
        self.driver, self.device = driver, p()
        count = u32(1)
        if lib.zeDeviceGet(driver, C.byref(count), C.byref(self.device)) != 0 or not count.value:
            raise RuntimeError("zeDeviceGet found no device")
        desc = (u32 * 6)(0xD, 0, 0, 0, 0, 0)  # ze_context_desc_t: stype CONTEXT_DESC, pNext, flags
        self.context = p()
        rc = lib.zeContextCreate(driver, C.byref(desc), C.byref(self.context))
        if rc != 0:
            raise RuntimeError(f"zeContextCreate returned 0x{rc:08x}")

    def version(self) -> str | None:
        """ze_driver_properties_t.driverVersion: compute-runtime packs (major << 24) | (minor << 16) | build."""
        C = self.C
        props = _DriverProperties(0x1, None)
        if self.lib.zeDriverGetProperties(self.driver, C.byref(props)) != 0:
            return None
        v = props.driverVersion
        return f"{v >> 24}.{(v >> 16) & 0xFF:02d}.{v & 0xFFFF}"

    def load(self, data: bytes) -> tuple[str, bool, tuple[str, ...], str]:
        C = self.C
        ir = data[:4] in SPIRV_MAGIC
        buf = C.create_string_buffer(data, len(data))
        desc = _ModuleDesc(0x1B, None, 0 if ir else 1, len(data), C.addressof(buf), b"", None)  # ZE_MODULE_FORMAT_IL_SPIRV / NATIVE
        module, log_handle = C.c_void_p(), C.c_void_p()
        rc = self.lib.zeModuleCreate(self.context, self.device, C.byref(desc), C.byref(module), C.byref(log_handle))
        size = C.c_size_t()
        log = ""
        if log_handle.value:
            self.lib.zeModuleBuildLogGetString(log_handle, C.byref(size), None)
            text = C.create_string_buffer(size.value + 1)
            self.lib.zeModuleBuildLogGetString(log_handle, C.byref(size), text)
            log = text.value[:MAX_LOG].decode("utf-8", "replace").strip()
            self.lib.zeModuleBuildLogDestroy(log_handle)
        outcome = JIT if ir or RECOMPILED in log else NATIVE
        if rc != 0:
            return (outcome if outcome == JIT else FAIL), False, (), f"zeModuleCreate returned 0x{rc:08x}: {log}"
        try:
            count = C.c_uint32()
            self.lib.zeModuleGetKernelNames(module, C.byref(count), None)
            names_p = (C.c_char_p * count.value)()
            self.lib.zeModuleGetKernelNames(module, C.byref(count), names_p)
            names = tuple(n.decode() for n in names_p[: count.value] if n)
            for name in names:
                kernel = C.c_void_p()
                rc = self.lib.zeKernelCreate(module, C.byref(_KernelDesc(0x1D, None, 0, name.encode())), C.byref(kernel))
                if rc != 0:
                    return outcome, False, names, f"zeKernelCreate({name}) returned 0x{rc:08x}"
                self.lib.zeKernelDestroy(kernel)
            return outcome, True, names, log
        finally:
            self.lib.zeModuleDestroy(module)


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _worker(request: Mapping[str, object]) -> dict[str, object]:
    """In the child: start each API's device, load every binary, answer as JSON."""
    answer: dict[str, object] = {"loads": [], "apis": []}
    loads: list[dict[str, object]] = []
    errors: list[str] = []
    apis = [str(a) for a in _strings(request.get("apis"))]
    binaries = [str(b) for b in _strings(request.get("binaries"))]
    for api in apis:
        try:
            runtime: _OpenCl | _LevelZero = _OpenCl() if api == OPENCL else _LevelZero()
        except (OSError, RuntimeError, AttributeError) as exc:
            errors.append(f"{api}: {exc}")
            continue
        answer["apis"].append(api)  # type: ignore[attr-defined]
        if isinstance(runtime, _OpenCl):
            answer["driver"] = runtime.text(CL_DRIVER_VERSION)
            answer["name"] = runtime.text(CL_DEVICE_NAME)
            raw = runtime.u32(CL_DEVICE_IP_VERSION_INTEL)
            answer["ip"] = _format_ip(raw) if raw else None
            answer["pci_id"] = runtime.u32(CL_DEVICE_ID_INTEL)
        else:
            answer.setdefault("driver", runtime.version())
        for path in binaries:
            data = Path(path).read_bytes()
            outcome, built, kernels, log = runtime.load(data)
            loads.append({"binary": path, "api": api, "outcome": outcome, "built": built, "kernels": list(kernels), "log": log})
    answer["loads"] = loads
    if errors and not answer["apis"]:
        answer["error"] = "; ".join(errors)
    return answer


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    request = json.loads(args[0]) if args else {}
    print(json.dumps(_worker(request)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
