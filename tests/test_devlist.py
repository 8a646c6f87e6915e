"""USE_AOT_DEVLIST grammar, table-driven. Expected targets are written from docs/formats.md §2."""

from __future__ import annotations

import pytest

from aotwheel.backends.intel.catalog import load_catalog
from aotwheel.backends.intel.devlist import IntelPart
from aotwheel.backends.nvidia.devlist import NvidiaPart
from aotwheel.devlist import DEFAULT_DEVLIST, MAX_LENGTH, env_flag, resolve
from aotwheel.errors import DevlistError

OK_CASES = [
    # (input, expected canonical names in order, jit_fallback)
    ("pvc", ["pvc"], True),
    ("PVC", ["pvc"], True),
    ("PVC, ats-m150,dg2-g10", ["pvc", "acm-g10"], True),
    ("ats-m150,pvc", ["acm-g10", "pvc"], True),
    ("acm-g10 dg2-g10 ats-m150", ["acm-g10"], True),
    ("pvc,,pvc, ,pvc", ["pvc"], True),
    ("  pvc\tacm-g11\n", ["pvc", "acm-g11"], True),
    ("ats-m75", ["acm-g11"], True),
    ("dg2-g11", ["acm-g11"], True),
    ("dg2-g12", ["acm-g12"], True),
    ("tgl", ["tgllp"], True),
    ("tgllp,rkl,adl-s,adl-p,adl-n,dg1", ["tgllp", "rkl", "adl-s", "adl-p", "adl-n", "dg1"], True),
    ("rpl-s,rpl-p", ["adl-s", "adl-p"], True),
    ("pvc-sdv", ["pvc-sdv"], True),
    ("pvc-vg", ["pvc-vg"], True),
    ("mtl-u,mtl-s,mtl-m,arl-u,arl-s", ["mtl-u"], True),
    ("mtl-p,mtl-h", ["mtl-h"], True),
    ("arl-h", ["arl-h"], True),
    ("bmg-g21,bmg-g31", ["bmg-g21", "bmg-g31"], True),
    ("lnl-m,ptl-h,ptl-u,cri", ["lnl-m", "ptl-h", "ptl-u", "cri"], True),
    ("12.60.7", ["pvc"], True),
    ("12.55.8,acm-g10", ["acm-g10"], True),
    ("20.1.0", ["bmg-g21"], True),
    ("intel_gpu_pvc,intel_gpu_acm_g10", ["pvc", "acm-g10"], True),
    ("INTEL_GPU_BMG_G21", ["bmg-g21"], True),
    # Generic names mean what ocloc builds for them: the group's root product (compute-runtime's
    # AOT::genericIdAcronyms; `ocloc ids bmg` = 20.1.0 only), which the driver runs on the group.
    ("dg2", ["acm-g10"], True),
    ("xe-hpg", ["acm-g10", "acm-g11", "acm-g12"], True),
    ("xe-hpc", ["pvc"], True),
    ("xe-hpg", ["acm-g10", "acm-g11", "acm-g12"], True),
    ("gen12lp", ["tgllp", "rkl", "adl-s", "adl-p", "adl-n", "dg1"], True),
    ("bmg", ["bmg-g21"], True),
    ("xe2-hpg", ["bmg-g21", "bmg-g31"], True),
    ("mtl", ["mtl-u"], True),
    ("xe-lpg", ["mtl-u", "mtl-h"], True),
    ("arl", ["mtl-u", "arl-h"], True),
    ("ptl,lnl", ["ptl-h", "lnl-m"], True),
    ("xe3", ["ptl-h", "ptl-u", "wcl", "nvl-s", "nvl-h"], True),  # ocloc 26.27's xe3 products
    ("xe3p", ["nvl-p", "cri"], True),
    ("acm-g11,xe-hpg", ["acm-g11", "acm-g10", "acm-g12"], True),  # first mention wins
    ("dg1:acm-g10", ["dg1", "acm-g10"], True),  # ocloc's range notation (shipping products between, by IP)
    ("0x0bd5", ["pvc"], True),  # a PCI device id
    ("50495488", ["dg1"], True),  # ocloc's decimal IP version (12.10.0)
    # torch-xpu-ops' Linux default list (docs/formats.md §1)
    ("pvc,bmg,dg2,arl-h,mtl-h,lnl-m,ptl-h,ptl-u", ["pvc", "bmg-g21", "acm-g10", "arl-h", "mtl-h", "lnl-m", "ptl-h", "ptl-u"], True),
    ("none", [], True),
    ("NONE", [], True),
    ("pvc,no-jit", ["pvc"], False),
    ("no-jit pvc", ["pvc"], False),
    (DEFAULT_DEVLIST, ["pvc", "acm-g10"], True),
]


