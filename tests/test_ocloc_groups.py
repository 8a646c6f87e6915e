"""One ocloc edge per (kernel source, group of devices): the plan of the edges and the grouping,
the split of one `ocloc -device a,b` into per-device binaries (checked against real single-device
ocloc runs), per-device cache entries shared with one-device jobs and `aotwheel compile`, and real
CMake + ninja builds counted through a logging ocloc wrapper, `ninja -t commands` and .ninja_log."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.backends.intel.buildsteps import groups
from aotwheel.backends.intel.buildsteps.costs import DEVICE_COST, job_cost
from aotwheel.backends.intel.buildsteps.groups import (
    EDGE_OVERHEAD,
    device_groups,
    estimated_makespan,
    group_count,
    plan_edges,
    plan_estimate,
    source_jobs,
    usable_cores,
)
from aotwheel.backends.intel.buildsteps.ocloc_job import GroupJob, compile_devices, run_group, run_job
from aotwheel.buildsteps.cache import DeviceCodeCache
from aotwheel.buildsteps.shard import Job
from aotwheel.buildsteps.tiers import Tiers
from aotwheel.errors import AotwheelError, ToolchainError

from _build_util import (
    PYTHONPATH,
    REPO,
    ar_extract,
    ar_members,
    build_env,
    compile_spirv,
    logged_runs,
    ocloc_ip,
    ocloc_logger,
    planned_ocloc_edges,
    require,
    run,
)
from conftest import CLANG, LLVM_SPIRV, ocloc_output, ocloc_zebin_args

KERNELS = REPO / "csrc" / "kernels"
SIX = ["pvc", "acm-g10", "tgllp", "dg1", "acm-g11", "adl-p"]
TOOLS = ("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV, "ar")
# IPEX's / torch-xpu-ops' ocloc options (cmake/gpu/SYCL.cmake), which CMake builds pass by default.
FIELD = "-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels -cl-intel-greater-than-4GB-buffer-required"


# ---- the plan ----------------------------------------------------------------------------------

@pytest.mark.parametrize("count", [1, 2, 3, 4, 6, 9])
def test_groups_partition_the_devlist_in_order_and_balance_cost(count):
    groups = device_groups(SIX, count)
    assert len(groups) == min(count, len(SIX)) and all(groups)
    assert sorted(itertools.chain(*groups)) == sorted(SIX)  # every device exactly once
    for g in groups:
        assert g == [d for d in SIX if d in g]  # devlist order within a group
    loads = [sum(DEVICE_COST[d] for d in g) for g in groups]
    # Longest-cost-first onto the least-loaded group: no group exceeds another by more than one device's cost.
    assert max(loads) - min(loads) <= max(DEVICE_COST[d] for d in SIX) + 1e-9
    best = min(max(sum(DEVICE_COST[d] for d, k in zip(SIX, a) if k == i) for i in range(len(groups)))
               for a in itertools.product(range(len(groups)), repeat=len(SIX)) if len(set(a)) == len(groups))
    assert max(loads) <= best * 4 / 3


def test_group_count_is_min_of_devices_and_cores_or_the_setting():
    assert group_count(None, 6, cores=2) == 2
    assert group_count("", 1, cores=8) == 1
    assert group_count(None, 6) == min(6, len(os.sched_getaffinity(0))) == min(6, usable_cores())
    assert group_count("3", 6, cores=2) == 3
    assert group_count("9", 4, cores=2) == 4  # never an empty group
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(AotwheelError, match="AOTWHEEL_OCLOC_GROUPS='.*' is not a positive integer; set it to"):
            group_count(bad, 4)


def _jobs(sizes: list[int], devices: list[str]) -> list[Job]:
    return [Job(f"ops_{i}", d, job_cost(d, size)) for i, size in enumerate(sizes) for d in devices]


def _check_plan(plan: list[tuple[str, list[str]]], jobs: list[Job]) -> None:
    """Every job in exactly one edge, a source's edges together, devlist order within an edge."""
    assert sorted((s, d) for s, g in plan for d in g) == sorted((j.source, j.device) for j in jobs)
    order = [j.device for j in jobs]
    for _, g in plan:
        assert g == sorted(g, key=order.index)
    sources = [s for s, _ in plan]
    assert sources == sorted(sources, key=[j.source for j in jobs].index)


