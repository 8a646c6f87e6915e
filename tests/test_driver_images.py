"""Images today's drivers run (issue 35 item 2), judged by Intel's OpenCL driver itself in
simulation mode (tests/_intel_driver.py): for each rule, the driver of this lane (Debian 12:
22.43; Debian sid: 26.27) loads a real binary and aotwheel's verdict for that driver release must
say the same. The expected outcome per release is written from compute-runtime's source (cited per
test), and the driver must agree with it too, so a lane cannot pass by both being wrong.

Binaries: tests/data/ocloc-22.43 (Debian 12's ocloc: sid has none) and tests/data/ocloc-26.27.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _inspect_util import DATA
from _intel_driver import IP, Loaded, load

OCLOC22 = DATA / "ocloc-22.43"
OCLOC26 = DATA / "ocloc-26.27"
LEGACY_IGNORED_SINCE = (26, 18)  # compute-runtime 25918894bc / 6def991ebd: SHT_OPENCL_DEV_BINARY ignored


def _aotwheel(path: Path, device: str, driver: str):
    """aotwheel's verdict for ``path`` on ``device`` driven by ``driver`` (the version the simulated
    driver reported), as `aotwheel check` decides it for a probed device."""
    from aotwheel.backends.intel.backend import BACKEND
    from aotwheel.inspector import inspect
    from aotwheel.results import ProbedDevice

    (f,) = [f for f in inspect(path).files if f.native_targets or f.ir]
    dev = ProbedDevice(name=f"Intel(R) Graphics {device}", backend="opencl", kind="gpu", vendor="intel", ip=IP[device],
                       catalog=device, driver=driver)
    return f, BACKEND.decide(f, dev, binary=str(path))


def _judged(path: Path, device: str, tmp_path: Path) -> tuple[Loaded, str]:
    got = load(path, device, tmp_path / f"sim-{device}")
    assert got.how != "fail", got.log
    f, v = _aotwheel(path, device, got.driver)
    assert v.verdict == got.how, f"driver {got.driver} on {device}: {got.how}; aotwheel: {v.verdict} ({v.reason})"
    return got, v.reason


def test_legacy_image_is_native_before_26_18_and_jit_from_it(tmp_path):
    # device_binary_format_ocl_elf.cpp: up to 26.14 the patch-token device binary is unpacked and
    # checked for the core family (native on pvc); from 26.18 it is skipped ("only intermediate
    # representation is extracted from legacy OCL ELF executables"): the image's SPIR-V is rebuilt.
    got, reason = _judged(OCLOC22 / "pvc.legacy.bin", "pvc", tmp_path)
    assert got.how == ("native" if got.release < LEGACY_IGNORED_SINCE else "jit")
    if got.how == "jit":
        assert "26.18" in reason


def test_zebin_of_ocloc_22_43_is_read_with_its_product_and_core_and_runs_native(tmp_path):
    # ocloc 22.43's zebins declare the product family (note 1: PVC) and core 0 (unknown), no
    # product config; validateTargetDevice (zebin_decoder.cpp) then checks the product family.
    from aotwheel.inspector import inspect

    (f,) = inspect(OCLOC22 / "pvc.zebin").files
    (t,) = f.native_targets
    assert (t.format, t.product, t.core, t.arch) == ("zebin", "PVC", "XE_HPC_CORE", None)
    assert "core 0x0" not in f.target_names() and t.rebuildable  # its .spv
    for binary in ("pvc.zebin", "pvc+acm-g10.zebin.ar", "aotwheel-compile.pvc+acm-g10.ar"):
        got, _ = _judged(OCLOC22 / binary, "pvc", tmp_path)
        assert got.how == "native", binary
    for binary in ("pvc+acm-g10.zebin.ar", "aotwheel-compile.pvc+acm-g10.ar"):  # what aotwheel writes with Debian 12's ocloc
        got, _ = _judged(OCLOC22 / binary, "acm-g10", tmp_path)
        assert got.how == "native", binary


def test_a_zebin_for_another_device_is_rebuilt_from_its_own_spirv(tmp_path):
    # unpackSingleZebin (device_binary_format_zebin.cpp): an image that does not validate but has
    # a .spv section is rebuilt from it ("Rebuilding from intermediate representation").
    got, reason = _judged(OCLOC22 / "pvc.zebin", "acm-g10", tmp_path)
    assert got.how == "jit" and "carries" in reason
    if got.release >= (25, 27):  # a driver that simulates Battlemage and Panther Lake (26.27 here)
        got, _ = _judged(OCLOC26 / "ptl-h.bin", "bmg-g31", tmp_path)  # ocloc 26.27's plain zebin, product config 30.0.4
        assert got.how == "jit"
        got, _ = _judged(OCLOC26 / "ptl-h.bin", "ptl-u", tmp_path)  # compatibilityMapping PTL_H_B0 -> PTL_U_A0 (25.18+)
        assert got.how == "native"


def test_fp64_poisoned_kernel_is_native_and_named(tmp_path):
    # -cl-poison-unsupported-fp64-kernels: IGC keeps a stub that returns without computing; the
    # driver loads the image natively and still lists the kernel.
    got, reason = _judged(OCLOC22 / "acm-g10.fp64-poisoned.zebin", "acm-g10", tmp_path)
    assert got.how == "native" and "axpy64" in got.kernels
    assert "axpy64" in reason and "poisoned" in reason
    from aotwheel.inspector import inspect

    (f,) = inspect(OCLOC22 / "acm-g10.fp64-poisoned.zebin").files
    assert [t.poisoned for t in f.native_targets] == [("axpy64",)]
    assert any("axpy64" in w and "poisoned" in w for w in f.warnings)


def test_a_stepping_ip_is_judged_as_its_own_device(tmp_path):
    # 20.1.4 (BMG_G21_B0_RESERVED; what icpx's intel_gpu_bmg_g21 means) resolves as a target of its
    # own; a 20.1.0 member does not validate on it (compatibilityMapping lists no image for 20.1.4).
    from aotwheel.backends.intel.devlist import IntelPart
    from aotwheel.devlist import resolve

    assert [(t.name, t.ip) for t in resolve("20.1.4").part_of(IntelPart).targets] == [("20.1.4", "20.1.4")]
    probe = load(OCLOC22 / "pvc.zebin", "pvc", tmp_path / "probe")  # which driver release is this?
    if probe.release < (25, 27):
        return  # Debian 12's driver simulates no Battlemage: the resolution above is this lane's part
    got, _ = _judged(OCLOC26 / "bmg+ptl+dg2.ar", "20.1.4", tmp_path)
    assert got.how == "jit"
    got, _ = _judged(OCLOC26 / "bmg+ptl+dg2.ar", "bmg-g21", tmp_path)
    assert got.how == "native"


@pytest.mark.parametrize("device", ["pvc", "acm-g10"])
def test_legacy_fat_binary_follows_the_driver_release(device, tmp_path):
    # A fat binary as Debian 12's ocloc writes it by default (legacy members), where this ocloc
    # still writes them: the members are native before 26.18 and generic_ir is rebuilt from it.
    from _check_util import fat_binary

    path = fat_binary("pvc,acm-g10", legacy=True)  # skips unless the installed ocloc writes legacy images (22.43)
    got, _ = _judged(path, device, tmp_path)
    assert got.how == ("native" if got.release < LEGACY_IGNORED_SINCE else "jit")