@pytest.mark.parametrize("text,names,jit", OK_CASES)
def test_resolves(text: str, names: list[str], jit: bool) -> None:
    dl = resolve(text)
    intel = dl.part_of(IntelPart)
    assert [t.name for t in intel.targets] == names
    assert dl.jit_fallback is jit
    # ocloc -device gets one word per planned image (tests/test_coverage.py): the names, or where
    # the installed ocloc knows generic names and one image serves several devices, a generic name
    # (bmg builds bmg-g21) in place of the devices it serves.
    roots = dict(load_catalog().generic)
    words = intel.ocloc_device.split(",") if intel.ocloc_device else []
    assert len(words) <= len(names) and {roots.get(w, w) for w in words} <= set(names) | set(roots.values()), intel.ocloc_device
    if not set(words) & set(roots):
        assert words == names


ERROR_CASES = [
    # (input, a fragment the one-line message must contain, expected suggestion or None)
    ("pcv", "'pcv'", "pvc"),
    ("pvc;rm -rf /", "';'", "pvc"),
    ("$(id)", "'$'", None),
    ("pvc,`id`", "'`'", None),
    ("'pvc'", "\"'\"", None),
    ('"pvc"', "'\"'", None),
    ("ats m150", "'ats'", "ats-m150"),
    ("acm-g100", "'acm-g100'", "acm-g10"),
    ("dg-2", "'dg-2'", "dg2"),
    ("bmgg21", "'bmgg21'", "bmg-g21"),
    ("рvс", "U+0440", "pvc"),  # Cyrillic look-alikes
    ("pvc\x00", "U+0000", None),
    ("", "empty", None),
    (" , ,", "empty", None),
    ("none,pvc", "'none'", None),
    ("none,no-jit", "no device code", None),
    ("12.60.2", "12.60.2", None),  # no product config of compute-runtime's AOT tables (12.60.3 is one: below)
    ("99.1.0", "99.1.0", None),
    ("-pvc", "'-pvc'", None),
    ("pvc" + ",pvc" * 300, "tokens", None),
    ("x" * (MAX_LENGTH + 1), "too long", None),
]


@pytest.mark.parametrize("text,fragment,suggestion", ERROR_CASES)
def test_rejects_with_one_line(text: str, fragment: str, suggestion: str | None) -> None:
    with pytest.raises(DevlistError) as info:
        resolve(text)
    message = str(info.value)
    assert "\n" not in message
    assert fragment in message
    if suggestion is not None:
        assert f"did you mean {suggestion}" in message
        assert suggestion in info.value.suggestions


@pytest.mark.parametrize("ip, product", [("20.1.4", "bmg-g21"), ("20.1.1", "bmg-g21"), ("12.60.3", "pvc"), ("12.55.4", "acm-g10")])
def test_a_stepping_ip_resolves_as_its_own_target(ip: str, product: str) -> None:
    # compute-runtime's AOT tables (platforms.h) name these steppings: BMG_G21_B0_RESERVED = 20.1.4
    # (what icpx's intel_gpu_bmg_g21 means), BMG_G21_A1_RESERVED = 20.1.1, PVC_XT_A0 = 12.60.3,
    # DG2_G10_B0 = 12.55.4. The driver matches images against the exact IP, so each stays itself.
    (t,) = resolve(ip).part_of(IntelPart).targets
    assert (t.name, t.ip, t.shipping) == (ip, ip, False)
    assert product in t.description
    assert resolve(ip).part_of(IntelPart).ocloc_device == ip
    # icpx's numeric arch spelling names the same target (-fsycl-targets=intel_gpu_20_1_4)
    assert [(t.name, t.ip) for t in resolve("intel_gpu_" + ip.replace(".", "_")).part_of(IntelPart).targets] == [(ip, ip)]


def test_sycl_targets_follow_fallback() -> None:
    assert resolve("pvc").sycl_targets == "spir64_gen,spir64"
    assert resolve("pvc", jit_fallback=False).sycl_targets == "spir64_gen"
    assert resolve("none").sycl_targets == "spir64"
    assert resolve("none").part_of(IntelPart).ocloc_device == ""