@pytest.mark.parametrize("n,cores", [(2, 2), (4, 2), (6, 2), (2, 4), (4, 4)])
def test_sources_of_similar_size_get_one_edge_each_when_each_core_has_several_or_splitting_buys_little(n, cores):
    # The benchmark's workload: 4 sources of 16.6-17.0 kB (P1 at N = 2, 4, 6 on 2 cores).
    jobs = _jobs([16591, 16628, 17016, 17006], SIX[:n])
    plan = plan_edges(jobs, cores)
    _check_plan(plan, jobs)
    assert plan == [(f"ops_{i}", SIX[:n]) for i in range(4)]


@pytest.mark.parametrize("sources,cores", [(2, 2), (3, 3), (4, 4)])
def test_a_core_that_would_end_on_one_whole_source_gets_smaller_edges(sources, cores):
    # A shard's slice: few large sources of equal size on as many cores (8 devices each). Sizes
    # are a weak estimate (UNCERTAINTY): one edge per source and core would leave the other cores
    # idle while the dearest source finishes, so every core gets at least two smaller edges.
    devices = [*SIX, "acm-g12", "rkl"]
    jobs = _jobs([33600] * sources, devices)
    plan = plan_edges(jobs, cores)
    _check_plan(plan, jobs)
    assert len(plan) >= 2 * cores - 1 and len(plan) > sources
    # Without the uncertainty the estimate is already balanced: one edge per source.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(groups, "UNCERTAINTY", 0.0)
        assert plan_edges(jobs, cores) == [(f"ops_{i}", devices) for i in range(sources)]


def test_the_estimate_lets_each_cores_largest_edge_overrun():
    # In the order given, on 2 cores: [10, 1] and [6, 5]; each core's largest edge may run 20% longer.
    assert estimated_makespan([10, 6, 5, 1], 2) == 11
    assert estimated_makespan([10, 6, 5, 1], 2, 0.2) == pytest.approx(max(11 + 2, 11 + 1.2))
    assert estimated_makespan([4, 4], 1, 0.5) == pytest.approx(10)  # one core: its one largest edge


def test_the_estimate_starts_edges_in_ninjas_order_not_longest_first():
    # ninja knows no costs: it starts the edges it read first (1.11) or those on the longest path
    # (1.12+, where a split source's groups come first). Two halves of one source, then a whole one.
    assert estimated_makespan([5, 5, 10], 2) == 15  # longest first would say 10
    edges = [("a", ["pvc"], 5.0), ("a", ["tgllp"], 5.0), ("b", ["pvc", "tgllp"], 10.0)]
    assert plan_estimate(edges, 2) == pytest.approx(15 + groups.UNCERTAINTY * 10)
    # Written whole-first, ninja 1.12+ still starts the split source's groups first.
    assert plan_estimate(edges[2:] + edges[:2], 2) == pytest.approx(15 + groups.UNCERTAINTY * 10)


def test_two_measured_sources_on_two_cores_are_not_planned_as_halves_of_one_and_the_other_whole():
    # Per-device ocloc CPU seconds as a shard plan reads them from the cost records (a case the
    # longest-first estimate planned as a's halves + b whole: ninja ran both halves first and b
    # after them, 1.47x CPU/2; measured in the scale-out benchmark's second round: 1.45x).
    a = [1.56, 1.46, 1.26, 1.2, 1.41, 1.49, 1.53, 1.26]
    b = [1.73, 1.63, 1.52, 1.78, 1.39, 1.65, 1.31, 1.36]
    devices = [*SIX, "acm-g12", "rkl"]
    jobs = [Job("a", d, c * 10000) for d, c in zip(devices, a)] + [Job("b", d, c * 10000) for d, c in zip(devices, b)]
    plan = plan_edges(jobs, 2)
    _check_plan(plan, jobs)
    per_source = {s: sum(1 for t, _ in plan if t == s) for s in ("a", "b")}
    assert per_source == {"a": 2, "b": 2}
    # Groups balanced by the measured costs: each source's two edges within one device's cost.
    cost = {(j.source, j.device): j.cost for j in jobs}
    for s in ("a", "b"):
        loads = [sum(cost[(s, d)] for d in g) for t, g in plan if t == s]
        assert abs(loads[0] - loads[1]) <= max(cost[(s, d)] for d in devices)


