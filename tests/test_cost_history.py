"""Measured ocloc costs kept in the remote stores for the next shard plan (backends/intel/buildsteps/history.py):
the generation rule that keeps sibling shards' plans equal, records on REAL nginx and redis-server
on loopback (damaged and foreign objects ignored, an unreachable store asked once), and real
CMake + ninja + ocloc builds: the ocloc edges record what ocloc really cost, a read-only build
records nothing, and a later shard plan follows the recorded costs rather than the sizes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from aotwheel.backends.intel.buildsteps import history
from aotwheel.backends.intel.buildsteps.costs import job_cost, read_job_list
from aotwheel.buildsteps.cache import file_sha256, pack_object, unpack_object
from aotwheel.buildsteps.remote import HttpStore, Timeouts, config_from
from aotwheel.buildsteps.shard import Job, assign

from _build_util import REPO, build_env, ocloc_logger, planned_ocloc_edges, require, run
from conftest import CLANG, LLVM_SPIRV, start_nginx, start_redis

pytestmark = pytest.mark.usefixtures("builds")

TOOLS = ("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV)
DEVICES = "pvc,acm-g10,tgllp"


def test_sibling_shards_read_the_same_generation_before_and_after_each_others_writes():
    last_run = history.merged([], "v1", {"pvc": 2.0, "tgllp": 1.0})
    # This run's source is v2. A shard configuring before any sibling wrote sees v1's costs ...
    assert history.previous_costs(last_run, "v2") == {"pvc": 2.0, "tgllp": 1.0}
    # ... a sibling compiles part of v2 and writes: v2 becomes the newest generation, v1 is kept ...
    after_one = history.merged(last_run, "v2", {"pvc": 5.0})
    assert [g["source_sha256"] for g in after_one] == ["v2", "v1"]
    assert history.previous_costs(after_one, "v2") == {"pvc": 2.0, "tgllp": 1.0}
    # ... another sibling writes the rest of v2: merged into v2, v1 still what a plan of v2 reads.
    after_two = history.merged(after_one, "v2", {"tgllp": 3.0})
    assert after_two[0] == {"source_sha256": "v2", "cpu_s": {"pvc": 5.0, "tgllp": 3.0}}
    assert history.previous_costs(after_two, "v2") == {"pvc": 2.0, "tgllp": 1.0}
    # The next run (v3) plans with v2's costs; at most two generations are kept.
    after_next = history.merged(after_two, "v3", {"pvc": 4.0})
    assert history.previous_costs(after_two, "v3") == {"pvc": 5.0, "tgllp": 3.0}
    assert [g["source_sha256"] for g in after_next] == ["v3", "v2"]
    # A source never measured before this run: no costs (the plan uses sizes).
    assert history.previous_costs(history.merged([], "v2", {"pvc": 1.0}), "v2") == {}


def test_measured_costs_replace_the_size_estimate_in_the_same_units():
    jobs = [Job(s, d, job_cost(d, 1000)) for s in ("a", "b", "c") for d in ("pvc", "tgllp")]
    out = history.with_measured(jobs, {("a", "pvc"): 6.0, ("a", "tgllp"): 6.0, ("b", "pvc"): 3.0, ("b", "tgllp"): 3.0})
    cost = {(j.source, j.device): j.cost for j in out}
    measured_total = sum(j.cost for j in jobs if j.source in "ab")
    assert sum(cost[k] for k in cost if k[0] in "ab") == pytest.approx(measured_total)  # units kept
    assert cost[("a", "pvc")] == pytest.approx(2 * cost[("b", "pvc")])
    assert cost[("c", "pvc")] == job_cost("pvc", 1000)  # unmeasured: its estimate
    assert history.with_measured(jobs, {}) == jobs
    # The split of one ocloc run over its devices follows the measured device factors.
    split = history.split_cpu(4.0, ["pvc", "tgllp"])
    assert sum(split.values()) == pytest.approx(4.0) and split["pvc"] > split["tgllp"]


@pytest.mark.parametrize("kind", ["http", "redis"])
def test_records_on_real_stores_and_damaged_or_foreign_ones_are_ignored(kind, tmp_path):
    server = start_nginx(tmp_path / "s") if kind == "http" else start_redis(tmp_path / "s")
    try:
        (store,) = config_from({"AOTWHEEL_REMOTE_CACHE": server.url()}).stores()
        history.record([store], "p/rc/a", "sha-old", {"pvc": 2.5})
        history.record([store], "p/rc/a", "sha-old", {"tgllp": 1.5})
        assert history.read([store], "p/rc/a", "sha-new") == {"pvc": 2.5, "tgllp": 1.5}
        assert history.read([store], "p/rc/a", "sha-old") == {}  # this very source: a sibling's write
        assert history.read([store], "p/rc/other", "sha-new") == {}
        key = history.record_key("p/rc/a")
        doc = json.loads(unpack_object(store.get(key), key)[0])
        assert doc["id"] == "p/rc/a" and doc["generations"][0]["source_sha256"] == "sha-old"
        for bad in (b"garbage", pack_object(b"not json", key), pack_object(json.dumps({"format": "x"}).encode(), key),
                    pack_object(b'{"format": "aotwheel-ocloc-costs", "version": 1, "generations": [{"cpu_s": 3}]}', key),
                    # a well-formed record of this id, stored under another key: not this record
                    pack_object(unpack_object(store.get(key), key)[0] or b"", history.record_key("p/rc/b"))):
            store.put(key, bad)
            assert history.read([store], "p/rc/a", "sha-new") == {}
        history.record([store], "p/rc/a", "sha-old", {"pvc": 1.0})  # a damaged record is replaced
        assert history.read([store], "p/rc/a", "sha-new") == {"pvc": 1.0}
    finally:
        server.stop()


def test_an_unreachable_store_is_asked_once_per_plan(tmp_path):
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = HttpStore(f"http://127.0.0.1:{port}/aot", None, Timeouts(0.5, 0.5))
    asked = []
    real_get = store.get
    store.get = lambda key, *limit: asked.append(key) or real_get(key, *limit)  # type: ignore[method-assign]
    jobs = tmp_path / "jobs.tsv"
    for stem in ("a", "b", "c"):
        (tmp_path / f"{stem}.cl").write_text(f"// {stem}\n")
    jobs.write_text("".join(f"{s}\t{d}\t{tmp_path / f'{s}.cl'}\n" for s in "abc" for d in DEVICES.split(",")))
    _, sources = read_job_list(jobs)
    assert sorted(sources) == ["a", "b", "c"]
    assert history.measured_costs(sources, "p/rc", [store]) == {}
    assert len(asked) == 1


PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(hist LANGUAGES C)
add_library(hext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
aotwheel_add_device_code(hext SOURCES k/a.cl k/b.cl k/c.cl DEVLIST DEVS NAME rc)
"""


