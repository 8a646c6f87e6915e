"""The coverage planner (aotwheel.backends.intel.coverage) against the driver's rules.

Each plan is judged here from its images alone: its archive (the members it names) is handed to
:func:`aotwheel.backends.intel.rules.decide`, the rules ``aotwheel check`` words its verdicts with,
at the floor and at every later release the rules model; tests/test_coverage_driver.py runs the
same archives on the real driver (simulation mode).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import pytest

from aotwheel.backends.intel import coverage, rules
from aotwheel.backends.intel.catalog import load_catalog
from aotwheel.errors import SettingError

CAT = load_catalog()
GENERIC = dict(CAT.generic)  # what a current ocloc (25.18+) knows: dg2, mtl, bmg, ptl
XE2 = ["bmg-g21", "bmg-g31", "lnl-m"]
XE3 = ["ptl-h", "ptl-u", "wcl"]


def devs(names: list[str]) -> list[tuple[str, str]]:
    return [(n, CAT.by_name(n).ip) for n in names]


@dataclass(frozen=True)
class Member:
    member: str
    ip: str
    name: str
    generic: str | None = None
    format: str = "zebin"


@dataclass(frozen=True)
class Gpu:
    name: str
    ip: str
    catalog: str
    kind: str = "gpu"
    vendor: str = "intel"


def native_set(members: list[Member], release: rules.Release) -> set[str]:
    """The catalog devices the driver of ``release`` runs natively from an archive of ``members``."""
    return set(_native_set(tuple(members), release))


@functools.cache
def _native_set(members: tuple[Member, ...], release: rules.Release) -> frozenset[str]:
    return frozenset(d.name for d in CAT.devices
                     if rules.decide(list(members), ["spirv"], Gpu(d.name, d.ip, d.name), release=release).verdict == "native")


def archive(plan: coverage.Coverage) -> list[Member]:
    return [Member(i.member, i.ip, i.device, i.token if i.generic else None) for i in plan.images]


def one_per_device(names: list[str]) -> list[Member]:
    return [Member(f"64.{CAT.by_name(n).ip}", CAT.by_name(n).ip, n) for n in names]


def later(floor: rules.Release) -> list[rules.Release]:
    return [floor, *(r for r in coverage.CHANGES if r > floor)]


@pytest.mark.parametrize("names, images", [(XE2, 1), (XE3, 1), (XE2 + XE3, 2)])
def test_client_lists_from_26_05(names: list[str], images: int) -> None:
    """The issue's three lists at 26.05 (the release that serves wcl): 1, 1 and 2 images, every
    listed device native at 26.05 and every later modelled release."""
    plan = coverage.plan(devs(names), floor=(26, 5), generic=GENERIC)
    assert len(plan.images) == images, plan.lines()
    assert all(i.generic for i in plan.images), plan.lines()
    for release in later((26, 5)):
        assert set(names) <= native_set(archive(plan), release), (release, plan.lines())


@pytest.mark.parametrize("names", [XE2, XE3, XE2 + XE3])
@pytest.mark.parametrize("floor", [(24, 1), (24, 26)])
def test_an_older_floor_gives_one_image_per_device(names: list[str], floor: rules.Release) -> None:
    """Before 24.45 the driver validates a zebin against its own product only: one image per device,
    members named by IP as ever."""
    plan = coverage.plan(devs(names), floor=floor, generic=GENERIC)
    assert [i.member for i in plan.images] == [m.member for m in one_per_device(names)]


@pytest.mark.parametrize("names", [XE2, XE3, XE2 + XE3, ["acm-g10", "acm-g11", "acm-g12"]])
def test_no_generic_names_gives_one_image_per_device(names: list[str]) -> None:
    """An ocloc that knows no generic name (Debian 12's 22.43): one image per device at any floor."""
    for floor in (None, (26, 5), (30, 1)):
        plan = coverage.plan(devs(names), floor=floor, generic={})
        assert [i.member for i in plan.images] == [m.member for m in one_per_device(names)]
        assert [i.token for i in plan.images] == names


def test_default_floor_is_the_release_that_first_runs_every_listed_device() -> None:
    """Default: bmg-g31 and wcl are first run by 25.27, so the Xe2+Xe3 list keeps lnl-m and wcl their
    own images (the mappings that serve them from bmg-g21's and ptl-h's come later)."""
    plan = coverage.plan(devs(XE2 + XE3), generic=GENERIC)
    assert plan.floor == (25, 27) and not plan.stated
    assert sorted(i.member for i in plan.images) == ["64.20.4.4", "64.30.3.1", "64.bmg", "64.ptl"]
    assert coverage.plan(devs(["pvc", "acm-g10"]), generic=GENERIC).floor == coverage.OLDEST


def test_a_generic_name_in_the_list_asks_for_the_shared_image() -> None:
    """``bmg`` in the list is the shared image 64.bmg even where it saves nothing; ``bmg-g21`` keeps its IP member."""
    bmg = coverage.plan(devs(["bmg-g21"]), floor=(26, 5), generic=GENERIC, named_generic=["bmg"])
    assert [i.member for i in bmg.images] == ["64.bmg"]
    assert {s.device for s in bmg.served} >= {"bmg-g21", "bmg-g31", "lnl-m"}
    assert [i.member for i in coverage.plan(devs(["bmg-g21"]), floor=(26, 5), generic=GENERIC).images] == ["64.20.1.0"]


def _lists() -> list[list[str]]:
    """Every non-empty subset of each group of products the rules let share, and each pair of
    subsets across Xe2 and Xe3 client, plus pvc beside them: the lists where sharing can happen."""
    groups = [["acm-g10", "acm-g11", "acm-g12"], ["mtl-u", "mtl-h", "arl-h"], XE2, [*XE3, "nvl-s", "nvl-h"]]
    subsets = [list(c) for g in groups for k in range(1, len(g) + 1) for c in itertools.combinations(g, k)]
    xe2 = [list(c) for k in range(1, 4) for c in itertools.combinations(XE2, k)]
    xe3 = [list(c) for k in range(1, 4) for c in itertools.combinations(XE3, k)]
    return subsets + [a + b for a in xe2 for b in xe3] + [["pvc", *s] for s in subsets[:8]]


def test_never_less_native_coverage_than_one_image_per_device() -> None:
    """For every list above and every floor the rules model: at the floor and every later release,
    every listed device is native, no catalog device native with one image per device loses it,
    and the plan has no more images than devices (a later floor never needs more)."""
    floors = [coverage.OLDEST, *coverage.CHANGES]
    for names in _lists():
        counts = []
        for floor in floors:
            plan = coverage.plan(devs(names), floor=floor, generic=GENERIC)
            counts.append(len(plan.images))
            for release in later(floor):
                have = native_set(archive(plan), release)
                assert set(names) <= have, (names, floor, release, plan.lines())
                assert native_set(one_per_device(names), release) <= have, (names, floor, release, plan.lines())
        assert counts == sorted(counts, reverse=True) and counts[0] == len(names), (names, counts)


def test_resolve_lines_say_which_image_serves_which_device_from_which_release() -> None:
    plan = coverage.plan(devs(XE2), floor=(25, 27), generic=GENERIC)
    text = "\n".join(plan.lines())
    assert "64.bmg  " in text and "ocloc -device bmg = bmg-g21: bmg-g21, bmg-g31" in text, text
    assert "64.20.4.4" in text and "lnl-m" in text, text
    later_plan = coverage.plan(devs(["bmg-g21", "bmg-g31"]), floor=(25, 27), generic=GENERIC)
    assert "also lnl-m (from 25.44)" in "\n".join(later_plan.lines()), later_plan.lines()


@pytest.mark.parametrize("text", ["26", "2x.05", "26.60", "26.05;rm", " "])
def test_bad_floor_is_one_setting_error(text: str) -> None:
    if not text.strip():
        assert coverage.parse_release(text) is None
        return
    with pytest.raises(SettingError, match=r"USE_AOT_MIN_DRIVER=.* \(e.g. 26.05\)"):
        coverage.parse_release(text)


def test_release_spellings() -> None:
    assert coverage.parse_release("26.05") == (26, 5)
    assert coverage.parse_release("25.44.36015.5") == (25, 44)
    assert coverage.parse_release("auto") is None


def test_the_installed_ocloc_decides_whether_images_are_shared(tmp_path) -> None:
    """With the real ocloc: acm-g10/g11/g12 at 26.05 are one image, `64.dg2`, where the installed
    ocloc knows the generic name dg2 (25.18+: the sid lane), and one image per device, as before,
    where it does not (Debian 12's 22.43); either way the members are what that ocloc writes."""
    import json
    import os
    import subprocess
    import sys

    from conftest import CLANG, LLVM_SPIRV, REPO, ocloc_device_words, require, run_tool

    require("ocloc", CLANG, LLVM_SPIRV)
    (tmp_path / "k.cl").write_text("kernel void k(global float *x) { x[get_global_id(0)] *= 2.0f; }\n")
    run_tool([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(tmp_path / "k.cl"), "-o", str(tmp_path / "k.bc")])
    run_tool([LLVM_SPIRV, str(tmp_path / "k.bc"), "-o", str(tmp_path / "k.spv")])
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "AOTWHEEL_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(tmp_path / "k.spv"), "-d", "acm-g10,acm-g11,acm-g12",
                           "--min-driver", "26.05", "--json", "-o", str(tmp_path / "k.ar")], capture_output=True, text=True, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    members = [d["member"] for d in json.loads(proc.stdout)["devices"]]
    if "dg2" in ocloc_device_words():
        assert members == ["64.dg2"]
    else:
        assert members == ["64.12.55.8", "64.12.56.5", "64.12.57.0"]


