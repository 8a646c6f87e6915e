"""Native coverage proven by the real Intel driver: ``aotwheel compile --min-driver`` output loaded
by compute-runtime's OpenCL driver in simulation mode (no GPU), one process per device with the
product and IP version overridden (:mod:`aotwheel.backends.intel.simulate`). A build log saying
``-Wrecompiled-from-ir`` is JIT; anything else that builds is the native code.

Runs where the installed ocloc builds the Xe2 and Xe3 client devices (Debian sid's 26.x: CI's sid
lane, whose ci/setup.sh installs the driver, intel-opencl-icd, beside it); Debian 12's ocloc 22.43
builds none of them, so there the tests skip, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.backends.intel.catalog import load_catalog

from conftest import CLANG, LLVM_SPIRV, REPO, require, run_tool, unbuildable_devices

XE2 = ["bmg-g21", "bmg-g31", "lnl-m"]
XE3 = ["ptl-h", "ptl-u", "wcl"]
CAT = load_catalog()

@pytest.fixture(scope="module")
def spv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require("ocloc", CLANG, LLVM_SPIRV)
    missing = [d for d in XE2 + XE3 if d in unbuildable_devices()]
    if missing:
        pytest.skip(f"the installed ocloc cannot build {', '.join(missing)} (Debian 12's 22.43; ocloc 25.27+ builds them)")
    work = tmp_path_factory.mktemp("coverage-driver")
    (work / "saxpy.cl").write_text("kernel void saxpy(float a, global const float *x, global float *y) "
                                   "{ size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }\n")
    run_tool([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(work / "saxpy.cl"), "-o", str(work / "k.bc")])
    run_tool([LLVM_SPIRV, str(work / "k.bc"), "-o", str(work / "k.spv")])
    return work / "k.spv"


def driver_verdict(binary: Path, device: str, tmp: Path) -> str:
    """What the installed driver, simulating ``device``, does with ``binary`` through OpenCL:
    native, jit or fail (drv's harness, :func:`aotwheel.backends.intel.simulate.judge`)."""
    from aotwheel.backends.intel.simulate import BY_NAME, OPENCL, judge

    answer = judge(BY_NAME[device], [binary], apis=(OPENCL,))
    assert not answer.error and OPENCL in answer.apis, (
        f"no Intel GPU driver answered in simulation mode ({answer.error or 'no OpenCL'}): install intel-opencl-icd (ci/setup.sh does)")
    return str(answer.outcome(binary))


def compile_for(spv: Path, names: list[str], floor: str, out: Path) -> dict:
    env = {**os.environ, "AOTWHEEL_CACHE_DIR": str(out.parent / "cache"), "PYTHONPATH": str(REPO / "python")}
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", ",".join(names), "--min-driver", floor,
                           "--json", "-o", str(out)], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("names, images", [(XE2, 1), (XE3, 1), (XE2 + XE3, 2)], ids=["xe2", "xe3", "xe2+xe3"])
@pytest.mark.parametrize("floor", ["26.05", "24.45", "auto"])
def test_every_listed_device_runs_natively(spv: Path, tmp_path: Path, names: list[str], images: int, floor: str) -> None:
    """At 26.05 (the release that serves wcl) one image per list, two for both; at an older stated
    release one image per device; by default what the planner chose: each listed device native on
    driver 26.27."""
    doc = compile_for(spv, names, floor, tmp_path / "k.ar")
    members = [d["member"] for d in doc["devices"]]
    if floor == "26.05":
        assert len(members) == images, members
    elif floor == "24.45":
        assert members == [f"64.{CAT.by_name(n).ip}" for n in names], members
    for name in names:
        assert driver_verdict(tmp_path / "k.ar", name, tmp_path) == "native", (name, members)


def test_one_image_per_device_is_native_only_on_its_own_device(spv: Path, tmp_path: Path) -> None:
    """What the shared members add: with IP members (24.45's plan) lnl-m's image alone does not serve
    bmg-g31, and with 64.bmg (26.05's) bmg-g21's image does; so the test above tells the plans apart."""
    compile_for(spv, ["bmg-g21", "lnl-m"], "24.45", tmp_path / "ip.ar")
    compile_for(spv, ["bmg-g21", "lnl-m"], "26.05", tmp_path / "shared.ar")
    assert driver_verdict(tmp_path / "ip.ar", "bmg-g31", tmp_path) == "jit"
    assert driver_verdict(tmp_path / "shared.ar", "bmg-g31", tmp_path) == "native"


PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(coverage LANGUAGES C)
add_library(myext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
aotwheel_add_device_code(myext SOURCES {source} DEVLIST DEVS NAME dk DESTINATION pkg)
"""


def test_cmake_build_makes_the_planned_images_and_each_device_runs_natively(spv: Path, tmp_path: Path, builds: None) -> None:
    """A CMake build of the Xe2+Xe3 list with USE_AOT_MIN_DRIVER=26.05: two ocloc images (bmg-g21's and
    ptl-h's, members 64.bmg and 64.ptl), the manifest says which serves which device, and driver
    26.27 runs all six natively from the embedded fat binary."""
    from _build_util import ar_members, build_env, embedded_images, run

    require("cmake", "ninja", "cc", "ar")
    src = tmp_path / "src"
    src.mkdir()
    (src / "saxpy.cl").write_text((spv.parent / "saxpy.cl").read_text())
    (src / "CMakeLists.txt").write_text(PROJECT.format(source=src / "saxpy.cl"))
    (src / "ext.c").write_text('#include "dk_aot.h"\nunsigned long count(void) { return aotwheel_dk_image_count; }\n')
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST=",".join(XE2 + XE3), USE_AOT_MIN_DRIVER="26.05")
    run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"), f"-Daotwheel_DIR={REPO / 'cmake'}",
         f"-DPython_EXECUTABLE={sys.executable}"], env=env)
    run(["ninja", "-C", str(tmp_path / "b")], env=env)
    built = sorted(p.name for p in (tmp_path / "b").rglob("saxpy.*.bin"))
    assert built == ["saxpy.bmg-g21.bin", "saxpy.ptl-h.bin"], built
    fat = tmp_path / "fat.ar"
    fat.write_bytes(embedded_images(next((tmp_path / "b").glob("libmyext*.so")))[0].image)
    assert [m for m in ar_members(fat) if not m.startswith("pad_")] == ["64.bmg", "64.ptl", "generic_ir"]
    manifest = json.loads(next((tmp_path / "b").rglob("_aot_manifest.json")).read_text())
    serves = {s["device"]: s["member"] for s in manifest["devlist"]["coverage"]["served"] if s["listed"]}
    assert serves == {**dict.fromkeys(XE2, "64.bmg"), **dict.fromkeys(XE3, "64.ptl")}, manifest["devlist"]["coverage"]
    for name in XE2 + XE3:
        assert driver_verdict(fat, name, tmp_path) == "native", name


def test_inspect_and_check_name_the_shared_image(spv: Path, tmp_path: Path) -> None:
    """inspect says which devices 64.bmg serves and from which driver release; check explains a native
    verdict reached through it; both agree with the driver (bmg-g31 runs it natively)."""
    compile_for(spv, XE2, "26.05", tmp_path / "k.ar")
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    shown = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", str(tmp_path / "k.ar")], capture_output=True, text=True,
                           env=env, check=True).stdout
    assert "64.bmg serves bmg-g21, bmg-g31 (driver 25.27+), lnl-m (driver 25.44+) natively" in shown, shown
    checked = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(tmp_path / "k.ar")], capture_output=True, text=True,
                             env={**env, "AOTWHEEL_DEVICE": "bmg-g31"}, check=False).stdout
    assert "bmg-g31 (20.2.0): native 64.bmg" in checked and "64.bmg is one image shared by the bmg devices (bmg-g21's build" in checked, checked
    assert driver_verdict(tmp_path / "k.ar", "bmg-g31", tmp_path) == "native"


def test_readme_coverage_block(spv: Path) -> None:
    """The README's native-coverage output is what `aotwheel resolve` prints for its list at 26.05."""
    from _readme_util import block

    shown = block("ocloc -device bmg,ptl").text
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "USE_AOT_MIN_DRIVER": "26.05"}
    out = subprocess.run([sys.executable, "-m", "aotwheel", "resolve", ",".join(XE2 + XE3)], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert shown in out, out