def _project(root: Path) -> Path:
    (root / "k").mkdir(parents=True)
    for stem, kernel in zip("abc", ("reduce", "softmax", "elementwise")):
        (root / "k" / f"{stem}.cl").write_text((REPO / "csrc" / "kernels" / f"{kernel}.cl").read_text())
    (root / "CMakeLists.txt").write_text(PROJECT)
    (root / "ext.c").write_text('#include "rc_aot.h"\nunsigned long n(void) { return aotwheel_rc_image_count; }\n')
    return root


def _configure(src: Path, machine: Path, env: dict[str, str]) -> None:
    run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(machine / "build"), f"-Daotwheel_DIR={REPO / 'cmake'}",
         f"-DPython_EXECUTABLE={sys.executable}", f"-DUSE_AOT_DEVLIST={DEVICES}"],
        env={**env, "AOTWHEEL_CACHE_DIR": str(machine / "cache")})


def _build(src: Path, machine: Path, env: dict[str, str]) -> None:
    _configure(src, machine, env)
    run(["ninja", "-C", str(machine / "build"), "-j2"], env={**env, "AOTWHEEL_CACHE_DIR": str(machine / "cache")})


def _slice(machine: Path) -> list[str]:
    """The sources of a shard's slice (whole or in part), as the configure step planned them."""
    return list(dict.fromkeys(line.split("=")[0] for line in planned_ocloc_edges(machine / "build" / "aotwheel" / "rc")))