@pytest.mark.parametrize("n,cores", [(2, 2), (6, 2), (3, 8), (6, 16)])
def test_one_source_is_split_over_the_cores(n, cores):
    jobs = _jobs([16000], SIX[:n])
    plan = plan_edges(jobs, cores)
    _check_plan(plan, jobs)
    assert [g for _, g in plan] == device_groups(SIX[:n], min(n, cores))


def test_a_source_is_split_only_where_that_shortens_the_build():
    # 3 equal sources, 2 devices, 2 cores: whole sources leave one core idle for a third of the
    # build; splitting one source fills it (one process more), splitting all adds nothing.
    jobs = _jobs([16000] * 3, SIX[:2])
    plan = plan_edges(jobs, 2)
    _check_plan(plan, jobs)
    assert plan == [("ops_0", ["pvc"]), ("ops_0", ["acm-g10"]), ("ops_1", SIX[:2]), ("ops_2", SIX[:2])]
    # One large source among small ones: only the large one is split.
    jobs = _jobs([100000, 16000, 16000], SIX[:3])
    plan = plan_edges(jobs, 2)
    _check_plan(plan, jobs)
    assert [s for s, _ in plan] == ["ops_0", "ops_0", "ops_1", "ops_2"]
    # Two sources on four cores: each in two groups.
    assert len(plan_edges(_jobs([16000] * 2, SIX[:4]), 4)) == 4
    # A tiny source: a second edge's start costs about what splitting saves.
    assert len(plan_edges(_jobs([100], SIX[:2]), 2)) == 1


def test_the_plan_is_within_the_split_gain_of_every_finer_plan():
    """No plan with more groups for some source is estimated clearly shorter (checked by brute
    force over all group counts for small cases)."""
    for sizes, n, cores in [([3000, 9000, 27000], 3, 2), ([16000] * 3, 2, 2), ([40000, 1000], 4, 4), ([8000] * 5, 3, 3),
                            ([16591, 16628, 17016, 17006], 6, 4)]:
        jobs = _jobs(sizes, SIX[:n])
        plan = plan_edges(jobs, cores)
        _check_plan(plan, jobs)
        cost = {(j.source, j.device): j.cost for j in jobs}

        def makespan(p):  # the planner's own estimate: ninja's order, each core's largest edge may overrun
            return plan_estimate([(s, g, EDGE_OVERHEAD + sum(cost[(s, d)] for d in g)) for s, g in p], cores)

        best = min(makespan([(f"ops_{i}", g) for i, k in enumerate(ks) for g in device_groups(SIX[:n], k)])
                   for ks in itertools.product(range(1, n + 1), repeat=len(sizes)))
        assert makespan(plan) <= best * 1.15, (sizes, n, cores)
        if (n, cores) == (6, 4):  # the P1 workload on 4 cores: split where that pays, by the estimate
            assert len(plan) > 4 and makespan(plan) < makespan([(f"ops_{i}", SIX[:n]) for i in range(4)])


def test_the_setting_overrides_the_plan_and_source_jobs_cost_by_size(tmp_path):
    jobs = _jobs([16000] * 4, SIX[:4])
    assert plan_edges(jobs, 2, "2") == [(f"ops_{i}", g) for i in range(4) for g in device_groups(SIX[:4], 2)]
    assert plan_edges(jobs, 16, "1") == [(f"ops_{i}", SIX[:4]) for i in range(4)]
    with pytest.raises(AotwheelError, match="AOTWHEEL_OCLOC_GROUPS='x' is not a positive integer"):
        plan_edges(jobs, 2, "x")
    (tmp_path / "a.cl").write_text("x" * 300)
    got = source_jobs([("a", str(tmp_path / "a.cl")), ("gone", str(tmp_path / "gone.cl"))], ["pvc", "tgllp"])
    assert got == [Job("a", "pvc", job_cost("pvc", 300)), Job("a", "tgllp", job_cost("tgllp", 300)),
                   Job("gone", "pvc", job_cost("pvc", 1)), Job("gone", "tgllp", job_cost("tgllp", 1))]


# ---- one ocloc for a group's misses --------------------------------------------------------------

