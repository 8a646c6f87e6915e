"""The driver's lookup for Battlemage, Lunar, Panther, Wildcat and Nova Lake and Crescent Island
(issue 27 item 5), on real ocloc 26.27 output committed under tests/data/ocloc-26.27 (members as
ocloc writes them: ``64.<ip>`` for ``-device bmg-g21,lnl-m,ptl-h,pvc``, ``64.bmg`` / ``64.ptl`` /
``64.dg2`` for ``-device bmg,ptl,dg2``; the README there says how they were made).

No Intel GPU is reachable, so devices are test doubles: a ProbedDevice with the IP version and
driver string the runtime would report. Every expected verdict comes from reading compute-runtime
(github.com/intel/compute-runtime, tree e37c60bf2ad4, tags 24.45 … 26.31; docs/formats.md §10
quotes the lines), never from running aotwheel:

- A: ``device_binary_format_ar.cpp`` ``unpackSingleDeviceBinary<archive>`` (l. 47-117): for the
  device's ``HwMapper::abbreviation`` P, the first member starting with ``64.<maj.min.rev>``,
  ``64.<P>.<stepping>``, ``64.<maj.min>``, ``64.<P>``, that validates; then (since 25.44, commit
  4a9b918a856b) the same filters for each product of ``getCompatibilityFallbackProductAbbreviations(P)``;
  then generic_ir, else "Couldn't find matching binary in AR archive".
- B: ``product_config_helper.cpp`` l. 386-422: that function looks P up as the *first*
  ``deviceAcronyms`` key equal to P or starting with ``P-`` (std::map: key order) and returns the
  products whose images ``compatibilityMapping`` lets serve *that acronym's* IP.
- C: abbreviations (``hw_info_*.cpp``, ``product_config_base.inl``): bmg-g21/g31 "bmg", lnl "lnl",
  ptl-h/ptl-u/wcl "ptl" (WCL_A0/A1 use PtlHwConfig), nvl-s/nvl-u(nvl-h) "nvls" (NvlsHwConfig),
  nvl-p "nvlp", cri "cri".
- D: ``platforms.h`` at 26.14 … 26.31: compatibilityMapping {BMG_G21_A0: BMG_G31_A0, LNL_B0},
  {PTL_H_B0: PTL_U_A0, WCL_A1, NVL_S_B0, NVL_U_B0}, keys also BMG_G21_A1/B0_RESERVED (no acronym);
  deviceAcronyms "bmg-g21" 20.1.0 < "bmg-g31"; "ptl-h" 30.0.4 < "ptl-u"; "wcl" WCL_A1 30.3.1;
  no key "nvls…"/"nvlp…"; "cri" CRI_A0 35.11.0. First release tag with each pair: LNL 24.48,
  PTL_U 25.18, BMG_G31 25.27, WCL_A0 25.35 (dropped in 26.05), WCL_A1 and NVL_S 26.05, NVL_U 26.14.
- E: ``zebin_decoder.cpp`` ``validateTargetDevice`` (l. 65-79): a product config equal to the
  device's, or (since 24.45, commit c65b45471b7f) a mapping key that lists the device's IP.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from aotwheel.backends.intel.backend import BACKEND
from aotwheel.inspector import inspect
from aotwheel.probe import ProbedDevice

from _inspect_util import DATA
from conftest import require

OCLOC26 = DATA / "ocloc-26.27"
NEW = {"bmg-g31": "20.2.0", "ptl-u": "30.1.0", "wcl": "30.3.1", "nvl-s": "30.4.4", "nvl-h": "30.5.4",
       "nvl-p": "35.10.4", "cri": "35.11.0"}


def _file(name: str):
    (f,) = inspect(OCLOC26 / name).files
    return f


def _gpu(name: str, ip: str | None = None, driver: str | None = None) -> ProbedDevice:  # test double: no Intel GPU here
    # Level Zero's view: the archive lookup alone (through OpenCL, ocloc 26.27's bindless dg2 images
    # are rebuilt from IR besides: rule opencl-bindless, tests/test_driver_verdicts.py)
    return ProbedDevice(name=f"Intel GPU {name}", backend="levelzero", kind="gpu", vendor="intel", ip=ip or NEW[name], catalog=name, driver=driver)


@pytest.fixture(scope="module")
def by_ip():
    f = _file("bmg-g21+lnl-m+ptl-h+pvc.ar")
    assert [t.member for t in f.native_targets] == ["64.20.1.0", "64.20.4.4", "64.30.0.4", "64.12.60.7"] and f.ir == ["spirv"]
    return f


@pytest.fixture(scope="module")
def by_ip_noir():
    f = _file("bmg-g21+lnl-m+ptl-h+pvc.noir.ar")
    assert len(f.native_targets) == 4 and not f.ir
    return f


@pytest.fixture(scope="module")
def generic():
    f = _file("bmg+ptl+dg2.ar")
    assert [(t.member, t.ip) for t in f.native_targets] == [("64.bmg", "20.1.0"), ("64.ptl", "30.0.4"), ("64.dg2", "12.55.8")]
    return f


@pytest.mark.parametrize("device, why", [
    # A+C: bmg filters 64.20.2.0 / 64.bmg.N / 64.20.2 / 64.bmg match nothing; B: "bmg" -> "bmg-g21"
    # (20.1.0), listed only under the RESERVED keys, which have no acronym: no fallback product.
    ("bmg-g31", "looks bmg up as bmg-g21 (20.1.0)"),
    # ptl filters miss; B: "ptl" -> "ptl-h" (PTL_H_B0), which no mapping entry lists.
    ("ptl-u", "looks ptl up as ptl-h (30.0.4)"),
    ("wcl", "looks ptl up as ptl-h (30.0.4)"),  # C: WCL is IGFX_PTL, abbreviation "ptl"
    # C: "nvls"; filters 64.30.4.4 / 64.nvls… / 64.30.4 miss; B: no acronym "nvls" or "nvls-*".
    ("nvl-s", "no AOT acronym is named nvls"),
    ("nvl-h", "no AOT acronym is named nvls"),
    ("nvl-p", "no AOT acronym is named nvlp"),
    ("cri", "no compatibility fallback for cri"),  # B: "cri" -> CRI_A0, which no entry lists
])
def test_new_devices_on_a_bmg_g21_lnl_m_ptl_h_pvc_build_are_jit(by_ip, by_ip_noir, device, why):
    v = BACKEND.decide(by_ip, _gpu(device), binary="k.ar")
    assert (v.verdict, v.image, v.rule) == ("jit", "generic_ir", "ir"), v.reason
    assert why in v.reason
    v = BACKEND.decide(by_ip_noir, _gpu(device), binary="k.ar")
    assert (v.verdict, v.rule) == ("unsupported", "no-match") and "Couldn't find matching binary" in v.reason


def test_the_mapping_that_would_serve_bmg_g31_is_named(by_ip):
    # D lists BMG_G31_A0 under BMG_G21_A0, but A only validates members its filters found.
    v = BACKEND.decide(by_ip, _gpu("bmg-g31"), binary="k.ar")
    assert "compatibility mapping bmg-g21 -> bmg-g31 applies only to a member the filters for bmg find, such as 64.bmg" in v.reason


@pytest.mark.parametrize("device, ip, member", [("bmg-g21", "20.1.0", "64.20.1.0"), ("lnl-m", "20.4.4", "64.20.4.4"),
                                                ("ptl-h", "30.0.4", "64.30.0.4"), ("pvc", "12.60.7", "64.12.60.7")])
def test_built_devices_take_their_own_member(by_ip, device, ip, member):
    v = BACKEND.decide(by_ip, _gpu(device, ip, driver="24.35.30872.22"), binary="k.ar")  # A: filter 1, E: equal config
    assert (v.verdict, v.image, v.rule) == ("native", member, "exact-ip")


@pytest.mark.parametrize("device, ip, member, since", [
    ("bmg-g21", "20.1.0", "64.bmg", None),        # A filter 4 "64.bmg", E: equal product config
    ("bmg-g31", None, "64.bmg", "25.27"),         # A filter 4, E+D: BMG_G21_A0 -> BMG_G31_A0
    ("ptl-u", None, "64.ptl", "25.18"),           # A filter 4 "64.ptl", D: PTL_H_B0 -> PTL_U_A0
    ("wcl", None, "64.ptl", "26.05"),             # D: PTL_H_B0 -> WCL_A1
    ("acm-g11", "12.56.5", "64.dg2", "24.45"),    # D: DG2_G10_C0 -> DG2_G11_B1, mapping read since 24.45
])
def test_generic_members_serve_through_the_mapping(generic, device, ip, member, since):
    v = BACKEND.decide(generic, _gpu(device, ip), binary="k.ar")
    assert (v.verdict, v.image, v.rule) == ("native", member, "name"), v.reason
    if since:  # driver unknown: the first release that runs it native, and what older ones do
        assert f"needs compute-runtime {since} or newer" in v.reason and "with an older or unknown driver: jit" in v.reason


def test_lnl_takes_the_bmg_member_by_the_fallback_since_25_44(generic):
    # Own filters miss (64.20.4.4, 64.lnl…, 64.20.4); B: "lnl" -> "lnl-m" LNL_B0, listed under
    # BMG_G21_A0 -> ["bmg"]; 64.bmg validates (E+D, since 24.48); the pass itself since 25.44.
    v = BACKEND.decide(generic, _gpu("lnl-m", "20.4.4"), binary="k.ar")
    assert (v.verdict, v.image, v.rule) == ("native", "64.bmg", "compat:bmg")
    assert "needs compute-runtime 25.44 or newer" in v.reason


@pytest.mark.parametrize("device", ["nvl-s", "nvl-h", "nvl-p", "cri"])
def test_generic_ptl_member_does_not_serve_nova_lake_or_crescent_island(generic, device):
    # C: P is nvls / nvlp / cri, so filter 4 looks for 64.nvls / 64.nvlp / 64.cri, never 64.ptl; B:
    # no fallback product. D's PTL_H_B0 -> NVL_S_B0 / NVL_U_B0 is never consulted.
    v = BACKEND.decide(generic, _gpu(device), binary="k.ar")
    assert (v.verdict, v.image, v.rule) == ("jit", "generic_ir", "ir"), v.reason


@pytest.mark.parametrize("device, driver, verdict", [
    ("bmg-g31", "25.22.33944.13", "jit"), ("bmg-g31", "25.27.34303.5", "native"),   # D: BMG_G31 pair from 25.27
    ("ptl-u", "25.13.33276.22", "jit"), ("ptl-u", "25.18.33578.5", "native"),       # PTL_U pair from 25.18
    ("wcl", "26.01.36711.4", "jit"), ("wcl", "26.05.37020.3", "native"),            # WCL_A1 pair from 26.05
    ("lnl-m", "25.40.35563.10", "jit"), ("lnl-m", "25.44.36015.5", "native"),       # A: fallback pass from 25.44
])
def test_generic_members_follow_the_driver_release(generic, device, driver, verdict):
    v = BACKEND.decide(generic, _gpu(device, "20.4.4" if device == "lnl-m" else None, driver=driver), binary="k.ar")
    assert v.verdict == verdict, v.reason
    assert driver in v.reason


def test_wcl_a0_was_served_only_while_the_mapping_listed_it(generic):
    # D: PTL_H_B0 -> WCL_A0 (30.3.0) from 25.35 until 26.05 replaced it by WCL_A1.
    assert BACKEND.decide(generic, _gpu("wcl", "30.3.0", driver="25.40.35563.4"), binary="k.ar").verdict == "native"
    assert BACKEND.decide(generic, _gpu("wcl", "30.3.0", driver="26.05.37020.3"), binary="k.ar").verdict == "jit"
    assert BACKEND.decide(generic, _gpu("wcl", "30.3.0"), binary="k.ar").verdict == "jit"


@pytest.mark.parametrize("device, driver, verdict", [
    ("ptl-u", None, "native"), ("wcl", None, "native"),
    ("nvl-s", None, "native"), ("nvl-s", "26.01.36711.4", "jit"), ("nvl-s", "26.05.37020.3", "native"),
    ("nvl-h", None, "native"), ("nvl-h", "26.09.37435.12", "jit"), ("nvl-h", "26.14.37833.4", "native"),
    ("nvl-p", None, "jit"), ("cri", None, "jit"), ("bmg-g31", None, "jit"),
])
def test_single_device_ptl_h_binary_serves_what_the_mapping_lists(device, driver, verdict):
    # A plain zebin (no archive) is validated directly (E): PTL_H_B0 serves PTL_U_A0, WCL_A1,
    # NVL_S_B0 (26.05+) and NVL_U_B0 (26.14+). ocloc kept the SPIR-V in its .spv section (no
    # -exclude_ir; readelf below, not aotwheel, says so), and unpackSingleZebin rebuilds an image
    # that does not validate from it (device_binary_format_zebin.cpp): a miss is JIT.
    f = _file("ptl-h.bin")
    assert [t.ip for t in f.native_targets] == ["30.0.4"] and not f.ir
    require("readelf")
    sections = subprocess.run(["readelf", "-S", "-W", str(OCLOC26 / "ptl-h.bin")], capture_output=True, text=True, check=True).stdout
    assert re.search(r"\] \.spv +", sections), sections
    v = BACKEND.decide(f, _gpu(device, driver=driver), binary="ptl-h.bin")
    assert v.verdict == verdict, v.reason
    assert v.rule == ("single-binary" if verdict == "native" else "own-ir")


@pytest.mark.parametrize("product, release, expected", [
    ("lnl", None, ["bmg"]), ("lnl", (25, 40), []), ("bmg", None, []), ("ptl", None, []), ("nvls", None, []),
    ("nvlp", None, []), ("cri", None, []), ("dg2", None, []),
    # B walks deviceAcronyms in key order: "mtl" -> "mtl-h" (MTL_H_B0), listed under MTL_U_B0,
    # whose first acronym in key order is "arl-s": the function returns "arl", not "mtl".
    ("mtl", None, ["arl"]),
])
def test_compatibility_fallbacks_follow_product_config_helper(product, release, expected):
    from aotwheel.backends.intel.rules import compatibility_fallbacks

    assert compatibility_fallbacks(product, release) == expected


def test_check_names_the_rule_for_catalog_devices(fresh):
    import warnings

    import aotwheel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdicts = aotwheel.check(str(OCLOC26 / "bmg-g21+lnl-m+ptl-h+pvc.ar"), devices="bmg-g31,ptl-u,lnl-m")
    assert [(v.device, v.verdict) for v in verdicts] == [("bmg-g31", "jit"), ("ptl-u", "jit"), ("lnl-m", "native")]
    assert "looks bmg up as bmg-g21" in verdicts[0].reason and "looks ptl up as ptl-h" in verdicts[1].reason