def test_family_expansion_is_reported() -> None:
    dl = resolve("xe-hpg,pvc,dg2")
    assert [(e.token, e.kind, e.names) for e in dl.expansions] == [
        ("xe-hpg", "group", ("acm-g10", "acm-g11", "acm-g12")),
        ("pvc", "device", ("pvc",)),
        ("dg2", "generic", ("acm-g10",)),
    ]


def test_native_uses_detected_devices() -> None:
    assert [t.name for t in resolve("native", detect=lambda: ["12.60.7", "12.60.7"]).part_of(IntelPart).targets] == ["pvc"]
    with pytest.raises(DevlistError, match="found no Intel or NVIDIA GPU"):
        resolve("native", detect=lambda: [])
    with pytest.raises(DevlistError, match="unknown to the catalog: 1.2.3"):
        resolve("native", detect=lambda: ["1.2.3"])


def test_native_includes_nvidia_gpus() -> None:
    dl = resolve("native", detect=lambda: ["sm_90", "12.55.8"])
    assert [t.name for t in dl.part_of(IntelPart).targets] == ["acm-g10"]
    cuda = dl.part_of(NvidiaPart).cuda
    assert cuda is not None and cuda.names == ("sm_90",)


# Mixed vendors: (input, Intel names, NVIDIA images, -fsycl-targets). NVIDIA rules from docs/formats.md §5.
# JIT fallback is per vendor: a list naming no Intel device keeps no spir64 (SPIR-V) image.
MIXED_CASES = [
    ("pvc,ats-m150,sm_90,sm_80", ["pvc", "acm-g10"], ("sm_90", "sm_80"), "spir64_gen,spir64,nvidia_gpu_sm_90,nvidia_gpu_sm_80"),
    ("SM_90,sm_90,nvidia_gpu_sm_90", [], ("sm_90",), "nvidia_gpu_sm_90"),
    ("sm_80,ptx", [], ("sm_80", "compute_80"), "nvidia_gpu_sm_80"),
    ("sm_80,sm_90a,ptx", [], ("sm_80", "sm_90a", "compute_90"), "nvidia_gpu_sm_80,nvidia_gpu_sm_90a"),
    ("compute_90", [], ("compute_90",), "spir64"),
    ("pvc,sm_90,no-jit", ["pvc"], ("sm_90",), "spir64_gen,nvidia_gpu_sm_90"),
]


@pytest.mark.parametrize("text,intel,nvidia,sycl", MIXED_CASES)
def test_mixed_vendor_lists(text: str, intel: list[str], nvidia: tuple[str, ...], sycl: str) -> None:
    dl = resolve(text)
    assert [t.name for t in dl.part_of(IntelPart).targets] == intel
    cuda = dl.part_of(NvidiaPart).cuda
    assert cuda is not None and cuda.names == nvidia
    assert dl.sycl_targets == sycl
    assert dl.part_of(IntelPart).ocloc_device == ",".join(intel)


@pytest.mark.parametrize("text,jit,spirv,vendors,summary", [
    ("sm_80,sm_90", True, False, ("nvidia",), "none (no Intel device listed; add 'ptx' to keep NVIDIA PTX)"),
    ("sm_80,sm_90", False, False, ("nvidia",), "off (devices not listed are unsupported)"),
    ("pvc,sm_90,ptx", True, True, ("intel", "nvidia"), "SPIR-V for Intel devices and PTX compute_90 for NVIDIA GPUs"),
    ("sm_100f,sm_120f,ptx", True, False, ("nvidia",), "PTX compute_120 for NVIDIA GPUs"),
    ("pvc", False, False, ("intel",), "off (devices not listed are unsupported)"),
    ("none", True, True, ("intel",), "SPIR-V for Intel devices"),
])
def test_jit_fallback_is_per_vendor(text: str, jit: bool, spirv: bool, vendors: tuple[str, ...], summary: str) -> None:
    """SPIR-V only where the list names Intel devices (or nothing: 'none'); NVIDIA's JIT form is PTX, kept with 'ptx'."""
    dl = resolve(text, jit_fallback=jit)
    assert (dl.part_of(IntelPart).spirv, dl.vendors, dl.jit_summary) == (spirv, vendors, summary)
    d = dl.to_dict()
    assert (d["spirv"], tuple(d["vendors"]), d["jit_summary"]) == (spirv, vendors, summary)


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("sm90", "did you mean sm_90?"),
        ("none,sm_90", "'none'"),
        ("sm_90,compute_80,no-jit", "JIT fallback is off"),
        ("ptx", "none is listed"),
        ("sm_91", "sm_90"),
    ],
)
def test_nvidia_errors(text: str, fragment: str) -> None:
    with pytest.raises(DevlistError) as info:
        resolve(text)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_json_contract_keys() -> None:
    d = resolve("ats-m150").to_dict()
    assert d["targets"][0]["name"] == "acm-g10"
    assert d["targets"][0]["ip"] == "12.55.8"
    assert set(d["targets"][0]["aliases"]) == {"dg2-g10", "ats-m150"}
    assert d["jit_fallback"] is True and d["ocloc_device"] == "acm-g10" and d["sycl_targets"] == "spir64_gen,spir64"


