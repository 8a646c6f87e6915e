#!/usr/bin/env python3
"""Native code outside CMake: the JIT cache of ``aotwheel.opencl`` and ``aotwheel compile``.

    source .venv/opencl-cpu.env
    .venv/bin/python benchmarks/native_code.py [--runs 5] [--ns 2,4] [--json benchmarks/results/native_code.json]

1. Program creation, first process vs second process (Intel's CPU OpenCL runtime): a fresh
   ``python -c`` calls ``aotwheel.opencl.load_program`` on every SPIR-V module of a set with an
   empty JIT cache (first process: JIT from SPIR-V + store), then another fresh process with the
   same cache (second process: created from the cached binary). Timed in-process around each
   ``load_program`` call, summed over the set. Sets: this repository's ``csrc/kernels/*.cl`` and the
   benchmark workload (``benchmarks/workload.py``, 48 kernels in 4 files). Goal: second ≤ 0.1 × first.
2. ``aotwheel compile -d <N devices>`` (device-code cache off, one ocloc per device in parallel)
   vs one ``ocloc compile -device a,b,…`` on the workload linked into one SPIR-V module, side by
   side in one run, as P1: ours / (serial / min(N, cores)), goal ≤ 1.15; both outputs are compared
   member by member. Also: ``aotwheel compile`` again with a warm device-code cache.
No timing here is asserted by any test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.build_cases import link_spirv, serial_ocloc  # noqa: E402
from benchmarks.project import REPO  # noqa: E402
from benchmarks.run import machine  # noqa: E402
from benchmarks.timing import Samples, load1, run_timed  # noqa: E402
from benchmarks.workload import write_workload  # noqa: E402

DEVICES = ["pvc", "acm-g10", "tgllp", "dg1", "acm-g11", "adl-p"]

_CHILD = r"""
import json, sys, time
import pyopencl as cl
from aotwheel.opencl import load_program
dev = next(d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU)
ctx = cl.Context([dev])
out = {"device": dev.name.strip(), "driver": dev.driver_version.strip(), "files": {}}
for path in sys.argv[1:]:
    t0 = time.perf_counter()
    loaded = load_program(ctx, dev, path)
    dt = time.perf_counter() - t0
    out["files"][path.rsplit("/", 1)[-1]] = {"s": dt, "source": loaded.source}