def _archives() -> list[list[Member]]:
    """Archives a plan may weigh: every generic member alone and beside its group's own images,
    and every catalog device's own image beside a neighbour's (same major.minor prefixes)."""
    out: list[list[Member]] = []
    for g, root in GENERIC.items():
        shared = Member(f"64.{g}", CAT.by_name(root).ip, root, g)
        out += [[shared], [shared, *one_per_device([d.name for d in CAT.devices if d.family == CAT.by_name(root).family])]]
    names = [d.name for d in CAT.devices]
    out += [one_per_device(list(pair)) for pair in zip(names, names[1:])]
    return out


def test_the_plans_lookup_is_decides_on_every_catalog_device_and_release() -> None:
    """What the planner's lookups (members no filter of the device names left out, no verdict
    words) find natively equals :func:`rules.decide`'s native verdicts on the whole archive."""
    devices = [(d.name, d.ip) for d in CAT.devices]
    for members in _archives():
        for release in (coverage.OLDEST, *coverage.CHANGES):
            slow = {d.name: v.image for d in CAT.devices
                    if (v := rules.decide(members, ["spirv"], Gpu(d.name, d.ip, d.name), release=release)).verdict == "native"}
            assert coverage.native_members(members, devices, release) == slow, (members, release)


def test_member_prefixes_are_the_archive_filters_prefixes() -> None:
    """:func:`rules.member_prefixes` (written without the ranks, for the planner's speed) names
    what :func:`rules.acceptable`'s archive filters look for, for every IP the rules or the
    catalog know, at every modelled release and the newest."""
    ips = sorted({d.ip for d in CAT.devices} | rules.product_configs() | {"12.99.0", "1.2.3"})
    for ip in ips:
        for release in (None, coverage.OLDEST, *coverage.CHANGES):
            ranks = rules.acceptable(ip, release)
            assert rules.member_prefixes(ip, release) == tuple(p for r in ranks if r.kind == rules.MEMBER for p in r.targets), (ip, release)
    with pytest.raises(ValueError):
        rules.member_prefixes("pvc")