@pytest.mark.parametrize("value,expected", [("ON", True), ("off", False), ("0", False), ("yes", True), (None, True), ("", True)])
def test_env_flag(value: str | None, expected: bool) -> None:
    assert env_flag(value) is expected


def test_env_flag_rejects_garbage() -> None:
    with pytest.raises(DevlistError, match="USE_AOT_JIT_FALLBACK"):
        env_flag("maybe")


def test_non_string_input() -> None:
    with pytest.raises(DevlistError, match="must be a string"):
        resolve(["pvc"])  # type: ignore[arg-type]


def test_default_devlist_is_written_once() -> None:
    """The default list lives in the Python resolver only: no copy in pyproject.toml (no
    scikit-build-core cmake.define default), CMake or any other module can drift from it."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    files = [repo / "pyproject.toml", repo / "CMakeLists.txt", *(repo / "cmake").glob("*.cmake"),
             *(repo / "python" / "aotwheel").rglob("*.py")]
    holders = [f.relative_to(repo).as_posix() for f in files if DEFAULT_DEVLIST in f.read_text()]
    assert len(holders) == 1, holders
    assert "USE_AOT_DEVLIST" not in (repo / "pyproject.toml").read_text().split("[tool.scikit-build]")[1]


def test_cmake_reads_the_devlist_variables_in_one_function() -> None:
    """CMake hands USE_AOT_DEVLIST / USE_AOT_JIT_FALLBACK to the resolver from one function and
    never reads their environment variables itself (the resolver does), nor parses a devlist."""
    import re
    from pathlib import Path

    cmake = Path(__file__).resolve().parents[1] / "cmake"
    readers = set()
    for path in cmake.glob("*.cmake"):
        function = None
        for line in path.read_text().splitlines():
            code = line.split("#", 1)[0]
            m = re.match(r"\s*(?:function|macro)\((\w+)", code)
            if m:
                function = m.group(1)
            assert "ENV{USE_AOT_" not in code, f"{path.name}: {line.strip()}"
            if re.search(r"\$\{USE_AOT_(DEVLIST|JIT_FALLBACK)\}|DEFINED USE_AOT_", code):
                readers.add(function)
    assert readers == {"_aotwheel_resolve_args"}


@pytest.mark.parametrize("text,commas", [("acm-g10;acm-g12", "acm-g10,acm-g12"), ("pvc;acm-g10;bmg-g21", "pvc,acm-g10,bmg-g21"),
                                         ("pvc|sm_90", "pvc,sm_90"), ("12.60.7/acm-g11", "12.60.7,acm-g11")])
def test_list_in_another_separator_says_separate_with_commas(text: str, commas: str) -> None:
    """Issue 30 item 8: a ';'-separated list is a list, not a misspelt name ("acm-g10 or acm-g12 or ...")."""
    with pytest.raises(DevlistError) as info:
        resolve(text)
    message = str(info.value)
    assert message.endswith(f"; separate device names with commas: {commas}") and "did you mean" not in message, message
    assert info.value.suggestions == (commas,)
    resolve(commas)  # and the suggestion resolves


def test_other_separator_with_a_non_device_part_keeps_the_name_suggestion() -> None:
    with pytest.raises(DevlistError, match=r"character ';' in 'pvc;rm' is not allowed; did you mean pvc\?"):
        resolve("pvc;rm -rf /")
