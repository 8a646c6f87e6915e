"""The driver's lookup rules on real ocloc fat binaries (members cross-checked with `ar t`) and,
for zebin cases Debian's ocloc cannot emit, on duck-typed targets. Expected verdicts are derived
from compute-runtime's ar decoder and platforms.h as quoted in each test, not from aotwheel."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from _check_util import ACM_G10_MEMBER, PVC_MEMBER, ar_members, fat_binary, single_binary


def _dev(text: str):
    from aotwheel.probe.override import parse

    (dev,) = parse(text)
    return dev


def _decide(path, device: str, **kw):
    from aotwheel.backends.intel.rules import decide
    from aotwheel.inspector import inspect

    (f,) = [f for f in inspect(path).files if f.native_targets or f.ir]
    return decide(f.native_targets, f.ir, _dev(device), binary=str(path), **kw)


@pytest.fixture(scope="module")
def fat_pvc_acm():
    path = fat_binary("pvc,acm-g10")
    assert {PVC_MEMBER, ACM_G10_MEMBER, "generic_ir"} <= set(ar_members(path))
    return path


@pytest.fixture(scope="module")
def fat_pvc_acm_noir():
    path = fat_binary("pvc,acm-g10", ir=False)
    assert "generic_ir" not in ar_members(path)
    return path


@pytest.mark.parametrize("device, member", [("pvc", PVC_MEMBER), ("acm-g10", ACM_G10_MEMBER), ("ats-m150", ACM_G10_MEMBER), ("12.55.8", ACM_G10_MEMBER)])
def test_exact_ip_member_is_native(fat_pvc_acm, device, member):
    v = _decide(fat_pvc_acm, device)
    assert (v.verdict, v.image, v.rule) == ("native", member, "exact-ip")
    assert v.image in ar_members(fat_pvc_acm)


def test_acm_g11_on_pvc_acm_g10_binary_is_jit_from_generic_ir(fat_pvc_acm):
    # acm-g11 (12.56.5): no 64.12.56.5 / 64.12.56 / 64.dg2 member, and the driver's compatibility
    # fallback for "dg2" is empty (getCompatibilityFallbackProductAbbreviations starts from the first
    # acronym "dg2-g10" = DG2_G10_C0, which no compatibilityMapping entry lists), so: generic_ir.
    v = _decide(fat_pvc_acm, "acm-g11")
    assert (v.verdict, v.image, v.rule) == ("jit", "generic_ir", "ir")
    assert "acm-g10" in v.reason and "dg2" in v.reason


def test_acm_g11_without_ir_is_unsupported(fat_pvc_acm_noir):
    v = _decide(fat_pvc_acm_noir, "acm-g11")
    assert (v.verdict, v.image, v.rule) == ("unsupported", None, "no-match")
    assert "Couldn't find matching binary" in v.reason


@pytest.mark.parametrize("device", ["bmg-g21", "bmg-g31"])
def test_bmg_on_pvc_only_binary_without_ir_is_unsupported(device):
    path = single_binary("pvc")
    assert ar_members(path) == [PVC_MEMBER]
    v = _decide(path, device)
    assert (v.verdict, v.rule) == ("unsupported", "no-match")
    assert v.targets == ("pvc",)


def test_pvc_sdv_takes_pvc_legacy_image_by_major_minor_prefix_before_26_18():
    path = fat_binary("pvc,acm-g10", legacy=True)  # skips unless ocloc writes legacy images (22.43)
    # Filter 3 is the prefix "64.12.60", which "64.12.60.7" starts with; a legacy (patch-token)
    # image is only checked for the core family (XE_HPC for both), so the driver accepts it
    # (compute-runtime 26.14 still decodes patch tokens) ...
    v = _decide(path, "pvc-sdv", release=(26, 14))
    assert (v.verdict, v.image, v.rule) == ("native", PVC_MEMBER, "major-minor")
    # ... and from 26.18 on ignores SHT_OPENCL_DEV_BINARY (device_binary_format_ocl_elf.cpp at
    # 6def991ebd): no member serves, generic_ir is rebuilt.
    for device in ("pvc-sdv", "pvc", "acm-g10"):
        v = _decide(path, device, release=(26, 18))
        assert (v.verdict, v.image) == ("jit", "generic_ir"), device
        assert _decide(path, device).verdict == "jit"  # the newest release likewise


def test_pvc_sdv_takes_pvc_zebin_of_ocloc_22_43_by_product_family(fat_pvc_acm):
    # A member without a product-config note (ocloc 22.43's --format zebin) is validated by its
    # product family (zebin_decoder.cpp validateTargetDevice: productFamily == the device's): PVC.
    # With a note (every newer ocloc) the product config must equal pvc-sdv's 12.60.1 instead.
    from aotwheel.inspector import inspect

    (f,) = [f for f in inspect(fat_pvc_acm).files if f.native_targets]
    if any(t.arch for t in f.native_targets):
        pytest.skip("this ocloc's zebins declare their product config; the product-family rule is ocloc 22.43's")
    v = _decide(fat_pvc_acm, "pvc-sdv")
    assert (v.verdict, v.image, v.rule) == ("native", PVC_MEMBER, "major-minor")


def test_cpu_device_is_jit_when_spirv_present_else_unsupported(fat_pvc_acm, fat_pvc_acm_noir):
    assert (_decide(fat_pvc_acm, "cpu").verdict, _decide(fat_pvc_acm, "cpu").rule) == ("jit", "cpu-ir")
    assert _decide(fat_pvc_acm_noir, "cpu").verdict == "unsupported"


# --- zebin cases (duck-typed targets: ocloc 22.43 writes legacy images only) ---------------

def _zebin(ip, member, generic=None, name=None):
    return NS(ip=ip, member=member, name=name, generic=generic, format="zebin", core=None, image=0)


def test_zebin_generic_member_serves_other_products_through_compatibility_mapping():
    from aotwheel.backends.intel.rules import decide

    bmg = [_zebin("20.1.0", "64.bmg", generic="bmg", name="bmg-g21")]  # BMG_G21_A0 image named by generic name
    # bmg-g31: filter 4 "64.bmg" matches; BMG_G21_A0 lists BMG_G31_A0 in compatibilityMapping.
    v = decide(bmg, [], _dev("bmg-g31"))
    assert (v.verdict, v.rule, v.image) == ("native", "name", "64.bmg")
    # lnl-m: its own filters miss; fallback products for "lnl" = ["bmg"] (LNL_B0 is listed under BMG_G21_A0).
    v = decide(bmg, [], _dev("lnl-m"))
    assert (v.verdict, v.rule) == ("native", "compat:bmg")
    # Without compatibility mode the product config must be equal: JIT if IR, else unsupported.
    v = decide(bmg, ["spirv"], _dev("lnl-m"), compatibility=False)
    assert (v.verdict, v.rule) == ("jit", "ir")


def test_zebin_product_config_mismatch_rejects_prefix_match():
    from aotwheel.backends.intel.rules import decide

    dg1 = [_zebin("12.10.0", "64.12.10.0", name="dg1")]
    # rkl (12.1.0): filter "64.12.1" is a prefix of "64.12.10.0", but a zebin's product config
    # (12.10.0) must equal the device's: rejected, so JIT.
    v = decide(dg1, ["spirv"], _dev("rkl"))
    assert (v.verdict, v.rule) == ("jit", "ir") and "64.12.10.0" in v.reason


def test_legacy_prefix_match_is_accepted_on_same_core():
    from aotwheel.backends.intel.rules import decide

    dg1 = [NS(ip="12.10.0", member="64.12.10.0", name="dg1", generic=None, format="legacy", core=None, image=0)]
    v = decide(dg1, [], _dev("rkl"), release=(26, 14))  # both gen12lp: patch-token validation checks the core only
    assert (v.verdict, v.rule) == ("native", "major-minor")
    # compute-runtime 26.18 and newer ignore a legacy image's device binary: nothing serves it.
    assert decide(dg1, [], _dev("rkl"), release=(26, 18)).verdict == decide(dg1, [], _dev("rkl")).verdict == "unsupported"


@pytest.mark.parametrize("product, expected", [("lnl", ["bmg"]), ("dg2", []), ("bmg", []), ("pvc", []), ("ptl", [])])
def test_compatibility_fallbacks_follow_platforms_h(product, expected):
    from aotwheel.backends.intel.rules import compatibility_fallbacks

    assert compatibility_fallbacks(product) == expected


def test_device_without_ip_is_unknown_unless_binary_is_jit_only():
    from aotwheel.backends.intel.rules import decide
    from aotwheel.probe import ProbedDevice

    gpu = ProbedDevice("Some Intel GPU", "sycl", vendor="intel")
    assert decide([_zebin("12.60.7", PVC_MEMBER, name="pvc")], ["spirv"], gpu).verdict == "unknown"
    assert decide([], ["spirv"], gpu).verdict == "jit"
    assert decide([], [], gpu).verdict == "unsupported"


def test_non_intel_gpu_uses_spirv_only():
    from aotwheel.backends.intel.rules import decide
    from aotwheel.probe import ProbedDevice

    other = ProbedDevice("Other GPU", "opencl", vendor="Other Corp", spirv=False)
    v = decide([_zebin("12.60.7", PVC_MEMBER, name="pvc")], ["spirv"], other)
    assert (v.verdict, v.rule) == ("unsupported", "non-intel")


def test_verdict_json_keeps_contract_keys(fat_pvc_acm):
    d = _decide(fat_pvc_acm, "acm-g11").to_dict()
    assert {"device", "ip", "verdict", "image", "reason"} <= set(d)
    assert d["verdict"] in ("native", "jit", "unsupported", "unknown")
