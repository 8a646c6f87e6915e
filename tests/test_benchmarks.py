"""Smoke tests for benchmarks/: the generated kernels compile with the real tools, and the runner's
--quick mode writes JSON whose counts match what the build must do. No timing is asserted."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import report  # noqa: E402
from benchmarks.workload import write_workload  # noqa: E402

from conftest import CLANG, LLVM_LINK, LLVM_SPIRV, ocloc_output  # noqa: E402

pytestmark = pytest.mark.usefixtures("builds")

_KERNEL_RE = re.compile(r"__kernel\b[^{;]*?\bvoid\s+(\w+)\s*\(")


def _require(*tools: str) -> None:
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (CI installs it)")


def _spirv_entry_points(spv: Path, tmp: Path) -> list[str]:
    """Kernel names from llvm-spirv's own text form (independent of aotwheel's SPIR-V reader)."""
    txt = tmp / (spv.stem + ".spt")
    subprocess.run([LLVM_SPIRV, "-to-text", str(spv), "-o", str(txt)], check=True, capture_output=True)
    names = []
    for line in txt.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[1] == "EntryPoint":
            names.append(parts[4].strip('"'))
    return names


def test_workload_compiles_with_clang15_and_llvm_spirv15(tmp_path: Path) -> None:
    _require(CLANG, LLVM_SPIRV)
    sources = write_workload(tmp_path / "k", kernels=12, files=3)
    assert [p.name for p in sources] == ["ops_0.cl", "ops_1.cl", "ops_2.cl"]
    all_names: list[str] = []
    for src in sources:
        declared = _KERNEL_RE.findall(src.read_text())
        # every file gets each family (dealt round-robin), 4 kernels each
        assert len(declared) == 4
        assert {n.split("_")[0] for n in declared} == {"gemm", "softmax", "reduce"}
        bc, spv = tmp_path / f"{src.stem}.bc", tmp_path / f"{src.stem}.spv"
        subprocess.run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)],
                       check=True, capture_output=True)
        subprocess.run([LLVM_SPIRV, str(bc), "-o", str(spv)], check=True, capture_output=True)
        assert spv.read_bytes()[:4] == bytes.fromhex("03022307")
        assert sorted(_spirv_entry_points(spv, tmp_path)) == sorted(declared)
        all_names += declared
    assert len(set(all_names)) == 12


def test_workload_default_set_is_distinct_and_regeneration_keeps_mtime(tmp_path: Path) -> None:
    sources = write_workload(tmp_path, kernels=48, files=4)
    names = [n for p in sources for n in _KERNEL_RE.findall(p.read_text())]
    assert len(names) == 48 and len(set(names)) == 48
    before = [p.stat().st_mtime_ns for p in sources]
    write_workload(tmp_path, kernels=48, files=4)
    assert [p.stat().st_mtime_ns for p in sources] == before
    # fewer files: the stale ones go, so a build never picks them up
    write_workload(tmp_path, kernels=48, files=2)
    assert sorted(p.name for p in tmp_path.glob("ops_*.cl")) == ["ops_0.cl", "ops_1.cl"]


def test_large_workload_copies_are_distinct_and_every_file_gets_the_same_mix(tmp_path: Path) -> None:
    """scaleout's --workload large: 48 kernels x 4 copies in 8 files, renamed copies (distinct
    kernel names, helper functions renamed with them) and each file 2 of every GEMM tile config."""
    _require(CLANG, LLVM_SPIRV)
    sources = write_workload(tmp_path, kernels=48, files=8, copies=4)
    names = [n for p in sources for n in _KERNEL_RE.findall(p.read_text())]
    assert len(names) == 192 and len(set(names)) == 192
    for src in sources:
        tiles = sorted("_".join(n.split("_")[:3]) for n in _KERNEL_RE.findall(src.read_text()) if n.startswith("gemm"))
        assert tiles == sorted(["gemm_t16_w2", "gemm_t16_w4", "gemm_t32_w2", "gemm_t32_w4"] * 2)
    src = sources[0]
    bc, spv = tmp_path / "a.bc", tmp_path / "a.spv"
    subprocess.run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)],
                   check=True, capture_output=True)
    subprocess.run([LLVM_SPIRV, str(bc), "-o", str(spv)], check=True, capture_output=True)
    assert sorted(_spirv_entry_points(spv, tmp_path)) == sorted(_KERNEL_RE.findall(src.read_text()))


def test_generated_gemm_file_compiles_with_ocloc_for_pvc(tmp_path: Path) -> None:
    _require(CLANG, LLVM_SPIRV, "ocloc")
    src = write_workload(tmp_path / "k", kernels=3, files=1)[0]
    bc, spv = tmp_path / "k.bc", tmp_path / "k.spv"
    subprocess.run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)],
                   check=True, capture_output=True)
    subprocess.run([LLVM_SPIRV, str(bc), "-o", str(spv)], check=True, capture_output=True)
    proc = subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc", "-output", "k",
                           "-out_dir", str(tmp_path / "out"), "-output_no_suffix", "-q"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ocloc_output(tmp_path / "out", "k").read_bytes()[:4] == b"\x7fELF"


def _ocloc_ip(device: str) -> str:
    out = subprocess.run(["ocloc", "ids", device], check=True, capture_output=True, text=True).stdout.split()
    return next(w for w in out if w.count(".") == 2 and w.replace(".", "").isdigit())


def test_quick_run_writes_json_with_the_expected_counts(tmp_path: Path) -> None:
    _require("cmake", "ninja", "ocloc", CLANG, LLVM_SPIRV, LLVM_LINK, "ar")
    out = tmp_path / "quick.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--only", "p1,p2,p3",
                           "--json", str(out), "--work", str(tmp_path / "work")],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["quick"] is True and res["runs"] == 1
    assert res["workload"] == {"kernels": 6, "files": 2, "one_device_s": res["workload"]["one_device_s"]}
    p1 = res["cases"]["p1"]["by_n"]["2"]
    assert p1["devices"] == ["pvc", "acm-g10"]
    # quick: the configure-time plan of 2 sources x 2 devices on this machine's cores (one edge
    # per source on 2 cores), cache off: one ocloc per edge for its group
    from aotwheel.backends.intel.buildsteps.groups import plan_edges, source_jobs, usable_cores

    kernels = sorted((tmp_path / "work" / "project" / "kernels").glob("ops_*.cl"))
    plan = plan_edges(source_jobs([(k.stem, str(k)) for k in kernels], ["pvc", "acm-g10"]), usable_cores())
    groups = sum(s == "ops_0" for s, _ in plan)
    assert p1["ocloc_runs"] == p1["ocloc_edges"] == len(plan) and len(plan) >= 2
    ips = {_ocloc_ip("pvc"), _ocloc_ip("acm-g10")}
    # the serial reference and our fat binary carry the same device members (plus padding/IR)
    for members in (p1["serial_members"], p1["ours_members_ops_0"]):
        assert {m[3:] for m in members if m.startswith("64.")} == ips
    for key in ("serial_ocloc_s", "ours_ninja_s", "ratio_to_ideal", "efficiency"):
        assert p1[key]["runs"] == 1 and p1[key]["min"] <= p1[key]["median"] <= p1[key]["max"]
    p2 = res["cases"]["p2"]
    assert p2["ocloc_runs_first"] == 2 * 2 and p2["ocloc_runs_second"] == 0
    p3 = res["cases"]["p3"]
    assert p3["noop_ocloc_edges"] == [0]
    assert sorted(map(tuple, p3["edit_ocloc_edges"])) == [("ops_0.cl", "acm-g10"), ("ops_0.cl", "pvc")]
    assert p3["edit_ocloc_runs"] == 2 and p3["touch_ocloc_runs"] == 0  # per-device cache misses
    assert p3["edit_ocloc_edge_count"] == groups and p3["touch_ocloc_edge_count"] == groups
    # the summary renders from this JSON and keeps a section appended by someone else
    doc = tmp_path / "performance.md"
    doc.write_text("# old\n\n## NVIDIA (H100)\n\nkept text\n")
    report.update_doc(doc, report.render(res))
    text = doc.read_text()
    assert text.startswith("# Performance") and "## P1" in text and text.rstrip().endswith("kept text")
    assert "# old" not in text


def test_native_code_benchmark_smoke(tmp_path):
    """One run of the JIT-cache benchmark on this repository's kernels: the first process JITs, the
    second loads cached binaries (the script checks both per module), and the doc section renders."""
    _require(CLANG, LLVM_SPIRV, "ocloc")
    pytest.importorskip("pyopencl")
    out, doc = tmp_path / "native.json", tmp_path / "perf.md"
    doc.write_text("# Performance\n\n## NVIDIA (H100)\n\nkept\n")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "native_code.py"), "--only", "jit", "--sets", "repo",
                           "--runs", "1", "--json", str(out), "--doc", str(doc)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads(out.read_text())["program_creation"]["repo_kernels"]
    assert res["modules"] == len(list((REPO / "csrc" / "kernels").glob("*.cl")))
    runs = res["per_module_last_run"]
    assert {f["source"] for f in runs["first"]["files"].values()} == {"jit"}
    assert {f["source"] for f in runs["second"]["files"].values()} == {"jit-cache"}
    text = doc.read_text()
    assert text.index("## Native code outside CMake") < text.index("## NVIDIA (H100)") and text.rstrip().endswith("kept")


def _scaleout_pass(plan: list[list[str]], t1: tuple[float, float], shards: list[float], asm: float) -> dict:
    """One pass's round as benchmarks.scaleout writes it (only the fields best_of reads)."""
    ideal = sum(t1) / 2 / len(plan)
    return {"one_machine": {"first_total_s": t1[0], "again_total_s": t1[1]},
            "shards": [{"graph": {"sources": srcs}, "total_s": s} for srcs, s in zip(plan, shards)],
            "assemble": {"total_s": asm}, "ratio_wall_to_ideal": round((max(shards) + asm) / ideal, 3)}