@pytest.fixture(scope="module")
def spvs(tmp_path_factory) -> dict[str, Path]:
    require(CLANG, LLVM_SPIRV, "ocloc", "ar")
    d = tmp_path_factory.mktemp("spv")
    return {p.stem: (compile_spirv(p, d / f"{p.stem}.spv"), d / f"{p.stem}.spv")[1] for p in sorted(KERNELS.glob("*.cl"))}


def _single(spv: Path, device: str, cwd: Path, options: str = "", zebin: bool = False) -> bytes:
    """A single-device `ocloc -exclude_ir` build, run here directly (not through aotwheel);
    ``zebin``: with `--format zebin` where this ocloc offers it, as a CMake build passes it."""
    extra = (ocloc_zebin_args() if zebin else []) + (["-options", options] if options else [])
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", f"one_{device}",
         "-output_no_suffix", "-exclude_ir", *extra], cwd=cwd)
    return ocloc_output(cwd, f"one_{device}").read_bytes()


def test_split_members_equal_single_device_builds_for_every_kernel(spvs, tmp_path):
    """What the grouped edge relies on, with Debian's ocloc on this repository's kernels."""
    devices = ["pvc", "acm-g10", "tgllp"]
    for stem, spv in spvs.items():
        got = compile_devices(ocloc="ocloc", spirv=str(spv), devices=[(d, ocloc_ip(d)) for d in devices])
        assert sorted(got) == sorted(devices)
        for d in devices:
            assert got[d] == _single(spv, d, tmp_path), f"{stem} -device {d}"
    opts = "-cl-fast-relaxed-math"
    got = compile_devices(ocloc="ocloc", spirv=str(spvs["gemm"]), devices=[("acm-g11", ocloc_ip("acm-g11")), ("dg1", ocloc_ip("dg1"))],
                          options=opts)
    assert got["acm-g11"] == _single(spvs["gemm"], "acm-g11", tmp_path, opts)
    assert got["dg1"] == _single(spvs["gemm"], "dg1", tmp_path, opts)


def test_a_failing_device_in_a_group_is_named_and_the_others_still_build(tmp_path, capfd):
    require(CLANG, LLVM_SPIRV, "ocloc")
    (tmp_path / "k.cl").write_text("__kernel void halve(__global double *x) { x[get_global_id(0)] *= 0.5; }\n")
    spv = tmp_path / "k.spv"
    compile_spirv(tmp_path / "k.cl", spv)
    cache = DeviceCodeCache(tmp_path / "cache")
    jobs = [GroupJob("pvc", "pvc", ocloc_ip("pvc"), tmp_path / "k.pvc.bin"),
            GroupJob("acm-g10", "acm-g10", ocloc_ip("acm-g10"), tmp_path / "k.acm-g10.bin")]
    with pytest.raises(ToolchainError) as err:
        run_group(spirv=str(spv), jobs=jobs, ocloc="ocloc", ocloc_version="v", options="",
                  tiers=Tiers(local=cache, build_dir=tmp_path))
    assert "-device acm-g10" in str(err.value) and "\n" not in str(err.value)
    assert "Double type is not supported on this platform" in capfd.readouterr().err  # ocloc's own log
    assert not jobs[1].output.exists()


def _ocloc_version(work: Path) -> str:
    """ocloc's own version string (`ocloc query OCL_DRIVER_VERSION` writes it into the cwd)."""
    work.mkdir(parents=True, exist_ok=True)
    run(["ocloc", "query", "OCL_DRIVER_VERSION"], cwd=work)
    return (work / "OCL_DRIVER_VERSION").read_text().strip(" \0\n")


def _group(spv: Path, out: Path, cache: Path, ocloc: str, devices: list[str], options: str = "", format_args: tuple[str, ...] = ()) -> list:
    jobs = [GroupJob(d, d, ocloc_ip(d), out / f"{spv.stem}.{d}.bin") for d in devices]
    tiers = Tiers(local=DeviceCodeCache(cache), build_dir=out)
    return run_group(spirv=str(spv), jobs=jobs, ocloc=ocloc, ocloc_version=_ocloc_version(out / "q"), options=options,
                     tiers=tiers, format_args=format_args)


