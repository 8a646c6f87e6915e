"""Scale-out benchmark (issue 11 item 7): R simulated runners sharing one loopback remote cache.

Each runner is a separate CMake build with its own empty local cache and build dir, run one after
the other on this machine (so each shard's time is what it would take alone on a runner like
this one); all talk to one real nginx/WebDAV store on loopback. Measured, in one run:

* T1: the one-machine build (cold local cache, no remote): device-code phase and the rest;
  built twice, before the shards and after the assembler, and averaged (this machine's speed
  drifts with other people's load over the minutes a round takes);
* per shard i/R: ``AOTWHEEL_SHARD=i/R`` device-code build (compile its slice, push): configure,
  the SPIR-V of its slice's sources, its ocloc edges and fat binaries; the edges of its build
  graph are counted from ``ninja -t commands`` (SPIR-V edges, ocloc edges, the (source, device)
  jobs those cover);
* assemble: a fresh machine (empty local cache) against the warm remote: its SPIR-V phase
  (must run 0 clang and 0 llvm-spirv: the shards pushed their sources' SPIR-V), device-code
  phase (must run 0 ocloc) and the rest; its fat binaries must equal T1's byte for byte;
* simulated wall = max(shard) + assemble, and its ratio to the ideal T1/R;
* the cost of one remote hit: a 500 kB object fetched, verified and kept locally (HTTP, Redis).

All of that twice, against the same remote: first the sources as generated (never built before:
the shard plan weighs them by size), then their next commit (``next_commit``: one small kernel
more in every source, so every job is new) whose shard plans weigh the sources by the ocloc costs
the first round's edges recorded in the remote (backends/intel/buildsteps/history.py), as a CI matrix's shards
do from the second run on. Each round has its own T1 (a cold one-machine build of that commit).

ocloc, clang and llvm-spirv runs are counted by logging wrappers set via AOTWHEEL_OCLOC,
AOTWHEEL_CLANG and AOTWHEEL_LLVM_SPIRV, not by aotwheel's own log.
``--costs`` measures ocloc's CPU seconds per device (the sharding's cost table) instead.

Workloads (``--workload``; ``--kernels``/``--files``/``--copies`` override its numbers), all over
the 8 devices of DEVLIST:

* ``small`` (default): 36 distinct kernels (12 GEMM, 12 softmax, 12 reduction) in 4 sources of
  9 kernels (12-13 kB each); T1 about 10 s on 2 quiet cores.
* ``large``: the 48 distinct kernels (16 per family) plus 3 renamed copies of each (ocloc compiles
  every kernel on its own) = 192 kernels in 8 sources of 24 (32-34 kB each): an operator
  library's many instantiations; T1 about 50 s on 2 quiet cores (estimated from the small one).
* ``xlarge``: the 48 kernels plus 7 renamed copies of each = 384 kernels in 16 sources of 24, each
  source like a large one's: twice the large workload's device work, so the fixed cost of a
  runner (its CMake configure, the assembling build) weighs half as much; T1 about 2.2 min here.

``--passes N`` runs both rounds N times, each against a fresh remote (so each pass's first round
again plans by size), and adds ``best_of_passes``: each build's fastest time across the passes
that planned the same slices, and the median of the passes' ratios.

    python -m benchmarks.scaleout [--workload small|large|xlarge] [--runners 4] [--passes N] [--out benchmarks/results/scaleout[_<workload>].json]

It checks first that cmake, ninja, ocloc, clang-15, llvm-spirv-15, nginx and redis-server are
installed, and writes each round to <out stem>.partial.json as soon as it is measured (replaced by
--out when the run completes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.project import BuildTree, tool_env, write_project
from benchmarks.servers import NginxDav, RedisServer
from benchmarks.timing import child_cpu
from benchmarks.tools import CLANG, LLVM_LINK, LLVM_SPIRV

REPO = Path(__file__).resolve().parents[1]
# Eight devices with eight distinct IP versions that Debian's ocloc 22.43 builds.
DEVLIST = "pvc,acm-g10,acm-g11,acm-g12,tgllp,dg1,adl-p,rkl"
# --workload: (distinct kernels, sources, copies of each kernel); see the docstring.
WORKLOADS = {"small": (36, 4, 1), "large": (48, 8, 4), "xlarge": (48, 16, 8)}


def _wrapper(directory: Path, name: str = "ocloc") -> tuple[Path, Path]:
    """A tool (ocloc, clang-15, llvm-spirv-15) that logs each run, then execs the real one (the
    independent run counter)."""
    real = shutil.which(name)
    if not real:
        raise SystemExit(f"needs {name} (ci/setup.sh installs it)")
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}-runs.log"
    w = directory / name
    w.write_text(f"#!{sys.executable}\nimport os, sys\nwith open({str(log)!r}, 'a') as f:\n"
                 "    f.write(' '.join(sys.argv[1:]) + '\\n')\n"
                 f"os.execv({real!r}, [{real!r}] + sys.argv[1:])\n")
    w.chmod(w.stat().st_mode | stat.S_IXUSR)
    return w, log


def _runs(log: Path) -> int:
    """clang / llvm-spirv runs that compiled (not toolchain discovery's ``--version``)."""
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines() if line.strip() != "--version")


