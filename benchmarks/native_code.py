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

from benchmarks.build_cases import link_spirv, parallel_capacity, serial_ocloc
from benchmarks.project import REPO
from benchmarks.run import machine
from benchmarks.timing import Samples, load1, run_timed
from benchmarks.tools import CLANG, LLVM_SPIRV
from benchmarks.workload import write_workload

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
        subprocess.run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)], check=True)
        subprocess.run([LLVM_SPIRV, str(bc), "-o", str(spv)], check=True)
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


def compile_vs_ocloc(all_spv: Path, probe_spv: Path, ns: list[int], runs: int, scratch: Path) -> dict:
    """``aotwheel compile`` (cache off, then warm) vs one ``ocloc -device a,b,…``, side by side."""
    cores = os.cpu_count() or 1
    rows = []
    for n in ns:
        devices = DEVICES[:n]
        serial, ours, warm, ratio, cpu_ratio = Samples(), Samples(), Samples(), Samples(), Samples()
        capacity, achievable = Samples(), Samples()
        cwd = scratch / f"n{n}"
        cwd.mkdir(parents=True, exist_ok=True)
        cache = scratch / f"cache-n{n}"
        for r in range(runs):
            s_wall, s_cpu = serial_ocloc(all_spv, devices, cwd)
            cmd = [sys.executable, "-m", "aotwheel", "compile", str(all_spv), "-d", ",".join(devices), "-o", str(cwd / "ours.ar")]
            o_wall, o_cpu = run_timed(cmd, env=_env(AOTWHEEL_CACHE_DIR="off"))
            cap = parallel_capacity(probe_spv, "tgllp", cwd)
            capacity.add(cap)
            achievable.add(o_wall / (s_wall / max(1.0, min(float(n), cap))))
            serial.add(s_wall)
            ours.add(o_wall)
            ratio.add(o_wall / (s_wall / min(n, cores)))
            cpu_ratio.add(o_cpu / s_cpu)
            print(f"N={n} run {r + 1}: serial ocloc {s_wall:.2f}s, aotwheel compile {o_wall:.2f}s, "
                  f"ratio {o_wall / (s_wall / min(n, cores)):.3f}, capacity {cap:.2f} (load {load1():.2f})", flush=True)
        same = _members(cwd / "ours.ar") == _members(cwd / "fat")
        warm_cmd = [*cmd[:-2], "-o", str(cwd / "warm.ar")]
        subprocess.run(warm_cmd, env=_env(AOTWHEEL_CACHE_DIR=str(cache)), check=True, capture_output=True)  # primes the cache
        for _ in range(runs):
            w, _cpu = run_timed(warm_cmd, env=_env(AOTWHEEL_CACHE_DIR=str(cache)))
            warm.add(w)
        rows.append(
            {
                "n": n,
                "devices": devices,
                "serial_s": serial.to_dict(),
                "ours_s": ours.to_dict(),
                "ours_over_serial_per_core": ratio.to_dict(),
                "cpu_ours_over_serial": cpu_ratio.to_dict(),
                "warm_cache_s": warm.to_dict(),
                "capacity": capacity.to_dict(),
                "ours_over_achievable": achievable.to_dict(),
                "members_equal": same,
                "goal": 1.15,
                "met": ratio.median <= 1.15,
            }
        )
    return {"cores": cores, "rows": rows}


SECTION = "## Native code outside CMake: JIT cache and `aotwheel compile`"


def _mm(d: dict, unit: str, fmt: str = "{:.1f}") -> str:
    return f"{fmt.format(d['median'])} {unit} ({fmt.format(d['min'])}–{fmt.format(d['max'])})"


def _cap(row: dict, key: str) -> str:
    d = row.get(key)
    return f"{d['median']:.2f} ({d['min']:.2f}–{d['max']:.2f})" if d else "n/a"


