"""AMD: clang offload bundles made by the real tools (clang-15 code objects for gfx90a:xnack- and
gfx1030, bundled by clang-offload-bundler-15, placed in ``.hip_fatbin`` of a gcc-built .so), read
back against clang-offload-bundler -list and GNU readelf, and the HIP runtime's code object
choice as verdicts for devices named by target id. No AMD GPU or ROCm is reachable here, so every
device is an override (``gfx90a:xnack-``); aotwheel has no AMD probe.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.inspector import inspect
from aotwheel.runtime import check

from _inspect_util import require, run
from conftest import BUNDLER, CLANG, LLVM_SPIRV  # noqa: F401

_CL = "kernel void add(global float* a, global const float* b) { size_t i = get_global_id(0); a[i] += b[i]; }\n"
TARGETS = ("gfx90a:xnack-", "gfx1030")


@pytest.fixture(scope="module")
def hip_so(tmp_path_factory) -> tuple[Path, Path]:
    require(CLANG, BUNDLER, "gcc")
    work = tmp_path_factory.mktemp("amd")
    (work / "a.cl").write_text(_CL)
    objs = []
    for cpu in TARGETS:
        out = work / (cpu.split(":")[0] + ".co")
        run([CLANG, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-nogpulib", "-O2", "-c", str(work / "a.cl"), "-o", str(out)])
        objs.append(out)
    (work / "host.bin").write_bytes(b"")
    bundle = work / "b.bundle"
    run([BUNDLER, "-type=bc", "-targets=host-x86_64-unknown-linux-gnu," + ",".join(f"hipv4-amdgcn-amd-amdhsa--{t}" for t in TARGETS),
         f"-input={work / 'host.bin'}", *[f"-input={o}" for o in objs], f"-output={bundle}"])
    asm = work / "s.s"
    asm.write_text(f'.section .hip_fatbin,"a"\n.balign 4096\n.incbin "{bundle}"\n.text\n.globl anchor\nanchor: ret\n')
    so = work / "libhip.so"
    run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(so), str(asm)])
    return so, bundle


def test_targets_and_features_agree_with_the_bundler_and_readelf(hip_so, tmp_path):
    so, bundle = hip_so
    listed = run([BUNDLER, "-list", "-type=bc", f"-input={bundle}"]).stdout.split()
    expected = {i.removeprefix("hipv4-amdgcn-amd-amdhsa--") for i in listed if i.startswith("hipv4-")}
    (fr,) = inspect(so).files
    assert {t.name for t in fr.native_targets} == expected == set(TARGETS)
    assert {t.vendor for t in fr.native_targets} == {"amd"} and fr.warnings == []
    (img,) = fr.images
    assert (img.kind, img.compressed, img.size) == ("bundle", False, bundle.stat().st_size)
    # readelf on the code object the bundler unbundles: the xnack- entry really is built xnack off.
    co = tmp_path / "gfx90a.co"
    run([BUNDLER, "-unbundle", "-type=bc", f"-input={bundle}", "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", f"-output={co}"])
    assert re.search(r"Flags:\s+0x[0-9a-f]+, gfx90a, xnack off", run(["readelf", "-h", str(co)]).stdout)


@pytest.mark.parametrize(("device", "verdict", "rule"), [
    ("gfx90a:xnack-", "native", "amd-exact"),
    ("gfx90a:xnack-:sramecc+", "native", "amd-exact"),  # the entry leaves sramecc to the device
    ("gfx90a:xnack+", "unsupported", "amd-no-match"),
    ("gfx90a", "unknown", "amd-feature"),  # depends on HSA_XNACK
    ("gfx1030", "native", "amd-exact"),
    ("gfx1031", "unsupported", "amd-no-match"),  # no fallback to a sibling processor
    ("gfx906", "unsupported", "amd-no-match"),
])
def test_hip_code_object_choice(hip_so, device, verdict, rule):
    so, _ = hip_so
    (v,) = check(so, device, policy="ignore")
    assert (v.verdict, v.rule, v.vendor) == (verdict, rule, "amd"), v.reason
    if verdict != "native":
        assert v.remedy.startswith("rebuild the HIP code with --offload-arch=")


def test_other_vendors_devices_get_other_vendor_verdicts(hip_so):
    so, _ = hip_so
    verdicts = check(so, "pvc,sm_90", policy="ignore")
    assert [(v.verdict, v.rule) for v in verdicts] == [("unsupported", "other-vendor")] * 2


def test_generic_processor_rule_by_target_ids():
    """Generic processors (code object v6, LLVM >= 18: no compiler here makes one), by name only."""
    from aotwheel.backends.amd.rules import decide
    from aotwheel.probe import ProbedDevice

    dev = ProbedDevice(name="AMD gfx1101", backend="override", kind="gpu", vendor="amd", catalog="gfx1101")
    assert decide(["gfx11-generic"], [], dev).rule == "amd-generic"
    assert decide(["gfx1100"], [], dev).verdict == "unsupported"
    assert decide(["gfx1100"], ["amdgcnspirv"], dev).verdict == "jit"


def test_cli_device_override_and_bad_target_id(hip_so):
    so, _ = hip_so
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(so), "--device", "gfx90a:xnack-"], capture_output=True, text=True)
    assert proc.returncode == 0 and "native" in proc.stdout, proc.stdout + proc.stderr
    bad = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(so), "--device", "gfx90a:xnack"], capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1, bad.stderr


def test_devlist_takes_amd_target_ids_for_hipcc():
    """gfx names in USE_AOT_DEVLIST are the AMD part of the list (hipcc builds them:
    tests/test_amd_build.py), beside Intel's and NVIDIA's; a misspelt processor gets the nearest."""
    from aotwheel.devlist import resolve
    from aotwheel.errors import DevlistError

    dl = resolve("pvc,sm_90,gfx90a,GFX1030,gfx90a:xnack-,gfx90a")
    assert dl.vendors == ("intel", "nvidia", "amd")
    assert dl.to_dict()["amd"] == {"targets": ["gfx90a", "gfx1030", "gfx90a:xnack-"], "cmake_architectures": "gfx90a;gfx1030;gfx90a:xnack-"}
    assert resolve("pvc").to_dict()["amd"] is None
    with pytest.raises(DevlistError, match=r"'gfx90b' is not a known AMD GPU processor; did you mean gfx90c or gfx90a") as bad:
        resolve("gfx90b")
    assert bad.value.suggestions[:2] == ("gfx90c", "gfx90a")
    with pytest.raises(DevlistError, match=r"'gfx90a:xnak-' has a feature AMD target ids lack; write gfx90a or gfx90a:xnack-"):
        resolve("gfx90a:xnak-")


def test_devlist_takes_feature_settings_where_plus_ends_a_feature():
    """gfx942:sramecc+:xnack- (ROCm's target-id syntax, PYTORCH_ROCM_ARCH's too): '+' ends a
    feature setting, in LLVM's order; between names it is another tool's separator, and says so."""
    from aotwheel.devlist import resolve
    from aotwheel.errors import DevlistError

    dl = resolve("gfx90a:xnack+,gfx942:xnack-:sramecc+,pvc")
    assert dl.to_dict()["amd"]["targets"] == ["gfx90a:xnack+", "gfx942:sramecc+:xnack-"]
    with pytest.raises(DevlistError, match=r"character '\+' in 'gfx90a\+gfx1030' is not allowed; separate device names with commas: gfx90a,gfx1030$"):
        resolve("gfx90a+gfx1030")
    for bad in ("gfx90a:xnack++", "gfx90a:+", "pvc+"):
        with pytest.raises(DevlistError, match=r"character '\+' in '.*' is not allowed"):
            resolve(bad)
    with pytest.raises(DevlistError, match=r"'pvc:acm-g10:dg2' is not a range"):
        resolve("pvc:acm-g10:dg2")