def test_scaleout_best_of_counts_only_passes_that_planned_the_same_slices():
    from benchmarks.scaleout import best_of

    a, b = [["s0", "s1"], ["s2", "s3"]], [["s0", "s2"], ["s1", "s3"]]
    rounds = [_scaleout_pass(a, (40.0, 44.0), [21.0, 23.0], 3.0),
              _scaleout_pass(b, (30.0, 50.0), [10.0, 10.0], 1.0),  # fastest of all, but another plan
              _scaleout_pass(a, (42.0, 41.0), [24.0, 20.0], 2.5)]
    runs = [{**r, "next_commit": r} for r in rounds]
    got = best_of(runs, 2)["next_commit"]
    assert got["passes_counted"] == [1, 3]
    assert got["T1_s"] == 40.0  # the fastest of passes 1 and 3's four T1 builds, not pass 2's 30 s
    assert got["shard_total_s"] == [21.0, 20.0] and got["assemble_s"] == 2.5
    assert got["ratio_wall_to_ideal"] == round((21.0 + 2.5) / 20.0, 3)
    per_pass = [r["ratio_wall_to_ideal"] for r in rounds]
    assert got["ratio_wall_to_ideal_median_of_passes"] == sorted(per_pass)[1]

    alone = best_of([runs[0], runs[1]], 2)["first"]  # two passes, two plans: no fastest-of figure
    assert alone["ratio_wall_to_ideal"] is None and "passes_counted" not in alone
    assert alone["ratio_wall_to_ideal_median_of_passes"] == round((per_pass[0] + per_pass[1]) / 2, 3)