def render(res: dict) -> str:
    """The docs/performance.md section for ``res``."""
    m = res["machine"]
    out = [SECTION, "",
           f"Measured {res['date']} with `{res['command']}` (raw: `{res.get('json_name', 'benchmarks/results/native_code.json')}`), "
           f"{m['cpu']}, {m['cores']} cores, load {m['load_start']:.1f} at the start and {res['load_end']:.1f} at the end; "
           "median (min–max) of "
           f"{res['runs']} runs. No timing is asserted by a test.", ""]
    pc = res.get("program_creation")
    if pc:
        first = next(iter(pc.values()))
        out += ["**Program creation, first vs second process** (`aotwheel.opencl.load_program`, Intel's CPU OpenCL "
                f"runtime: {first['device']}, driver {first['driver']}). Each run: a fresh process with an empty JIT cache "
                "builds every module from SPIR-V and stores the device binary; a second fresh process with that cache "
                "creates the programs from the binaries (each process asserts where every program came from). Time = "
                "sum over the modules of the `load_program` call, measured inside the process. Goal: second ≤ 0.1 × first.", "",
                "| set | modules | first process | second process | second/first | goal ≤ 0.1 |", "|---|---|---|---|---|---|"]
        names = {"repo_kernels": "`csrc/kernels/*.cl`", "workload": "benchmark workload (48 kernels)"}
        for key, d in pc.items():
            r = d["second_over_first"]
            out.append(f"| {names.get(key, key)} | {d['modules']} | {_mm(d['first_ms'], 'ms')} | {_mm(d['second_ms'], 'ms', '{:.2f}')} | "
                       f"{r['median']:.4f} ({r['min']:.4f}–{r['max']:.4f}) | {'**met**' if d['met'] else '**missed**'} |")
        out.append("")
    cp = res.get("compile")
    if cp:
        out += [
            "**`aotwheel compile` of N devices vs one `ocloc compile -device a,b,…`** on the workload linked into one "
            "SPIR-V module (`benchmarks.build_cases.link_spirv`), side by side in each run, device-code cache off for "
            'ours; ratio as P1: ours / (serial / min(N, cores)), goal ≤ 1.15. "members equal": every ar member of '
            'our output equals ocloc\'s. "capacity" (as P1): two identical ocloc runs one after the other vs side by side, '
            '2.0 on two idle cores; "ours/achievable" divides by serial/min(N, capacity). "warm": `aotwheel compile` '
            "again with a filled device-code cache.",
            "",
            "| N | devices | one ocloc call | aotwheel compile | ours/(serial/min(N,C)) | CPU ours/serial | capacity | ours/achievable "
            "| goal ≤ 1.15 | members equal | warm cache |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in cp["rows"]:
            r = row["ours_over_serial_per_core"]
            out.append(f"| {row['n']} | {','.join(row['devices'])} | {_mm(row['serial_s'], 's', '{:.2f}')} | {_mm(row['ours_s'], 's', '{:.2f}')} | "
                       f"{r['median']:.3f} ({r['min']:.3f}–{r['max']:.3f}) | {row['cpu_ours_over_serial']['median']:.3f} | "
                       f"{_cap(row, 'capacity')} | {_cap(row, 'ours_over_achievable')} | "
                       f"{'**met**' if row['met'] else '**missed**'} | {'yes' if row['members_equal'] else 'NO'} | "
                       f"{_mm(row['warm_cache_s'], 's', '{:.2f}')} |")
        missed = [row for row in cp["rows"] if not row["met"]]
        caps = ""
        if missed:
            caps = ", ".join(f"N={row['n']}: capacity {row['capacity']['median']:.2f}, CPU ours/serial "
                             f"{row['cpu_ours_over_serial']['median']:.2f}, ours/achievable {row['ours_over_achievable']['median']:.2f}"
                             for row in missed if row.get("capacity"))
        if missed and caps:
            out += ["", f"Where the ratio is missed: the parallelism the machine had during the run ({caps}). "
                    "A capacity near 1 means other processes held the second core, so no parallel build could beat one "
                    "serial call by min(N, cores); CPU ours/serial near 1 means aotwheel adds little work of its own "
                    "(one Python process and one ocloc per device). With the cores free (capacity ≈ 2) and the CPU "
                    "ratio ≈ 1, what is left is balance: one ocloc per device, and devices cost unequal time (pvc "
                    "≈ 1.16× an Xe-LP target with this ocloc), so N=2 on 2 cores waits for the slower device while "
                    "the serial call pays the sum once; each per-device ocloc also repeats the compiler's start-up."]
        out.append("")
    return "\n".join(out) + "\n"


def update_doc(path: Path, section: str) -> None:
    """Replace (or insert before the NVIDIA section, else append) this section in ``path``."""
    text = path.read_text() if path.is_file() else ""
    start = text.find(SECTION)
    if start >= 0:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + ("\n" + text[end + 1:] if end >= 0 else "")
    else:
        nvidia = text.find("## NVIDIA (H100)")
        text = (text[:nvidia] + section + "\n" + text[nvidia:]) if nvidia >= 0 else text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ns", default="2,4")
    ap.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "native_code.json"))
    ap.add_argument("--only", default="jit,compile")
    ap.add_argument("--sets", default="repo,workload", help="program-creation sets to time")
    ap.add_argument("--doc", default=str(REPO / "docs" / "performance.md"), help="update this section of it ('' = no)")
    ap.add_argument("--render", metavar="JSON", help="only re-render the doc section from a results JSON")
    a = ap.parse_args(argv)
    if a.render:
        update_doc(Path(a.doc), render(json.loads(Path(a.render).read_text())))
        return 0
    only = set(a.only.split(","))
    scratch = Path(tempfile.mkdtemp(prefix="aotwheel-native-bench-"))
    res: dict = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
                 "command": " ".join([Path(sys.executable).name, "benchmarks/native_code.py", *(argv or sys.argv[1:])]), "runs": a.runs}
    try:
        res["json_name"] = Path(a.json).resolve().relative_to(REPO).as_posix()
    except ValueError:
        res["json_name"] = a.json
    repo_spvs = spirv(sorted((REPO / "csrc" / "kernels").glob("*.cl")), scratch / "repo")
    work_spvs = spirv(write_workload(scratch / "workload", kernels=48, files=4), scratch / "workload-spv")
    if "jit" in only:
        sets = a.sets.split(",")
        res["program_creation"] = {}
        if "repo" in sets:
            res["program_creation"]["repo_kernels"] = program_creation("repo", repo_spvs, a.runs, scratch)
        if "workload" in sets:
            res["program_creation"]["workload"] = program_creation("workload", work_spvs, a.runs, scratch)
    if "compile" in only:
        all_spv = link_spirv(work_spvs, scratch / "workload-spv" / "all.spv")
        res["compile"] = compile_vs_ocloc(all_spv, work_spvs[0], [int(n) for n in a.ns.split(",")], a.runs, scratch)
    res["load_end"] = load1()
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {a.json}")
    if a.doc:
        update_doc(Path(a.doc), render(res))
        print(f"updated {a.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
