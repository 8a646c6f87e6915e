"""AOTWHEEL_SHARD's plan: deterministic, every job in exactly one shard, balanced by the measured
per-device cost, and bad values rejected with one line naming the fix."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.buildsteps.shard import DEVICE_COST, Job, Shard, assign, in_slice, job_cost, parse_shard, read_jobs
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


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 32, 40])
def test_every_job_in_exactly_one_shard_and_within_the_lpt_bound(count):
    jobs = _jobs(4, [900, 1100, 1000, 1300])
    plan = assign(jobs, count)
    assert sorted(plan) == sorted((j.source, j.device) for j in jobs)
    assert set(plan.values()) <= set(range(1, count + 1))
    loads = [sum(j.cost for j in jobs if plan[(j.source, j.device)] == k) for k in range(1, count + 1)]
    total, biggest = sum(j.cost for j in jobs), max(j.cost for j in jobs)
    # Graham's bound for longest-processing-time-first: max load <= ideal + the largest job.
    assert max(loads) <= total / count + biggest + 1e-9
    if count <= len(jobs):
        assert min(loads) > 0  # nobody idles while others work


def test_plan_is_deterministic_whatever_the_input_order():
    jobs = _jobs(4)
    plans = {json.dumps(sorted(assign(list(p), 4).items())) for p in itertools.islice(itertools.permutations(jobs), 0, 2000, 97)}
    assert len(plans) == 1


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