def test_group_caches_per_device_and_runs_ocloc_only_for_misses(spvs, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    spv, cache, out = spvs["reduce"], tmp_path / "cache", tmp_path / "out"
    devices = ["pvc", "acm-g10", "tgllp"]
    cold = _group(spv, out, cache, str(wrapper), devices)
    runs = logged_runs(log)
    assert len(runs) == 1 and re.search(r"-device pvc,acm-g10,tgllp ", runs[0]) and "-exclude_ir" in runs[0]
    assert [r.provenance for r in cold] == ["compiled"] * 3
    objects = sorted((cache / "v2" / "objects").rglob("*.bin"))
    assert len(objects) == 3  # one entry per (source, device)
    for d in devices:
        assert (out / f"reduce.{d}.bin").read_bytes() == _single(spv, d, tmp_path)
        assert (out / f"reduce.{d}.bin.provenance").read_text() == "compiled"
    # The same entries serve a one-device job (the key is per (SPIR-V, device)), without ocloc.
    one = run_job(spirv=str(spv), device="acm-g10", output=str(tmp_path / "one.bin"), ocloc=str(wrapper),
                  ocloc_version=_ocloc_version(tmp_path / "q"), target=ocloc_ip("acm-g10"), cache=DeviceCodeCache(cache))
    assert one.cache_hit and one.output.read_bytes() == (out / "reduce.acm-g10.bin").read_bytes()
    # Warm: no ocloc at all.
    warm = _group(spv, tmp_path / "out2", cache, str(wrapper), devices)
    assert len(logged_runs(log)) == 1 and [r.provenance for r in warm] == ["local"] * 3
    # One entry gone: ocloc runs for that device only, as a single-device build.
    key_of_tgllp = [line.split()[1] for line in (cache / "v2" / "events.log").read_text().splitlines()
                    if line.startswith("store ") and line.split()[2] == ocloc_ip("tgllp")]
    assert len(key_of_tgllp) == 1
    next((cache / "v2" / "objects").rglob(f"{key_of_tgllp[0]}.bin")).unlink()
    mixed = _group(spv, tmp_path / "out3", cache, str(wrapper), devices)
    runs = logged_runs(log)
    assert len(runs) == 2 and re.search(r"-device tgllp ", runs[1])
    assert [r.provenance for r in mixed] == ["local", "local", "compiled"]
    assert (tmp_path / "out3" / "reduce.tgllp.bin").read_bytes() == (out / "reduce.tgllp.bin").read_bytes()


def test_entries_of_aotwheel_compile_serve_a_group(spvs, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    spv, cache = spvs["softmax"], tmp_path / "cache"
    env = build_env(cache, PYTHONPATH=PYTHONPATH, AOTWHEEL_OCLOC=str(wrapper))
    run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", "pvc,acm-g11", "-o", str(tmp_path / "c.ar")], env=env)
    compiled = len(logged_runs(log, "compile"))
    assert compiled >= 2
    # aotwheel compile passes the field's options and `--format zebin` (where this ocloc offers it) by
    # default, as CMake's edges do: same options, same entries.
    got = _group(spv, tmp_path / "out", cache, str(wrapper), ["pvc", "acm-g11"], options=FIELD, format_args=tuple(ocloc_zebin_args()))
    assert len(logged_runs(log, "compile")) == compiled and [r.provenance for r in got] == ["local", "local"]
    for d in ("pvc", "acm-g11"):
        ar_extract(tmp_path / "c.ar", f"64.{ocloc_ip(d)}", tmp_path / f"m.{d}")
        assert (tmp_path / f"m.{d}").read_bytes() == (tmp_path / "out" / f"softmax.{d}.bin").read_bytes()


# ---- real CMake + ninja builds ----------------------------------------------------------------------

PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(grp LANGUAGES C)
add_library(grpext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_add_device_code(grpext SOURCES a.cl b.cl DEVICES pvc acm-g10 tgllp NAME grp)
"""


def _project(root: Path) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(PROJECT)
    (src / "ext.c").write_text("int grp(void) { return 0; }\n")
    (src / "a.cl").write_text((KERNELS / "elementwise.cl").read_text())
    (src / "b.cl").write_text((KERNELS / "reduce.cl").read_text())
    return src


def _build(src: Path, build: Path, env: dict[str, str]) -> str:
    run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(build), f"-Daotwheel_DIR={REPO / 'cmake'}",
         f"-DPython_EXECUTABLE={sys.executable}"], env=env)
    return run(["ninja", "-C", str(build), "-j2"], env=env).stdout


def _edges(ninja_out: str) -> list[tuple[str, str]]:
    return re.findall(r"aotwheel: ocloc (\S+) -device (\S+)", ninja_out)


def _files(runs: list[str]) -> list[tuple[str, str]]:
    """(kernel file stem, -device list) of each logged ocloc compile of a kernel (not the tool probes)."""
    return [(re.search(r"-file \S*/(\w+)\.spv", r).group(1), re.search(r"-device (\S+)", r).group(1))
            for r in runs if " -file " in f" {r} "]


def _device_entries(cache: Path) -> list[Path]:
    """The cache's device-image entries (not the SPIR-V step's manifests and modules), by content."""
    def spirv_step(obj: Path) -> bool:
        payload = obj.read_bytes().split(b"\n", 1)[-1]
        return payload[:4] == b"\x03\x02\x23\x07" or payload.startswith(b'{"entries"')

    return [p for p in (cache / "v2" / "objects").rglob("*.bin") if not spirv_step(p)]


@pytest.mark.parametrize("setting", ["", "2", "1"])
def test_build_has_one_ocloc_edge_per_source_and_group(tmp_path, setting, builds: None):
    require(*TOOLS)
    wrapper, log = ocloc_logger(tmp_path / "bin")
    src = _project(tmp_path)
    env = build_env(tmp_path / "cache", AOTWHEEL_OCLOC=str(wrapper))
    env.pop("AOTWHEEL_OCLOC_GROUPS", None)
    if setting:
        env["AOTWHEEL_OCLOC_GROUPS"] = setting
    devices = ["pvc", "acm-g10", "tgllp"]
    plan = plan_edges(source_jobs([("a", str(src / "a.cl")), ("b", str(src / "b.cl"))], devices), usable_cores(), setting)
    if setting:
        assert [s for s, _ in plan] == ["a"] * int(setting) + ["b"] * int(setting)
    out = _build(src, tmp_path / "b", env)
    edges = _edges(out)
    assert sorted(edges) == sorted((f"{s}.cl", ",".join(g)) for s, g in plan)
    planned = planned_ocloc_edges(tmp_path / "b" / "aotwheel" / "grp")  # in the order CMake adds them: source by source
    assert planned == [f"{s}={','.join(g)}" for source in "ab" for s, g in plan if s == source]
    # A source with one edge gets its fat binary from it; a split source from a fatbin edge.
    fatbin_edges = re.findall(r"aotwheel: fat binary for (\S+)", out)
    assert sorted(fatbin_edges) == sorted(f"{s}.cl" for s in "ab" if [x for x, _ in plan].count(s) > 1)
    for source in ("a.cl", "b.cl"):
        devs = [d for s, g in edges if s == source for d in g.split(",")]
        assert sorted(devs) == ["acm-g10", "pvc", "tgllp"]
    # One ocloc process per edge (cold cache), each covering its whole group.
    assert sorted(_files(logged_runs(log))) == sorted((s[:-3], g) for s, g in edges)
    # Per-device cache entries: 2 sources x 3 devices.
    assert len(_device_entries(tmp_path / "cache")) == 6
    # Same members as a one-device-per-edge build would have: each equals a single-device ocloc build.
    spv = tmp_path / "b" / "aotwheel" / "grp" / "a.spv"
    for d in ("pvc", "tgllp"):
        assert (tmp_path / "b" / "aotwheel" / "grp" / f"a.{d}.bin").read_bytes() == _single(spv, d, tmp_path, FIELD, zebin=True)
    # A fresh build tree on the warm cache: no ocloc at all.
    before = len(_files(logged_runs(log)))
    _build(src, tmp_path / "b2", env)
    assert len(_files(logged_runs(log))) == before


@pytest.mark.parametrize("groups", [2, 1])
def test_touch_and_edit_rerun_only_that_sources_edges(tmp_path, groups, builds: None):
    require(*TOOLS)
    wrapper, log = ocloc_logger(tmp_path / "bin")
    src = _project(tmp_path)
    env = build_env(tmp_path / "cache", AOTWHEEL_OCLOC=str(wrapper), AOTWHEEL_OCLOC_GROUPS=str(groups))
    _build(src, tmp_path / "b", env)
    ninja = ["ninja", "-C", str(tmp_path / "b"), "-j2"]
    assert "no work to do" in run(ninja, env=env).stdout
    fat = tmp_path / "b" / "aotwheel" / "grp" / "a.fatbin"
    first = fat.read_bytes()
    before = len(_files(logged_runs(log)))
    os.utime(src / "a.cl")  # same SPIR-V: its edges rerun and the cache answers
    out = run(ninja, env=env).stdout
    edges = _edges(out)
    assert sorted(s for s, _ in edges) == ["a.cl"] * groups and len(_files(logged_runs(log))) == before
    assert ("fat binary for" in out) == (groups > 1) and fat.read_bytes() == first
    assert "no work to do" in run(ninja, env=env).stdout
    (src / "a.cl").write_text((src / "a.cl").read_text() + "\n__kernel void extra(__global float *x) { x[0] = 1.0f; }\n")
    edges = _edges(run(ninja, env=env).stdout)
    assert sorted(s for s, _ in edges) == ["a.cl"] * groups and fat.read_bytes() != first
    new = _files(logged_runs(log))[before:]
    assert {f for f, _ in new} == {"a"} and sorted(d for _, g in new for d in g.split(",")) == ["acm-g10", "pvc", "tgllp"]


def test_bad_group_setting_fails_configure_with_one_line(tmp_path, builds: None):
    require("cmake", "ninja", "cc", "ocloc")
    src = _project(tmp_path)
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"), f"-Daotwheel_DIR={REPO / 'cmake'}",
                           f"-DPython_EXECUTABLE={sys.executable}", "-DAOTWHEEL_OCLOC_GROUPS=many"],
                          env=build_env(tmp_path / "cache"), capture_output=True, text=True)
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())
    assert "aotwheel_add_device_code: AOTWHEEL_OCLOC_GROUPS='many' is not a positive integer" in text


# ---- the structure of the build graph: Python processes per source --------------------------------

FOUR = """
cmake_minimum_required(VERSION 3.21)
project(four LANGUAGES C)
add_library(fourext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_add_device_code(fourext SOURCES elementwise.cl reduce.cl softmax.cl gemm.cl DEVICES pvc acm-g10 NAME four)
"""


def _four(root: Path) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(FOUR)
    (src / "ext.c").write_text("int four(void) { return 0; }\n")
    for p in sorted(KERNELS.glob("*.cl")):
        (src / p.name).write_text(p.read_text())
    return src


def _steps(build: Path, env: dict[str, str]) -> dict[str, int]:
    """Python build steps per kind that the device code needs, from the ninja graph (not a build)."""
    fatbins = [f"aotwheel/four/{stem}.fatbin" for stem in ("elementwise", "reduce", "softmax", "gemm")]
    cmds = run(["ninja", "-C", str(build), "-t", "commands", *fatbins], env=env).stdout.splitlines()
    steps = [re.search(r"buildsteps/__main__\.py\S* intel (\w+)", c) for c in cmds]
    kinds = [m.group(1) for m in steps if m]
    return {k: kinds.count(k) for k in ("spirv", "ocloc", "fatbin")}


def test_four_sources_two_devices_two_cores_one_process_per_source_and_identical_outputs(tmp_path, builds: None):
    """S >= cores: one ocloc edge per source with all its devices, writing the fat binary itself
    (4 device-code processes, not 8 ocloc + 4 fatbin), and the same bytes as the split build and
    as one `ocloc -device pvc,acm-g10`."""
    require(*TOOLS)
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 cores")
    src = _four(tmp_path)
    two = sorted(os.sched_getaffinity(0))[:2]
    trees = {}
    for name, extra in (("planned", {}), ("split", {"AOTWHEEL_OCLOC_GROUPS": "2"})):
        env = build_env(tmp_path / f"cache-{name}", **extra)
        if not extra:
            env.pop("AOTWHEEL_OCLOC_GROUPS", None)
        build = tmp_path / name
        # configure as on a 2-core machine: the plan is made for the cores configure sees
        subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(build), f"-Daotwheel_DIR={REPO / 'cmake'}",
                        f"-DPython_EXECUTABLE={sys.executable}"], env=env, check=True, capture_output=True,
                       preexec_fn=lambda: os.sched_setaffinity(0, two))
        trees[name] = (build, env)
    assert _steps(*trees["planned"]) == {"spirv": 4, "ocloc": 4, "fatbin": 0}
    assert _steps(*trees["split"]) == {"spirv": 4, "ocloc": 8, "fatbin": 4}
    outs = {}
    for name, (build, env) in trees.items():
        out = run(["ninja", "-C", str(build), "-j2"], env=env).stdout
        outs[name] = out
        assert "no work to do" in run(["ninja", "-C", str(build), "-j2"], env=env).stdout
    assert len(_edges(outs["planned"])) == 4 and "fat binary for" not in outs["planned"]
    assert all(g == "pvc,acm-g10" for _, g in _edges(outs["planned"]))
    planned, split = (trees[n][0] / "aotwheel" / "four" for n in ("planned", "split"))
    for stem in ("elementwise", "reduce", "softmax", "gemm"):
        for suffix in (".fatbin", ".fatbin.json", ".pvc.bin", ".acm-g10.bin"):
            assert (planned / f"{stem}{suffix}").read_bytes() == (split / f"{stem}{suffix}").read_bytes(), stem + suffix
        ref = tmp_path / f"ref-{stem}"
        ref.mkdir()
        # The CMake build passes the field's ocloc options by default (IPEX's -options string,
        # docs/formats.md): the reference run gets the same.
        run(["ocloc", "compile", "-file", str(planned / f"{stem}.spv"), "-spirv_input", "-device", "pvc,acm-g10",
             "-output", "fat", *ocloc_zebin_args(), "-options", FIELD], cwd=ref)
        assert (planned / f"{stem}.fatbin").read_bytes() == (ref / "fat").read_bytes(), stem
    # Per-device cache entries, as before: 4 sources x 2 devices.
    assert len(_device_entries(tmp_path / "cache-planned")) == 8
    # The same manifest (members, sizes, digests, provenance) either way.
    m1, m2 = (json.loads((d / "_aot_manifest.json").read_text()) for d in (planned, split))
    assert m1["images"] == m2["images"]


def _step(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "python" / "aotwheel" / "buildsteps" / "__main__.py"), "intel", *args],
                          capture_output=True, text=True, env=env)


def test_ocloc_step_with_fatbin_equals_the_fatbin_step_with_and_without_ir(spvs, tmp_path):
    spv = spvs["softmax"]
    tc = tmp_path / "toolchain.json"
    tc.write_text(json.dumps({"ocloc": "ocloc", "ocloc_version": "v", "ocloc_names": {}}))
    env = build_env(tmp_path / "cache")
    jobs = [f"--job={d}={ocloc_ip(d)}={tmp_path / f'k.{d}.bin'}" for d in ("pvc", "tgllp")]
    natives = [f"--native={d}={ocloc_ip(d)}={tmp_path / f'k.{d}.bin'}" for d in ("pvc", "tgllp")]
    for ir in (True, False):
        tag = "ir" if ir else "noir"
        got = _step("ocloc", "--toolchain", str(tc), "--spirv", str(spv), *jobs, "--fatbin", str(tmp_path / f"a.{tag}"),
                    "--info", str(tmp_path / f"a.{tag}.json"), *(["--ir"] if ir else []), env=env)
        assert got.returncode == 0, got.stderr
        ref = _step("fatbin", "--output", str(tmp_path / f"b.{tag}"), "--info", str(tmp_path / f"b.{tag}.json"),
                    *(["--spirv", str(spv)] if ir else []), *natives, env=env)
        assert ref.returncode == 0, ref.stderr
        assert (tmp_path / f"a.{tag}").read_bytes() == (tmp_path / f"b.{tag}").read_bytes()
        assert (tmp_path / f"a.{tag}.json").read_text() == (tmp_path / f"b.{tag}.json").read_text()
    members = [m for m in ar_members(tmp_path / "a.noir") if not m.startswith("pad_")]
    assert members == [f"64.{ocloc_ip('pvc')}", f"64.{ocloc_ip('tgllp')}"]
    assert "generic_ir" in ar_members(tmp_path / "a.ir")
    bad = _step("ocloc", "--toolchain", str(tc), "--spirv", str(spv), *jobs, "--fatbin", str(tmp_path / "c"), env=env)
    assert bad.returncode == 2 and "give --fatbin and --info together" in bad.stderr