def test_inspect_ab_runs_each_tree_alternately_and_refuses_a_tree_without_the_package(tmp_path: Path) -> None:
    """benchmarks.inspect_ab: each checkout's own aotwheel inspects the file (4 processes here),
    every call is counted, and a directory that holds no python/aotwheel is refused, not silently
    measured as whatever aotwheel happens to be installed."""
    from benchmarks import inspect_ab

    binary = tmp_path / "true"  # any binary inspect reads: an ELF without device images
    shutil.copyfile(shutil.which("true") or "/bin/true", binary)
    got = inspect_ab.compare([REPO, REPO], binary, rounds=2, calls=3)
    (tree,) = got["trees"]  # the same checkout twice: one entry, both runs pooled
    assert tree == str(REPO) and got["trees"][tree]["calls"] == 12 and got["ratio_second_to_first"] == 1.0
    assert 0 < got["trees"][tree]["min_ms"] <= got["trees"][tree]["median_ms"]
    with pytest.raises(SystemExit, match="imported aotwheel from"):
        inspect_ab.compare([tmp_path, REPO], binary, rounds=1, calls=1)


def test_scaleout_checks_its_servers_before_building(tmp_path, monkeypatch, capsys):
    """Issue 30 item 9: a missing redis-server stops the run before the first build (it used to
    stop at the last row, 18 minutes in, losing every figure)."""
    import benchmarks.servers
    from benchmarks import scaleout

    def started(*args, **kwargs):
        raise AssertionError("the benchmark started building before checking what it needs")

    monkeypatch.setattr(benchmarks.servers, "REDIS", None)
    monkeypatch.setattr(scaleout, "run", started)
    monkeypatch.setattr(scaleout, "measure_costs", started)
    out = tmp_path / "scaleout.json"
    assert scaleout.main(["--workload", "xlarge", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "redis-server" in err[0] and "not found" in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_scaleout_writes_each_round_as_it_is_measured(tmp_path, monkeypatch):
    """A run that stops in its second round leaves the first round's figures in <out>.partial.json."""
    from benchmarks import scaleout

    from conftest import require

    require("nginx")
    rounds = []

    def fake_round(a, project, work, server, tools):
        rounds.append(work.name)
        if len(rounds) == 2:
            raise RuntimeError("stopped in the second round")
        return {"one_machine": {"first_total_s": 12.5}, "shards": [], "ratio_wall_to_ideal": 1.1}

    monkeypatch.setattr(scaleout, "run_round", fake_round)
    out = tmp_path / "scaleout.json"
    with pytest.raises(RuntimeError, match="second round"):
        scaleout.main(["--kernels", "3", "--files", "1", "--copies", "1", "--out", str(out)])
    assert not out.exists()
    saved = json.loads((tmp_path / "scaleout.partial.json").read_text())
    assert saved["complete"] is False and saved["one_machine"] == {"first_total_s": 12.5} and "next_commit" not in saved


def test_benchmark_runner_saves_each_case_when_it_finishes(tmp_path):
    from benchmarks.run import _Saving

    doc = {"schema": 1, "cases": {}}
    path = tmp_path / "results.partial.json"
    doc["cases"] = cases = _Saving(doc, path)
    cases["p1"] = {"median_s": 1.5}
    assert json.loads(path.read_text())["cases"] == {"p1": {"median_s": 1.5}}
    cases["p2"] = {"median_s": 0.5}
    saved = json.loads(path.read_text())
    assert saved["cases"] == {"p1": {"median_s": 1.5}, "p2": {"median_s": 0.5}} and saved["complete"] is False


def test_cli_startup_rows_and_what_each_command_imports(tmp_path):
    """benchmarks.cli_startup: the rows side by side, each with the modules it imported (from
    -X importtime) and its ratio to python -c pass per run; no timing asserted."""
    out = tmp_path / "startup.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.cli_startup", "--runs", "2", "--rounds", "1", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO)
    if "no installed aotwheel._kernels" in proc.stderr:
        pytest.skip("aotwheel._kernels is not built in this environment (pip install . builds it)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads(out.read_text())
    rows = res["rows"]
    commands = ["aotwheel inspect LIB", "aotwheel check --device pvc LIB", "aotwheel resolve", "aotwheel resolve pvc", "aotwheel --version",
                "aotwheel compile --help"]
    assert list(rows) == ["python -c pass", "import aotwheel", "aotwheel inspect LIB", "python -m aotwheel inspect LIB", *commands[1:]]
    assert all(len(r["wall_median_ms"]) == len(r["over_pass"]) == 2 for r in rows.values())
    assert rows["python -c pass"]["over_pass"] == [1.0, 1.0]
    assert all(abs(r["over_pass"][i] * rows["python -c pass"]["wall_median_ms"][i] - r["wall_median_ms"][i]) < 1e-6
               for r in rows.values() for i in range(2))
    assert rows["import aotwheel"]["aotwheel_modules"] == ["aotwheel"] and rows["python -c pass"]["aotwheel_modules"] == []
    assert "aotwheel.inspector" in rows["aotwheel inspect LIB"]["aotwheel_modules"]
    # the console script and `python -m` run the same command (runpy runs aotwheel/__main__.py as __main__)
    assert rows["python -m aotwheel inspect LIB"]["aotwheel_modules"] == rows["aotwheel inspect LIB"]["aotwheel_modules"]
    assert "aotwheel.devlist" not in rows["aotwheel inspect LIB"]["aotwheel_modules"]
    assert rows["aotwheel --version"]["aotwheel_modules"] == ["aotwheel", "aotwheel.cli", "aotwheel.errors"]
    assert "aotwheel.devlist" in rows["aotwheel resolve pvc"]["aotwheel_modules"]
    assert list(res["goals"]) == ["import aotwheel", *commands] and res["machine"]["cores"] >= 1
    assert rows["import aotwheel"]["import_aotwheel_us"] > 0 and rows["python -c pass"]["import_aotwheel_us"] is None
    assert Path(res["library"]).name.startswith("_kernels") and res["runs"] == 2  # this repository's own extension, as installed


def test_cli_floor_rows_and_the_init_only_experiment_answers_alike(tmp_path):
    """benchmarks.cli_floor: the standard-library floors beside inspect, check and resolve, each
    also with its dataclasses generated __init__ only, which must answer exactly as the command
    does (the benchmark refuses to time it otherwise); no timing asserted."""
    out = tmp_path / "floor.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.cli_floor", "--runs", "1", "--rounds", "1", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO)
    if "no installed aotwheel._kernels" in proc.stderr:
        pytest.skip("aotwheel._kernels is not built in this environment (pip install . builds it)")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert list(rows)[:4] == ["python -c pass", "import argparse, json", "import argparse, json, dataclasses",
                              "import argparse, json, dataclasses, zstandard"]
    for command in ("inspect LIB", "check --device pvc LIB", "resolve"):
        assert {f"aotwheel {command}", f"aotwheel {command}, records __init__ only"} <= set(rows)
    assert all(len(r["wall_median_ms"]) == len(r["over_pass"]) == 1 for r in rows.values())


@pytest.mark.usefixtures("nvcc")  # it builds with nvcc: the NVIDIA tests' lane (Debian 12)
def test_vendor_cache_rows_and_every_edge_a_hit(tmp_path):
    """benchmarks.vendor_cache: cold, cached and no-cache builds side by side for each installed
    vendor compiler; the cached build hits on every compile edge (12 nvcc, 4 hipcc); no timing asserted."""
    out = tmp_path / "vendor_cache.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.vendor_cache", "--runs", "1", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    vendors = json.loads(out.read_text())["vendors"]
    edges = {"nvidia": 12, "amd": 4}
    assert "nvidia" in vendors
    for vendor, row in vendors.items():
        assert row["hits_per_cached_build"] == edges[vendor], (vendor, row)
        assert set(row["seconds"]) == {"cold", "cached", "no cache"} and all(len(s) == 1 for s in row["seconds"].values())