def _compiles(log: Path) -> int:
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines() if line.startswith("compile ") and " -file " in line)


class Runner:
    """One simulated machine: its own build dir and local cache, the shared remote."""

    def __init__(self, project: Path, root: Path, env: dict[str, str], jobs: int, ocloc_log: Path,
                 spirv_logs: tuple[Path, Path]) -> None:
        self.tree = BuildTree(project, root / "build", DEVLIST, root / "cache", jobs)
        self.env = env
        self.log = ocloc_log
        self.spirv_logs = spirv_logs  # clang's and llvm-spirv's run logs

    def _ninja(self, targets: list[str] | None) -> dict[str, float]:
        if targets == []:  # nothing of this kind in this build's graph (a shard with no such job)
            return {"seconds": 0.0, "cpu_s": 0.0, "ocloc_runs": 0, "clang_runs": 0, "llvm_spirv_runs": 0, "warnings": 0}
        before = _compiles(self.log)
        clang0, spirv0 = (_runs(p) for p in self.spirv_logs)
        c0 = child_cpu()
        t0 = time.perf_counter()
        proc = subprocess.run(["ninja", "-C", str(self.tree.build), f"-j{self.tree.jobs}", *(targets or [])],
                              capture_output=True, text=True, env=self.env)
        dt = time.perf_counter() - t0
        cpu = child_cpu() - c0
        if proc.returncode != 0:
            raise RuntimeError((proc.stdout + proc.stderr)[-3000:])
        warnings = sum(1 for ln in (proc.stdout + proc.stderr).splitlines() if "aotwheel: warning" in ln)
        return {"seconds": round(dt, 3), "cpu_s": round(cpu, 3), "ocloc_runs": _compiles(self.log) - before,
                "clang_runs": _runs(self.spirv_logs[0]) - clang0, "llvm_spirv_runs": _runs(self.spirv_logs[1]) - spirv0,
                "warnings": warnings}

    def configure(self) -> dict[str, float]:
        cmd = ["cmake", "-G", "Ninja", "-S", str(self.tree.project), "-B", str(self.tree.build),
               f"-DUSE_AOT_DEVLIST={DEVLIST}", f"-DPython_EXECUTABLE={sys.executable}", "-DCMAKE_BUILD_TYPE=Release"]
        c0 = child_cpu()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=self.env)
        return {"seconds": round(time.perf_counter() - t0, 3), "cpu_s": round(child_cpu() - c0, 3)}

    def outputs(self, suffix: str) -> list[str]:
        """The workload's outputs with ``suffix`` that this build's graph has (a shard's: its slice's)."""
        text = subprocess.run(["ninja", "-C", str(self.tree.build), "-t", "targets", "all"], check=True,
                              capture_output=True, text=True).stdout
        mine = {ln.split(":", 1)[0] for ln in text.splitlines()}
        return [p for p in self.tree.outputs(suffix) if p in mine]

    def graph(self) -> dict[str, object]:
        """The edges of this build's graph: SPIR-V edges, ocloc edges and the jobs they cover."""
        text = subprocess.run(["ninja", "-C", str(self.tree.build), "-t", "commands"], check=True,
                              capture_output=True, text=True).stdout
        spirv: list[str] = []
        ocloc: list[list[str]] = []
        for line in dict.fromkeys(text.splitlines()):
            argv = shlex.split(line)
            rest = next((argv[i + 1:] for i, a in enumerate(argv[:-1]) if a.endswith("buildsteps/__main__.py")), [])
            if rest[:1] != ["intel"] or "--plan" not in rest:  # the core's steps; the Intel edges run `intel <step> --plan P --edge ID`
                continue
            plan = json.loads(Path(rest[rest.index("--plan") + 1]).read_text())
            edge = next(e for e in plan["edges"] if e["id"] == rest[rest.index("--edge") + 1])
            if rest[1] == "spirv":
                spirv.append(Path(edge["source"]).stem)
            elif rest[1] == "ocloc":
                ocloc.append([f"{Path(edge['data']['spirv']).stem}:{n['device']}" for n in edge["data"]["natives"]])
        return {"spirv_edges": len(spirv), "ocloc_edges": len(ocloc), "jobs": sum(len(e) for e in ocloc),
                "sources": sorted(spirv)}

    def spirv(self) -> dict[str, float]:
        """clang + llvm-spirv of the sources in this build's graph (a shard's: its slice's)."""
        return self._ninja(self.outputs(".spv"))

    def device_code(self) -> dict[str, float]:
        """The device-compile phase, from SPIR-V: ocloc edges (or cache hits) and fat binaries."""
        return self._ninja(self.outputs(".fatbin"))

    def rest(self) -> dict[str, float]:
        """Everything else of the build: embedding, the extension, the manifest."""
        return self._ninja(None)

    def fatbins(self) -> list[bytes]:
        return [(self.tree.build / p).read_bytes() for p in self.tree.outputs(".fatbin")]