def _ocloc_runs(log: Path) -> int:
    """ocloc runs that compiled device code (the logging wrapper's lines)."""
    return len([line for line in log.read_text().splitlines() if " -file " in line]) if log.exists() else 0


def _records(store) -> dict[str, dict]:
    out = {}
    for stem in "abc":
        blob = store.get(history.record_key(f"hist/rc/{stem}"))
        if blob is not None:
            out[stem] = json.loads(unpack_object(blob, history.record_key(f"hist/rc/{stem}"))[0])
    return out


def test_builds_record_real_ocloc_costs_and_the_next_shard_plan_follows_them(tmp_path):
    require(*TOOLS)
    server = start_nginx(tmp_path / "nginx")
    try:
        src = _project(tmp_path / "src")
        wrapper, log = ocloc_logger(tmp_path / "bin")
        env = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper), AOTWHEEL_REMOTE_CACHE=server.url())
        (store,) = config_from(env).stores()
        # A read-only build (a pull request) compiles everything and records nothing.
        _build(src, tmp_path / "ro", {**env, "AOTWHEEL_REMOTE_CACHE_READONLY": "1"})
        assert _records(store) == {}
        # A trusted build records, per source, what its ocloc run cost, split over the devices.
        _build(src, tmp_path / "one", env)
        recs = _records(store)
        assert sorted(recs) == ["a", "b", "c"]
        for stem, rec in recs.items():
            (gen,) = rec["generations"]
            assert gen["source_sha256"] == file_sha256(str(src / "k" / f"{stem}.cl"))
            assert sorted(gen["cpu_s"]) == sorted(DEVICES.split(",")) and min(gen["cpu_s"].values()) > 0
        # Sizes alone: 3 sources of about one size on 2 shards, so one source is split between them.
        sizes = [Job(s, d, job_cost(d, (src / "k" / f"{s}.cl").stat().st_size)) for s in "abc" for d in DEVICES.split(",")]
        by_size = assign(sizes, 2)
        assert len({by_size[(s, d)] for s in "abc" for d in DEVICES.split(",")}) == 2
        assert any(len({by_size[(s, d)] for d in DEVICES.split(",")}) == 2 for s in "abc")
        # Say the last run measured a to cost twice b or c; this run's sources are edited.
        for stem in "abc":
            sha = file_sha256(str(src / "k" / f"{stem}.cl"))
            history.record([store], f"hist/rc/{stem}", sha, dict.fromkeys(DEVICES.split(","), 2.0 if stem == "a" else 1.0))
            with open(src / "k" / f"{stem}.cl", "a") as f:  # new code: new SPIR-V, ocloc runs again
                f.write(f"__kernel void edited_{stem}(__global int *p) {{ p[0] = {ord(stem)}; }}\n")
        # Shard 1 plans and builds (writing this run's costs of a); shard 2 plans after that write.
        _build(src, tmp_path / "s1", {**env, "AOTWHEEL_SHARD": "1/2"})
        new_a = _records(store)["a"]["generations"]
        assert new_a[0]["source_sha256"] == file_sha256(str(src / "k" / "a.cl")) and new_a[1]["cpu_s"]["pvc"] == 2.0
        _build(src, tmp_path / "s2", {**env, "AOTWHEEL_SHARD": "2/2"})
        assert _slice(tmp_path / "s1") == ["a"] and _slice(tmp_path / "s2") == ["b", "c"]  # 2.0 vs 1.0 + 1.0
        # The assembling build finds everything the two shards pushed.
        before = _ocloc_runs(log)
        _build(src, tmp_path / "asm", env)
        assert _ocloc_runs(log) == before
    finally:
        server.stop()
