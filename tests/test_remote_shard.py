"""AOTWHEEL_SHARD's plan: deterministic, every job in exactly one shard, balanced by the measured
per-device cost, sources kept whole where balance allows, the slice file the `shard` step writes
for CMake, and bad values rejected with one line naming the fix."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.backends.intel.buildsteps.costs import DEVICE_COST, in_slice, job_cost, read_jobs
from aotwheel.backends.intel.buildsteps.groups import device_groups, plan_edges, slice_groups
from aotwheel.buildsteps.shard import IMBALANCE, Job, Shard, assign, parse_shard
from aotwheel.errors import AotwheelError

REPO = Path(__file__).resolve().parents[1]
DEVICES = ["pvc", "acm-g10", "acm-g11", "acm-g12", "tgllp", "dg1", "adl-p", "rkl"]


@pytest.mark.parametrize("text,want", [("1/4", Shard(1, 4)), (" 4/4 ", Shard(4, 4)), ("", None), (None, None)])
def test_parse_shard(text, want):
    assert parse_shard(text) == want


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/b", "1-4", "1/4/2", "-1/4", "1/"])
def test_bad_shard_is_one_line_naming_the_fix(text):
    with pytest.raises(AotwheelError) as err:
        parse_shard(text)
    assert "AOTWHEEL_SHARD=1/4" in str(err.value) and "\n" not in str(err.value)


def _jobs(sources: int, sizes: list[int] | None = None) -> list[Job]:
    sizes = sizes or [1000] * sources
    return [Job(f"ops_{s}", d, job_cost(d, sizes[s])) for s in range(sources) for d in DEVICES]


def _loads(jobs: list[Job], plan: dict[tuple[str, str], int], count: int) -> list[float]:
    return [sum(j.cost for j in jobs if plan[(j.source, j.device)] == k) for k in range(1, count + 1)]


def _holders(plan: dict[tuple[str, str], int]) -> dict[str, set[int]]:
    """The shards that got (part of) each source."""
    out: dict[str, set[int]] = {}
    for (source, _), k in plan.items():
        out.setdefault(source, set()).add(k)
    return out


@pytest.mark.parametrize("sizes", [[900, 1100, 1000, 1300], [1000] * 4, [5000, 300, 300, 300, 300, 200], [700] * 9])
@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 32, 40])
def test_every_job_in_exactly_one_shard_and_within_the_bound(count, sizes):
    jobs = _jobs(len(sizes), sizes)
    plan = assign(jobs, count)
    assert sorted(plan) == sorted((j.source, j.device) for j in jobs)
    assert set(plan.values()) <= set(range(1, count + 1))
    loads = _loads(jobs, plan, count)
    ideal, biggest = sum(j.cost for j in jobs) / count, max(j.cost for j in jobs)
    # Whole sources stay within IMBALANCE x ideal; split ones go longest-first onto the least-loaded
    # shard (Graham's bound: ideal + the largest job) when no shard holding the source has room.
    assert max(loads) <= max(IMBALANCE * ideal, ideal + biggest) * (1 + 1e-9)
    if min(loads) == 0:  # a shard idles only where using it would not shorten the longest one
        assert max(loads) <= max(IMBALANCE * ideal, biggest) * (1 + 1e-9)


@pytest.mark.parametrize("sources,count", [(4, 4), (8, 4), (12, 4), (4, 2), (4, 1)])
def test_sources_stay_whole_when_they_balance(sources, count):
    """Equal sources, a multiple of the shard count: every source on one shard, loads equal."""
    jobs = _jobs(sources)
    plan = assign(jobs, count)
    assert all(len(h) == 1 for h in _holders(plan).values())
    loads = _loads(jobs, plan, count)
    assert max(loads) == pytest.approx(min(loads))


def test_sources_split_only_where_whole_ones_cannot_balance():
    # 4 sources on 8 shards: each source over two shards (fewest), within the bound.
    jobs = _jobs(4)
    plan = assign(jobs, 8)
    assert [len(h) for h in _holders(plan).values()] == [2, 2, 2, 2]
    assert max(_loads(jobs, plan, 8)) <= IMBALANCE * sum(j.cost for j in jobs) / 8
    # One big source and three small ones on 4 shards: only the big one is split.
    jobs = _jobs(4, [3000, 1000, 1000, 500])
    holders = _holders(assign(jobs, 4))
    assert len(holders["ops_0"]) > 1 and all(len(holders[s]) == 1 for s in ("ops_1", "ops_2", "ops_3"))
    # 6 equal sources on 4 shards: whole ones would give 2 sources to a shard (1.33x ideal); the
    # plan keeps 4 whole and splits 2, within 10% of the ideal.
    jobs = _jobs(6)
    plan = assign(jobs, 4)
    assert sorted(len(h) for h in _holders(plan).values()) == [1, 1, 1, 1, 2, 2]
    assert max(_loads(jobs, plan, 4)) <= IMBALANCE * sum(j.cost for j in jobs) / 4


@pytest.mark.parametrize("sizes,count", [([1000] * 4, 4), ([3000, 1000, 1000, 500], 4), ([1000] * 6, 4), ([800, 900], 3)])
def test_plan_is_deterministic_whatever_the_input_order(sizes, count):
    jobs = _jobs(len(sizes), sizes)
    orders = itertools.chain(itertools.islice(itertools.permutations(jobs), 0, 2000, 97), [jobs[::-1]])
    plans = {json.dumps(sorted(assign(list(p), count).items())) for p in orders}
    assert len(plans) == 1


def test_slice_groups_plan_the_shards_own_edges_as_a_one_machine_build_plans_all():
    """A shard plans the ocloc edges of its slice for its cores with the one-machine planner:
    AOTWHEEL_OCLOC_GROUPS=2 gives a whole source exactly its one-machine groups; unset, a shard
    holding one whole source on 2 cores splits it as a one-machine build of that source would."""
    jobs = _jobs(4)
    for k in range(1, 5):
        groups = slice_groups(jobs, Shard(k, 4), "2", cores=2)
        assert list(groups.values()) == [device_groups(DEVICES, 2)]
        ((source, planned),) = slice_groups(jobs, Shard(k, 4), None, cores=2).items()
        assert planned == [g for _, g in plan_edges([j for j in jobs if j.source == source], 2)] and len(planned) == 2
    # Split sources: every job in exactly one shard's groups, at most 2 groups per source.
    jobs = _jobs(4, [3000, 1000, 1000, 500])
    seen = [(s, d) for k in range(1, 5) for s, gs in slice_groups(jobs, Shard(k, 4), None, cores=2).items()
            for g in gs for d in g]
    assert sorted(seen) == sorted((j.source, j.device) for j in jobs)
    assert all(len(gs) <= 2 for k in range(1, 5) for gs in slice_groups(jobs, Shard(k, 4), "2").values())


def test_shard_step_writes_the_slice_cmake_reads(tmp_path):
    srcs = []
    for i, size in enumerate([400, 400, 400, 1600]):
        p = tmp_path / f"k{i}.cl"
        p.write_text("x" * size)
        srcs.append(p)
    jobs = tmp_path / "jobs.tsv"
    jobs.write_text("".join(f"{p.stem}\t{d}\t{p}\n" for p in srcs for d in DEVICES))
    lines = {}
    for k in (1, 2, 3):
        out = tmp_path / f"slice{k}.tsv"
        proc = subprocess.run([sys.executable, "-m", "aotwheel.buildsteps", "intel", "shard", "--jobs", str(jobs), "--shard",
                               f"{k}/3", "--groups=2", "--out", str(out)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        lines[k] = [ln.split("\t") for ln in out.read_text().splitlines()]
    # One line per source of the shard: the stem, then its groups ("a,b|c"), devlist order kept.
    got = sorted((stem, d) for rows in lines.values() for stem, spec in rows for g in spec.split("|")
                 for d in g.split(","))
    assert got == sorted((p.stem, d) for p in srcs for d in DEVICES)
    for rows in lines.values():
        for _, spec in rows:
            assert all(g.split(",") == sorted(g.split(","), key=DEVICES.index) for g in spec.split("|"))
    bad = subprocess.run([sys.executable, "-m", "aotwheel.buildsteps", "intel", "shard", "--jobs", str(jobs), "--shard", "4/3",
                          "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert bad.returncode == 2 and "AOTWHEEL_SHARD=1/4" in bad.stderr


def test_balance_uses_the_measured_costs():
    # A device measured costlier takes a larger share of a shard's capacity than a cheap one.
    assert DEVICE_COST and set(DEVICES) <= set(DEVICE_COST)
    dear, cheap = max(DEVICES, key=DEVICE_COST.__getitem__), min(DEVICES, key=DEVICE_COST.__getitem__)
    assert job_cost(dear, 1000) > job_cost(cheap, 1000)
    assert job_cost("no-such-device", 1000) == 1000  # unmeasured: cost 1.0


def test_measured_cost_table_matches_the_recorded_measurement():
    """The table in shard.py is the one benchmarks/results/scaleout_costs.json measured."""
    result = REPO / "benchmarks" / "results" / "scaleout_costs.json"
    if not result.is_file():
        pytest.skip("no recorded cost measurement (python -m benchmarks.scaleout --costs)")
    rel = json.loads(result.read_text())["ocloc_costs"]["relative_to_tgllp"]
    assert {d: DEVICE_COST[d] for d in rel} == rel


def test_in_slice_reads_the_job_list_cmake_writes(tmp_path):
    srcs = []
    for i, size in enumerate([100, 300]):
        p = tmp_path / f"k{i}.cl"
        p.write_text("x" * size)
        srcs.append(p)
    jobs = tmp_path / "jobs.tsv"
    jobs.write_text("".join(f"{p.stem}\t{d}\t{p}\n" for p in srcs for d in ("pvc", "tgllp", "dg1")))
    assert [j.cost for j in read_jobs(jobs)][:1] == [job_cost("pvc", 100)]
    owners = {(p.stem, d): [k for k in (1, 2, 3) if in_slice(Shard(k, 3), jobs, p.stem, d)]
              for p in srcs for d in ("pvc", "tgllp", "dg1")}
    assert all(len(v) == 1 for v in owners.values())
    with pytest.raises(AotwheelError, match="re-run CMake configure"):
        in_slice(Shard(1, 3), jobs, "k9", "pvc")


def test_workflow_shard_matrix_expands_every_variant():
    """The plan job's one-liner (run here as the workflow runs it) gives SHARDS jobs per variant."""
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    wf = yaml.safe_load((REPO / "ci" / "workflows" / "wheels.yml").read_text())
    run = next(s["run"] for s in wf["jobs"]["plan"]["steps"] if s.get("id") == "plan")
    line = next(ln for ln in run.splitlines() if "shards=" in ln)
    one_liner = line.split("| python -c ", 1)[1].split(' >> "$GITHUB_OUTPUT"')[0].strip().strip('"')
    matrix = subprocess.run([sys.executable, "ci/matrix.py", "github-matrix"], capture_output=True, text=True,
                            cwd=REPO, check=True).stdout
    out = subprocess.run([sys.executable, "-c", one_liner], input=matrix, capture_output=True, text=True,
                         env=dict(os.environ, SHARDS=str(wf["env"]["SHARDS"])), check=True).stdout
    shards = json.loads(out.split("=", 1)[1])["include"]
    variants = [v for v in json.loads(matrix)["include"] if v["devlist"] != "none"]
    n = int(wf["env"]["SHARDS"])
    assert len(shards) == len(variants) * n
    assert {s["shard"] for s in shards} == {f"{i}/{n}" for i in range(1, n + 1)}
    assert wf["jobs"]["wheels"]["needs"] == ["plan", "device-code"]
    warm = " ".join(s.get("run", "") for s in wf["jobs"]["device-code"]["steps"])
    assert 'aotwheel build warm --shard "${{ matrix.shard }}"' in warm
