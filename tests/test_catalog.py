"""The device catalog against two independent sources: docs/formats.md §2 (typed in by hand below)
and the installed ocloc's own `ocloc ids` answers."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from aotwheel.backends.intel.catalog import format_ip, ip_from_u32, ip_to_u32, load_catalog

# docs/formats.md §2, one row per IP: every name on a row must resolve to one target with that IP.
REFERENCE_TABLE = {
    "12.0.0": ["tgllp", "tgl"],
    "12.1.0": ["rkl"],
    "12.2.0": ["adl-s", "rpl-s"],
    "12.3.0": ["adl-p", "rpl-p"],
    "12.4.0": ["adl-n"],
    "12.10.0": ["dg1"],
    "12.55.8": ["acm-g10", "dg2-g10", "ats-m150"],
    "12.56.5": ["acm-g11", "dg2-g11", "ats-m75"],
    "12.57.0": ["acm-g12", "dg2-g12"],
    "12.60.1": ["pvc-sdv"],
    "12.60.7": ["pvc"],
    "12.61.7": ["pvc-vg"],
    "12.70.4": ["mtl-u", "mtl-s", "mtl-m", "arl-u", "arl-s"],
    "12.71.4": ["mtl-h", "mtl-p"],
    "12.74.4": ["arl-h"],
    "20.1.0": ["bmg-g21"],
    "20.2.0": ["bmg-g31"],
    "20.4.4": ["lnl-m"],
    "30.0.4": ["ptl-h"],
    "30.1.0": ["ptl-u"],
    "35.11.0": ["cri"],
}


@pytest.mark.parametrize("ip,names", sorted(REFERENCE_TABLE.items()))
def test_reference_row_is_one_target(ip: str, names: list[str]) -> None:
    cat = load_catalog()
    devices = {cat.by_name(n) for n in names}
    assert None not in devices, f"unknown name in {names}"
    assert len(devices) == 1, f"{names} must share one target"
    (dev,) = devices
    assert dev.ip == ip
    assert cat.by_ip(ip) is dev


def test_one_canonical_name_per_ip_and_unique_words() -> None:
    cat = load_catalog()
    ips = [d.ip for d in cat.devices]
    assert len(ips) == len(set(ips))
    words: list[str] = []
    for d in cat.devices:
        words += [d.name, *d.aliases, d.sycl_arch]
    words += [w for g in cat.groups for w in (g.name, *g.aliases)]
    assert len(words) == len(set(words)), "a word names two things"


def test_generic_names_from_reference() -> None:
    # docs/formats.md §2: generic names kept by name inside fat binaries: dg2, mtl, bmg, ptl.
    cat = load_catalog()
    assert cat.by_name("acm-g10").generic == "dg2"
    assert cat.by_name("mtl-h").generic == "mtl"
    assert cat.by_name("bmg-g21").generic == "bmg"
    assert cat.by_name("ptl-u").generic == "ptl"
    assert cat.by_name("pvc").generic is None


def test_sycl_arch_names() -> None:
    cat = load_catalog()
    for spelled, name in [("intel_gpu_pvc", "pvc"), ("intel_gpu_acm_g10", "acm-g10"), ("intel_gpu_bmg_g21", "bmg-g21"), ("intel_gpu_lnl_m", "lnl-m")]:
        assert cat.by_name(spelled).name == name


def test_ip_u32_matches_reference_example() -> None:
    # docs/formats.md §2: pvc 12.60.7 = 0x030f0007.
    assert ip_to_u32((12, 60, 7)) == 0x030F0007
    assert format_ip(ip_from_u32(0x030F0007)) == "12.60.7"
    assert load_catalog().by_ip(0x030F0007).name == "pvc"


def test_groups_hold_shipping_products_only() -> None:
    cat = load_catalog()
    for g in cat.groups:
        assert g.members, g.name
        assert all(m.shipping for m in g.members), g.name
    assert [m.name for m in cat.group("xe-hpc").members] == ["pvc"]  # not the 12.60.x steppings
    assert {m.name for m in cat.group("xe-hpg").members} == {"acm-g10", "acm-g11", "acm-g12"}
    # Generic names are not groups: each names its root product (compute-runtime genericIdAcronyms).
    assert cat.group("dg2") is None and cat.by_name("dg2").name == "acm-g10" and cat.by_name("bmg").name == "bmg-g21"


@pytest.mark.skipif(shutil.which("ocloc") is None, reason="ocloc not installed (apt-get install intel-opencl-icd)")
def test_catalog_agrees_with_ocloc_ids() -> None:
    """Every name the installed ocloc knows maps to the IP ocloc itself reports."""
    from aotwheel.backends.intel.ocloc import find_ocloc

    ocloc = find_ocloc()
    checked = 0
    for dev in load_catalog().devices:
        for name in (dev.name, *dev.aliases):
            if name not in ocloc.acronyms:
                continue
            out = subprocess.run(["ocloc", "ids", name], capture_output=True, text=True, check=True).stdout
            assert out.split(":")[-1].split() == [dev.ip], (name, out)
            checked += 1
    assert checked >= 15  # Debian's 22.43 knows tgllp..pvc and the acm/dg2/ats names


@pytest.mark.skipif(shutil.which("ocloc") is None, reason="ocloc not installed (apt-get install intel-opencl-icd)")
def test_release_group_is_shipping_subset_of_ocloc_family() -> None:
    """`ocloc ids xe-hpc` lists pre-production steppings; our group keeps only the products."""
    out = subprocess.run(["ocloc", "ids", "xe-hpc"], capture_output=True, text=True, check=True).stdout
    ocloc_ips = set(out.split(":")[-1].split())
    ours = {m.ip for m in load_catalog().group("xe-hpc").members}
    assert ours < ocloc_ips and "12.60.1" in ocloc_ips - ours