def remote_hit_cost(work: Path, reps: int) -> dict[str, object]:
    """Seconds for one remote hit of a 500 kB object: GET, sha256 check, local store."""
    sys.path.insert(0, str(REPO / "python"))
    from aotwheel.buildsteps.cache import CacheKey, DeviceCodeCache
    from aotwheel.buildsteps.remote import config_from
    from aotwheel.buildsteps.tiers import Tiers

    payload = os.urandom(500_000)
    key = CacheKey(input_sha256="0" * 64, target="12.60.7", tool="ocloc", tool_version="bench",
                   tool_sha256="0" * 64, options="")
    out: dict[str, object] = {"object_bytes": len(payload)}
    servers = {"http": NginxDav(work / "hit-nginx"), "redis": RedisServer(work / "hit-redis")}
    try:
        for kind, server in servers.items():
            cfg = config_from({"AOTWHEEL_REMOTE_CACHE": server.url()})
            Tiers(local=DeviceCodeCache(None), stores=cfg.stores()).store(key, payload, "bench", cfg.stores())
            times = []
            for i in range(reps):
                local = DeviceCodeCache(work / f"hit-{kind}-{i}")  # empty: the hit must come from the remote
                tiers = Tiers(local=local, stores=cfg.stores())
                t0 = time.perf_counter()
                data, how, _ = tiers.lookup(key, "bench")
                times.append(time.perf_counter() - t0)
                assert data == payload and how == "remote", how
            out[kind] = {"median_ms": round(statistics.median(times) * 1e3, 2),
                         "min_ms": round(min(times) * 1e3, 2), "max_ms": round(max(times) * 1e3, 2), "runs": reps}
    finally:
        for s in servers.values():
            s.stop()
    return out


