"""Device probes: absent and broken runtimes for real, the Level Zero struct path against a
stub loader (there is no Intel GPU here: those tests say fake_gpu / fake_loader), OpenCL on
Intel's real CPU runtime, and the AOTWHEEL_DEVICE override."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from _check_util import CACHE, child_env, opencl_cpu_env, run_cli, run_python

# ipVersion values from docs/formats.md §2/§4 (written by hand): pvc 12.60.7 = 0x030f0007.
PVC_IP_U32 = 0x030F0007

STUB_LOADER = r"""
#include <stdint.h>
#include <string.h>
typedef struct { uint32_t stype; void *pNext; uint32_t ipVersion; } ip_ext_t;
typedef struct { uint32_t stype; void *pNext; uint32_t type, vendorId, deviceId; char pad[112 - 28]; char name[256]; } props_t;
static int fail_init = FAIL_INIT;
uint32_t zeInit(uint32_t flags) { (void)flags; return fail_init ? 0x78000001u : 0u; }
uint32_t zeDriverGet(uint32_t *count, void **drivers) {
    if (drivers && *count >= 1) drivers[0] = (void *)0x1000;
    *count = 1; return 0;
}
uint32_t zeDeviceGet(void *driver, uint32_t *count, void **devices) {
    (void)driver;
    if (devices && *count >= 1) devices[0] = (void *)0x2000;
    *count = 1; return 0;
}
uint32_t zeDeviceGetProperties(void *device, props_t *p) {
    (void)device;
    if (p->stype != 3) return 0x78000004u;  /* ZE_RESULT_ERROR_INVALID_ARGUMENT */
    p->type = 1; p->vendorId = 0x8086; p->deviceId = 0x0bd5;
    strcpy(p->name, "Stub Data Center GPU");
    ip_ext_t *ext = (ip_ext_t *)p->pNext;
    if (ext && ext->stype == 0x1000f) ext->ipVersion = IP_VERSION;
    return 0;
}
"""


def _stub_loader(name: str, *, fail_init: bool) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler (cc) to build the stub Level Zero loader")
    folder = CACHE / name
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "stub.c"
    src.write_text(STUB_LOADER.replace("FAIL_INIT", "1" if fail_init else "0").replace("IP_VERSION", f"{PVC_IP_U32:#x}u"))
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(folder / "libze_loader.so.1"), str(src)], check=True)
    return str(folder)


LEVELZERO = "from aotwheel.backends.intel.probes.levelzero import probe; import json; r = probe(); print(json.dumps(r.to_dict()))"


def test_levelzero_absent_loader_gives_reason_not_exception():
    empty = CACHE / "empty_libdir"
    empty.mkdir(parents=True, exist_ok=True)
    # The loader named where there is none (LD_LIBRARY_PATH alone does not hide a system libze1, which CI installs).
    proc = run_python(LEVELZERO, child_env(LD_LIBRARY_PATH=str(empty), AOTWHEEL_ZE_LOADER=str(empty / "libze_loader.so.1")))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["devices"] == []
    assert "libze_loader.so.1" in result["reason"] and "not loadable" in result["reason"]


def test_levelzero_unloadable_library_gives_reason_not_exception():
    broken = CACHE / "broken_libdir"
    broken.mkdir(parents=True, exist_ok=True)
    (broken / "libze_loader.so.1").write_text("not an ELF file\n")
    proc = run_python(LEVELZERO, child_env(LD_LIBRARY_PATH=str(broken)))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["devices"] == [] and "not loadable" in result["reason"]


def test_fake_loader_zeinit_failure_gives_reason():
    folder = _stub_loader("ze_fail", fail_init=True)
    proc = run_python(LEVELZERO, child_env(LD_LIBRARY_PATH=folder))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["devices"] == [] and "0x78000001" in result["reason"]


def test_fake_gpu_levelzero_stub_device_properties_and_ip_extension():
    folder = _stub_loader("ze_pvc", fail_init=False)
    proc = run_python(LEVELZERO, child_env(LD_LIBRARY_PATH=folder))
    assert proc.returncode == 0, proc.stderr
    (dev,) = json.loads(proc.stdout)["devices"]
    # The stub wrote name at offset 112 and the IP through the pNext chain: both must come back.
    assert dev["name"] == "Stub Data Center GPU"
    assert dev["ip"] == "12.60.7" and dev["catalog"] == "pvc"
    assert dev["kind"] == "gpu" and dev["vendor"] == "intel" and dev["pci_id"] == "0x0bd5"


def test_opencl_absent_platforms_is_a_reason_and_detect_returns_empty():
    pytest.importorskip("pyopencl")
    empty = CACHE / "empty_vendors"
    empty.mkdir(parents=True, exist_ok=True)
    code = ("import json; from aotwheel.backends.intel.probes import opencl; from aotwheel.probe import detect_devices; r = opencl.probe(); "
            "print(json.dumps([r.reason, len(r.devices), len([d for d in detect_devices() if d.backend == 'opencl'])]))")
    proc = run_python(code, child_env(OCL_ICD_VENDORS=str(empty), LD_LIBRARY_PATH=str(empty)))
    assert proc.returncode == 0, proc.stderr
    reason, count, detected = json.loads(proc.stdout)
    assert count == 0 and detected == 0 and "no OpenCL platform" in reason


def test_pyopencl_missing_is_a_reason():
    code = ("import sys, json; sys.modules['pyopencl'] = None\n"
            "from aotwheel.backends.intel.probes import opencl; r = opencl.probe(); print(json.dumps(r.reason))")
    proc = run_python(code, child_env())
    assert proc.returncode == 0, proc.stderr
    assert "pyopencl not installed" in json.loads(proc.stdout)


def test_opencl_cpu_runtime_is_found_as_cpu_device_with_spirv():
    env = opencl_cpu_env()
    code = ("import json, pyopencl as cl; from aotwheel.backends.intel.probes import opencl\n"
            "ref = [(d.name.strip(), d.type) for p in cl.get_platforms() for d in p.get_devices()]\n"
            "r = opencl.probe(); print(json.dumps({'ref': ref, 'got': [d.to_dict() for d in r.devices], 'cpu': int(cl.device_type.CPU)}))")
    proc = run_python(code, env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    cpus = [name for name, t in data["ref"] if t & data["cpu"]]
    assert cpus, "the CPU runtime should expose a CPU device"
    got = {d["name"]: d for d in data["got"]}
    for name in cpus:
        assert got[name]["kind"] == "cpu" and got[name]["spirv"] is True and got[name]["ip"] is None


def test_import_is_cheap_and_probes_nothing():
    code = (
        "import sys, aotwheel, aotwheel.probe, aotwheel.hook\n"
        "heavy = [m for m in ('pyopencl', 'numpy', 'ctypes', 'aotwheel.backends.intel.probes.levelzero', 'elftools', 'zstandard', "
        "'dpctl', 'torch') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    proc = run_python(code, child_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_override_names_aliases_ips_groups_and_cpu(monkeypatch):
    from aotwheel.backends.intel.catalog import load_catalog
    from aotwheel.probe import detect_devices

    catalog = load_catalog()
    monkeypatch.setenv("AOTWHEEL_DEVICE", "ats-m150, 12.60.7,xe2-hpg,cpu")
    devices = detect_devices()
    bmg = [d.name for d in catalog.group("xe2-hpg").members]
    assert [d.catalog for d in devices if d.kind == "gpu"] == ["acm-g10", "pvc", *bmg]
    assert [d.ip for d in devices if d.kind == "gpu"][:2] == ["12.55.8", "12.60.7"]  # docs/formats.md §2
    assert [d.kind for d in devices].count("cpu") == 1
    assert all(d.backend == "override" for d in devices)


@pytest.mark.parametrize("value, needle", [("bmgx", "bmg"), ("native", "does not name a device"), ("pvc,,  ,zz9", "zz9")])
def test_override_errors_name_the_token(monkeypatch, value, needle):
    from aotwheel.errors import DevlistError
    from aotwheel.probe import detect_devices

    monkeypatch.setenv("AOTWHEEL_DEVICE", value)
    with pytest.raises(DevlistError) as info:
        detect_devices()
    assert needle in str(info.value) and "AOTWHEEL_DEVICE" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("value, source, line", [
    ("native", "AOTWHEEL_DEVICE", "AOTWHEEL_DEVICE: 'native' does not name a device; use a device name, IP version or 'cpu', e.g. AOTWHEEL_DEVICE=pvc"),
    (", ,", "--device", "--device is empty; name a device (e.g. pvc, 12.60.7, cpu) or unset it"),
])
def test_override_error_lines_offer_the_default_backends_examples(value, source, line):
    # The examples are the default backend's (Intel's settings module); the lines as users know them.
    from aotwheel.errors import DevlistError
    from aotwheel.probe.override import parse

    with pytest.raises(DevlistError) as info:
        parse(value, source=source)
    assert str(info.value) == line


def test_override_bypasses_probes(monkeypatch):
    import aotwheel.probe as probe

    def boom(name):
        raise AssertionError(f"probe {name} must not run under AOTWHEEL_DEVICE")

    monkeypatch.setattr(probe, "run_backend", boom)
    probe._cached_results.cache_clear()
    monkeypatch.setenv("AOTWHEEL_DEVICE", "pvc")
    assert [d.ip for d in probe.detect_devices()] == ["12.60.7"]
    probe._cached_results.cache_clear()


def test_merge_lists_one_gpu_per_device_and_keeps_cpus():
    from aotwheel.probe import ProbedDevice, ProbeResult, merge

    ze = ProbeResult("levelzero", [ProbedDevice("Arc A770", "levelzero", vendor="intel", ip="12.55.8")])
    ocl = ProbeResult("opencl", [ProbedDevice("Arc A770", "opencl", vendor="intel", ip="12.55.8"),
                                 ProbedDevice("Xeon", "opencl", kind="cpu", vendor="intel")])
    merged = merge([ze, ocl])
    assert [(d.backend, d.kind) for d in merged] == [("levelzero", "gpu"), ("opencl", "cpu")]


@pytest.mark.parametrize("value, ip", [
    (0x030F0007, "12.60.7"),              # intel/llvm architecture enum, old encoding (the u32 itself)
    (0x000000030F000700, "12.60.7"),      # newer encoding: u32 << 8 under vendor byte 0x00
    (0x000000030E000500, "12.56.5"),      # intel_gpu_acm_g11
    (0x0100000000000050, None),           # vendor byte 0x01 = NVIDIA
])
def test_torch_xpu_architecture_decoding(value, ip):
    from aotwheel.backends.intel.probes.torchxpu import ip_from_sycl_architecture

    assert ip_from_sycl_architecture(value) == ip


def test_devices_cli_prints_every_backend_reason():
    empty = CACHE / "empty_vendors"
    empty.mkdir(parents=True, exist_ok=True)
    proc = run_cli(["devices", "--json"], child_env(OCL_ICD_VENDORS=str(empty)))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [p["backend"] for p in data["probes"]] == ["levelzero", "opencl", "sycl", "torchxpu", "cuda"]
    assert all(p["reason"] for p in data["probes"] if not p["devices"])


def test_heavy_backends_are_not_imported_implicitly():
    code = ("import sys, json\nfrom aotwheel.probe import probe_all\n"
            "implicit = {r.backend: r.reason for r in probe_all()}\n"
            "print(json.dumps([implicit['sycl'], implicit['torchxpu'], 'torch' in sys.modules, 'dpctl' in sys.modules]))")
    proc = run_python(code, child_env())
    assert proc.returncode == 0, proc.stderr
    sycl, torch, torch_loaded, dpctl_loaded = json.loads(proc.stdout)
    assert sycl.startswith("skipped") and torch.startswith("skipped") and not torch_loaded and not dpctl_loaded


def test_fake_gpu_dpctl_module_is_probed_once_the_application_imported_it():
    # A stand-in dpctl (the real one needs oneAPI): imported by the "application", so probed.
    code = ("import sys, types, json\n"
            "dev = types.SimpleNamespace(name='Stub GPU', is_gpu=True, is_cpu=False, vendor='Intel(R) Corporation', backend='level_zero', driver_version='1')\n"
            "sys.modules['dpctl'] = types.SimpleNamespace(get_devices=lambda: [dev])\n"
            "from aotwheel.probe import probe_all\n"
            "(r,) = [r for r in probe_all() if r.backend == 'sycl']\n"
            "print(json.dumps([d.to_dict() for d in r.devices]))")
    proc = run_python(code, child_env())
    assert proc.returncode == 0, proc.stderr
    (dev,) = json.loads(proc.stdout)
    assert (dev["name"], dev["kind"], dev["vendor"], dev["ip"]) == ("Stub GPU", "gpu", "intel", None)