print(json.dumps(out))
"""


def spirv(sources: list[Path], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    spvs = []
    for src in sources:
        bc, spv = out_dir / f"{src.stem}.bc", out_dir / f"{src.stem}.spv"
        subprocess.run(["clang-15", "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)], check=True)
        subprocess.run(["llvm-spirv-15", str(bc), "-o", str(spv)], check=True)
        spvs.append(spv)
    return spvs


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python")
    env["PYOPENCL_NO_CACHE"] = "1"
    env.update(extra)
    return env


def program_creation(name: str, spvs: list[Path], runs: int, scratch: Path) -> dict:
    """First vs second process creating every program of ``spvs`` through the loader."""
    first, second, ratio = Samples(), Samples(), Samples()
    last: dict = {}
    for r in range(runs):
        cache = Path(tempfile.mkdtemp(prefix=f"jit-{name}-", dir=scratch))
        env = _env(AOTWHEEL_JIT_CACHE_DIR=str(cache))
        rows = []
        for _ in range(2):
            proc = subprocess.run([sys.executable, "-c", _CHILD, *map(str, spvs)], env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"{name}: loader run failed: {proc.stderr.strip()[-500:]}")
            rows.append(json.loads(proc.stdout))
        a, b = (sum(f["s"] for f in row["files"].values()) for row in rows)
        sources = ({f["source"] for f in rows[0]["files"].values()}, {f["source"] for f in rows[1]["files"].values()})
        if sources != ({"jit"}, {"jit-cache"}):
            raise SystemExit(f"{name}: expected JIT then cached binary, got {sources}")
        first.add(a)
        second.add(b)
        ratio.add(b / a)
        last = {"first": rows[0], "second": rows[1]}
        print(f"{name} run {r + 1}: first {a * 1e3:.1f} ms, second {b * 1e3:.2f} ms, ratio {b / a:.4f}", flush=True)
    return {"modules": len(spvs), "device": last["first"]["device"], "driver": last["first"]["driver"],
            "first_ms": first.to_dict(1e3), "second_ms": second.to_dict(1e3), "second_over_first": ratio.to_dict(),
            "goal": 0.1, "met": ratio.median <= 0.1, "per_module_last_run": last}


def _members(path: Path) -> dict[str, bytes]:
    names = subprocess.run(["ar", "t", str(path)], capture_output=True, text=True, check=True).stdout.split()
    return {n: subprocess.run(["ar", "p", str(path), n], capture_output=True, check=True).stdout for n in names if not n.startswith("pad_")}


def compile_vs_ocloc(all_spv: Path, ns: list[int], runs: int, scratch: Path) -> dict:
    """``aotwheel compile`` (cache off, then warm) vs one ``ocloc -device a,b,…``, side by side."""
    cores = os.cpu_count() or 1
    rows = []
    for n in ns:
        devices = DEVICES[:n]
        serial, ours, warm, ratio, cpu_ratio = Samples(), Samples(), Samples(), Samples(), Samples()
        cwd = scratch / f"n{n}"
        cwd.mkdir(parents=True, exist_ok=True)
        cache = scratch / f"cache-n{n}"
        for r in range(runs):
            s_wall, s_cpu = serial_ocloc(all_spv, devices, cwd)
            cmd = [sys.executable, "-m", "aotwheel", "compile", str(all_spv), "-d", ",".join(devices), "-o", str(cwd / "ours.ar")]
            o_wall, o_cpu = run_timed(cmd, env=_env(AOTWHEEL_CACHE_DIR="off"))
            serial.add(s_wall)
            ours.add(o_wall)
            ratio.add(o_wall / (s_wall / min(n, cores)))
            cpu_ratio.add(o_cpu / s_cpu)
            print(f"N={n} run {r + 1}: serial ocloc {s_wall:.2f}s, aotwheel compile {o_wall:.2f}s, "
                  f"ratio {o_wall / (s_wall / min(n, cores)):.3f} (load {load1():.2f})", flush=True)
        same = _members(cwd / "ours.ar") == _members(cwd / "fat")
        subprocess.run(cmd[:-2] + ["-o", str(cwd / "warm.ar")], env=_env(AOTWHEEL_CACHE_DIR=str(cache)), check=True,
                       capture_output=True)  # primes the cache
        for _ in range(runs):
            w, _cpu = run_timed(cmd[:-2] + ["-o", str(cwd / "warm.ar")], env=_env(AOTWHEEL_CACHE_DIR=str(cache)))
            warm.add(w)
        rows.append({"n": n, "devices": devices, "serial_s": serial.to_dict(), "ours_s": ours.to_dict(),
                     "ours_over_serial_per_core": ratio.to_dict(), "cpu_ours_over_serial": cpu_ratio.to_dict(),
                     "warm_cache_s": warm.to_dict(), "members_equal": same, "goal": 1.15, "met": ratio.median <= 1.15})
    return {"cores": cores, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ns", default="2,4")
    ap.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "native_code.json"))
    ap.add_argument("--only", default="jit,compile")
    a = ap.parse_args(argv)
    only = set(a.only.split(","))
    scratch = Path(tempfile.mkdtemp(prefix="aotwheel-native-bench-"))
    res: dict = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
                 "command": " ".join([Path(sys.executable).name, "benchmarks/native_code.py", *(argv or sys.argv[1:])]), "runs": a.runs}
    repo_spvs = spirv(sorted((REPO / "csrc" / "kernels").glob("*.cl")), scratch / "repo")
    work_spvs = spirv(write_workload(scratch / "workload", kernels=48, files=4), scratch / "workload-spv")
    if "jit" in only:
        res["program_creation"] = {"repo_kernels": program_creation("repo", repo_spvs, a.runs, scratch),
                                   "workload": program_creation("workload", work_spvs, a.runs, scratch)}
    if "compile" in only:
        all_spv = link_spirv(work_spvs, scratch / "workload-spv" / "all.spv")
        res["compile"] = compile_vs_ocloc(all_spv, [int(n) for n in a.ns.split(",")], a.runs, scratch)
    res["load_end"] = load1()
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