def measure_costs(work: Path, devices: list[str], reps: int) -> dict[str, object]:
    """CPU seconds of `ocloc compile -device X` on the whole workload linked into one module."""
    srcs = write_project(work / "costproj", kernels=36, files=4)  # the small workload
    bcs = []
    for src in srcs:
        bc = work / f"{src.stem}.bc"
        subprocess.run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src),
                        "-o", str(bc)], check=True)
        bcs.append(str(bc))
    subprocess.run([LLVM_LINK, *bcs, "-o", str(work / "all.bc")], check=True)
    spv = work / "all.spv"
    subprocess.run([LLVM_SPIRV, str(work / "all.bc"), "-o", str(spv)], check=True)
    cpu: dict[str, list[float]] = {d: [] for d in devices}
    for _ in range(reps):
        for d in devices:
            with tempfile.TemporaryDirectory() as tmp:
                b = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", d, "-output", "x",
                                "-out_dir", tmp, "-output_no_suffix", "-exclude_ir"], check=True, capture_output=True)
                a = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[d].append(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime)
    med = {d: statistics.median(v) for d, v in cpu.items()}
    base = med.get("tgllp") or statistics.median(med.values())
    return {"cpu_seconds_median": {d: round(v, 3) for d, v in med.items()},
            "cpu_seconds_all": {d: [round(x, 3) for x in v] for d, v in cpu.items()},
            "relative_to_tgllp": {d: round(v / base, 2) for d, v in med.items()}, "reps": reps,
            "module": "the 36-kernel workload (4 sources) linked into one SPIR-V module"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runners", type=int, default=4)
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="small", help="see the module docstring")
    p.add_argument("--kernels", type=int, help="distinct kernels (3..48; default: the workload's)")
    p.add_argument("--files", type=int, help="kernel sources (default: the workload's)")
    p.add_argument("--copies", type=int, help="renamed copies of each kernel (default: the workload's)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="ninja -j per simulated runner")
    p.add_argument("--hit-reps", type=int, default=20)
    p.add_argument("--costs", action="store_true", help="measure per-device ocloc cost instead")
    p.add_argument("--passes", type=int, default=1,
                   help="run both rounds this many times, each against a fresh remote; 'best_of_passes' then "
                        "counts each build's fastest time (other people's load only ever adds time)")
    p.add_argument("--out", type=Path, help="default: benchmarks/results/scaleout.json (scaleout_large.json for large)")
    a = p.parse_args(argv)
    kernels, files, copies = WORKLOADS[a.workload]
    a.kernels, a.files, a.copies = a.kernels or kernels, a.files or files, a.copies or copies
    if a.out is None:
        suffix = f"_{a.workload}" if a.workload != "small" and not a.costs else ""
        a.out = REPO / "benchmarks" / "results" / ("scaleout_costs.json" if a.costs else f"scaleout{suffix}.json")
    missing = missing_tools(a.costs)
    if missing:  # before the first build: a run of the large workloads takes many minutes
        print(f"benchmarks.scaleout: error: {', '.join(missing)} not found; install {'it' if len(missing) == 1 else 'them'} "
              "(bash ci/setup.sh: apt-get install nginx redis-server ...)", file=sys.stderr)
        return 2
    a.out.parent.mkdir(parents=True, exist_ok=True)
    # Figures as they come, so a run stopped late keeps what it measured; replaced by a.out at the end.
    a.partial = a.out.with_name(a.out.stem + ".partial.json")
    work = Path(tempfile.mkdtemp(prefix="aotwheel-scaleout-"))
    load_before = os.getloadavg()
    try:
        if a.costs:
            doc: dict[str, object] = {"ocloc_costs": measure_costs(work, DEVLIST.split(","), 3)}
        elif a.passes <= 1:
            doc = run(a, work)
        else:
            runs: list[dict[str, object]] = []
            for k in range(a.passes):
                runs.append(run(a, work / f"pass{k + 1}", done=runs))
            doc = {**runs[0], "passes": runs, "best_of_passes": best_of(runs, a.runners)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc["machine"] = {"cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
                      "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                      "note": "1/5/15-minute load averages before and after the run; a load above the core count means "
                              "other processes competed for the cores while this ran"}
    a.out.write_text(json.dumps(doc, indent=2) + "\n")
    a.partial.unlink(missing_ok=True)
    print(json.dumps(doc, indent=2))
    return 0


# What each mode runs: the toolchain through CMake, and (not for --costs) the two servers.
_TOOLS = ("cmake", "ninja", "ocloc", CLANG, LLVM_SPIRV)


def missing_tools(costs_only: bool) -> list[str]:
    """The programs this run needs that are not installed (checked before anything starts)."""
    from benchmarks.servers import NGINX, REDIS

    missing = [t for t in _TOOLS if shutil.which(t) is None]
    if not costs_only:
        missing += [name for name, found in (("nginx", NGINX), ("redis-server", REDIS)) if found is None]
    return missing


def checkpoint(a: argparse.Namespace, doc: dict[str, object]) -> None:
    """Write what is measured so far to ``a.partial`` (``"complete": false``)."""
    path = getattr(a, "partial", None)
    if path is not None:
        path.write_text(json.dumps({**doc, "complete": False}, indent=2) + "\n")


def best_of(runs: list[dict], runners: int) -> dict[str, object]:
    """Per round, the fastest time of each build across passes (T1: of its 2 x passes builds; each
    shard and the assembler: of its passes), and the ratio those give. Fair to the shards: T1 has
    twice their samples to be fast in. Only over passes that planned the same slices (a shard's
    time is its slice's): the next commit's plans come from the costs each pass recorded, which
    can differ between passes, so there the largest group of passes with one plan counts (at
    least two passes; ties: the earliest). Each round also gets the median of its per-pass ratios,
    which needs no common plan."""
    out: dict[str, object] = {}
    for name, rounds in (("first", runs), ("next_commit", [r["next_commit"] for r in runs])):
        plans = [[s["graph"]["sources"] for s in r["shards"]] for r in rounds]
        per_pass = [r["ratio_wall_to_ideal"] for r in rounds]
        groups: dict[str, list[int]] = {}
        for k, plan in enumerate(plans):
            groups.setdefault(json.dumps(plan), []).append(k)
        same = max(groups.values(), key=len)  # dicts keep insertion order: ties go to the earliest plan
        common = {"plans": plans, "ratio_wall_to_ideal_per_pass": per_pass,
                  "ratio_wall_to_ideal_median_of_passes": round(statistics.median(per_pass), 3)}
        if len(same) < 2:
            out[name] = {**common, "ratio_wall_to_ideal": None, "note": "no two passes planned the same slices"}
            continue
        chosen = [rounds[k] for k in same]
        t1 = min(min(r["one_machine"]["first_total_s"], r["one_machine"]["again_total_s"]) for r in chosen)
        shards = [min(float(r["shards"][i]["total_s"]) for r in chosen) for i in range(runners)]
        asm = min(float(r["assemble"]["total_s"]) for r in chosen)
        out[name] = {**common, "passes_counted": [k + 1 for k in same], "T1_s": t1, "shard_total_s": shards,
                     "assemble_s": asm, "simulated_wall_s": round(max(shards) + asm, 3),
                     "ideal_T1_over_R_s": round(t1 / runners, 3),
                     "ratio_wall_to_ideal": round((max(shards) + asm) / (t1 / runners), 3)}
    return out


def next_commit(sources: list[Path]) -> None:
    """The workload's next commit: one small kernel more in every source, so every source's
    SPIR-V (and every ocloc job) is new while what ocloc spends on it barely moves."""
    for i, path in enumerate(sources):
        with open(path, "a") as f:
            f.write(f"__kernel void next_commit_{i}(__global float *x) {{ x[get_global_id(0)] *= 2.0f; }}\n")


def run(a: argparse.Namespace, work: Path, done: list[dict[str, object]] | None = None) -> dict[str, object]:
    """Two rounds against one remote: the sources' first sharded build (plans by size), then the
    next commit's (every source edited: plans by the ocloc costs the first round recorded).
    Each round is checkpointed (after the passes in ``done``) as soon as it is measured."""
    work.mkdir(parents=True, exist_ok=True)
    project = work / "project"
    sources = write_project(project, kernels=a.kernels, files=a.files, copies=a.copies)
    tools = (_wrapper(work / "bin"), _wrapper(work / "bin", CLANG), _wrapper(work / "bin", LLVM_SPIRV))
    server = NginxDav(work / "nginx")

    def save(part: dict[str, object]) -> None:
        checkpoint(a, {"passes": [*(done or []), part]} if done is not None else part)

    try:
        first = run_round(a, project, work / "first", server, tools)
        save({"benchmark": "scaleout", **first})
        next_commit(sources)
        second = run_round(a, project, work / "next", server, tools)
        save({"benchmark": "scaleout", **first, "next_commit": second})
        objects = len(server.objects())
    finally:
        server.stop()
    return {
        "benchmark": "scaleout",
        "workload": {"name": a.workload, "distinct_kernels": a.kernels, "copies": a.copies,
                     "kernels": a.kernels * a.copies, "sources": a.files},
        "devlist": DEVLIST, "sources": a.files, "kernels": a.kernels * a.copies, "runners": a.runners,
        "ninja_jobs": a.jobs,
        # The first round: these sources never built before, so the shard plan weighs them by size.
        **first,
        # The next commit: each shard plan weighs the sources by what the first round's ocloc
        # edges measured (backends/intel/buildsteps/history.py); T1 is this commit's own one-machine build.
        "next_commit": second,
        "remote_objects": objects,
        "goal_ratio": 1.3,
        "goal_warm_ratio": 0.15,
        "remote_hit": remote_hit_cost(work, a.hit_reps),
    }


def run_round(a: argparse.Namespace, project: Path, work: Path, server: NginxDav,
              tools: tuple[tuple[Path, Path], ...]) -> dict[str, object]:
    """T1, the R shard builds and the assembling build of the project as it is now."""
    (wrapper, log), (clang, clang_log), (llvm_spirv, spirv_log) = tools
    logs = (clang_log, spirv_log)

    def env(root: Path, **extra: str) -> dict[str, str]:
        return tool_env(root / "cache", AOTWHEEL_OCLOC=str(wrapper), USE_AOT_DEVLIST=DEVLIST,
                        AOTWHEEL_CLANG=str(clang), AOTWHEEL_LLVM_SPIRV=str(llvm_spirv), **extra)

    def one_machine(name: str) -> tuple[Runner, dict[str, float], dict[str, object], list[dict[str, float]]]:
        """T1: one machine, cold local cache, no remote: configure, graph, (SPIR-V, device, rest)."""
        one = Runner(project, work / name, env(work / name), a.jobs, log, logs)
        conf = one.configure()
        return one, conf, one.graph(), [one.spirv(), one.device_code(), one.rest()]

    one, t1_conf, t1_graph, (t1_spv, t1_dev, t1_rest) = one_machine("one")
    shards = []
    for i in range(1, a.runners + 1):
        root = work / f"shard{i}"
        r = Runner(project, root, env(root, AOTWHEEL_REMOTE_CACHE=server.url(), AOTWHEEL_SHARD=f"{i}/{a.runners}"),
                   a.jobs, log, logs)
        conf = r.configure()
        graph = r.graph()
        spv = r.spirv()
        dev = r.device_code()
        shards.append({"shard": f"{i}/{a.runners}", "configure_s": conf["seconds"], "configure_cpu_s": conf["cpu_s"],
                       "graph": graph, "spirv": spv, **dev,
                       "total_s": round(conf["seconds"] + spv["seconds"] + dev["seconds"], 3),
                       "total_cpu_s": round(conf["cpu_s"] + spv["cpu_s"] + dev["cpu_s"], 3)})
    asm = Runner(project, work / "assemble", env(work / "assemble", AOTWHEEL_REMOTE_CACHE=server.url()), a.jobs, log, logs)
    asm_conf = asm.configure()
    asm_spv = asm.spirv()
    asm_dev = asm.device_code()
    asm_rest = asm.rest()
    identical = asm.fatbins() == one.fatbins()
    # T1 again after the shards and the assembler: this machine's speed drifts with other
    # people's load over the minutes a round takes, so T1 is the mean of the two builds.
    _, again_conf, _, again = one_machine("one-again")
    phases = ("spirv", "device_code", "rest")
    t1_first = t1_conf["seconds"] + sum(float(x["seconds"]) for x in (t1_spv, t1_dev, t1_rest))
    t1_again = again_conf["seconds"] + sum(float(x["seconds"]) for x in again)
    t1 = (t1_first + t1_again) / 2
    t1_cpu = (t1_conf["cpu_s"] + sum(float(x["cpu_s"]) for x in (t1_spv, t1_dev, t1_rest))
              + again_conf["cpu_s"] + sum(float(x["cpu_s"]) for x in again)) / 2
    t_asm = asm_conf["seconds"] + sum(float(x["seconds"]) for x in (asm_spv, asm_dev, asm_rest))
    t_asm_cpu = asm_conf["cpu_s"] + sum(float(x["cpu_s"]) for x in (asm_spv, asm_dev, asm_rest))
    shard_total = [float(s["total_s"]) for s in shards]
    wall = max(shard_total) + t_asm
    ideal = t1 / a.runners
    t1_device_s = (float(t1_dev["seconds"]) + float(again[1]["seconds"])) / 2
    t1_device_cpu = (float(t1_dev["cpu_s"]) + float(again[1]["cpu_s"])) / 2
    return {
        # Phases of the first T1 build; total_s/total_cpu_s: the mean of both builds.
        "one_machine": {"configure_s": t1_conf["seconds"], "configure_cpu_s": t1_conf["cpu_s"], "graph": t1_graph,
                        **dict(zip(phases, (t1_spv, t1_dev, t1_rest))), "total_s": round(t1, 3),
                        "total_cpu_s": round(t1_cpu, 3), "first_total_s": round(t1_first, 3),
                        "again_total_s": round(t1_again, 3), "again_device_code": again[1]},
        "shards": shards,
        "shard_ocloc_runs": [s["ocloc_runs"] for s in shards],
        "shard_ocloc_edges": [s["graph"]["ocloc_edges"] for s in shards],
        "shard_spirv_edges": [s["graph"]["spirv_edges"] for s in shards],
        "assemble": {"configure_s": asm_conf["seconds"], "configure_cpu_s": asm_conf["cpu_s"],
                     **dict(zip(phases, (asm_spv, asm_dev, asm_rest))), "total_s": round(t_asm, 3),
                     "total_cpu_s": round(t_asm_cpu, 3)},
        "assemble_fatbins_identical_to_one_machine": identical,
        # The SPIR-V step's cache: the assembler takes every source's SPIR-V from the remote.
        "assemble_ocloc_runs": sum(int(x["ocloc_runs"]) for x in (asm_spv, asm_dev, asm_rest)),
        "assemble_clang_runs": sum(int(x["clang_runs"]) for x in (asm_spv, asm_dev, asm_rest)),
        "assemble_llvm_spirv_runs": sum(int(x["llvm_spirv_runs"]) for x in (asm_spv, asm_dev, asm_rest)),
        "shard_clang_runs": [int(s["spirv"]["clang_runs"]) for s in shards],
        "shard_device_phase_s": [s["seconds"] for s in shards],
        "shard_total_s": shard_total,
        "shard_balance_max_over_mean": round(max(s["seconds"] for s in shards)
                                             / statistics.mean(s["seconds"] for s in shards), 3),
        "device_phase_ratio_max_shard_to_ideal": round(max(s["seconds"] for s in shards)
                                                       / (t1_device_s / a.runners), 3),
        # CPU seconds move less with other people's load: the same ratios in work done.
        "device_phase_cpu_ratio_max_shard_to_ideal": round(max(s["cpu_s"] for s in shards)
                                                           / (t1_device_cpu / a.runners), 3),
        "warm_remote_device_phase_cpu_ratio": round(asm_dev["cpu_s"] / t1_device_cpu, 3),
        "simulated_wall_s": round(wall, 3),
        "ideal_T1_over_R_s": round(ideal, 3),
        "ratio_wall_to_ideal": round(wall / ideal, 3),
        # The same sum in CPU seconds (max shard + assemble vs T1/R): the work on the critical
        # path, much less moved by other people's load than wall seconds.
        "ratio_cpu_to_ideal": round((max(float(s["total_cpu_s"]) for s in shards) + t_asm_cpu)
                                    / (t1_cpu / a.runners), 3),
        "warm_remote_device_phase_ratio": round(asm_dev["seconds"] / t1_device_s, 3),
    }


if __name__ == "__main__":
    sys.exit(main())
