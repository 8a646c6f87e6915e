#!/usr/bin/env python3
"""CLI start-up: what a short ``aotwheel`` command costs over starting Python.

    python -m benchmarks.cli_startup [--runs 40] [--python PY] [--compare PYTHONPATH] [--out benchmarks/results/cli_startup.json]

Side by side in one run, interleaved (one sample of each command per round, so that a change of
machine load hits every row alike), after one warm-up round: ``python -c pass``, ``python -c
"import aotwheel"``, ``aotwheel inspect LIB`` (the console script pip installs beside PY: what
users type), the same as ``python -m aotwheel inspect LIB`` (``-m`` adds runpy and its imports,
about 0.45 × ``python -c pass`` for any package), ``aotwheel --version``, ``aotwheel check
--device pvc LIB``, and the standard-library floor of a command parsed by argparse and reported
through dataclasses (``python -c "import runpy, argparse, dataclasses, typing"``), where LIB is a
small library of the repository (``tests/data/cuda-h100/libkern_sm_90.so``, 44 KB). Per row: median, min and max
wall time, the median CPU time (user + system; it moves less than the wall time when other
processes share the cores), and the modules the command imports (from ``-X importtime``: their
count, the aotwheel ones, and the cumulative import time of ``aotwheel`` itself). ``--compare
DIR`` adds the aotwheel rows once more with ``PYTHONPATH=DIR`` (another tree, e.g. the commit
before a change), in the same rounds. The machine is described by what was measured: its cores
and the 1-minute load average before and after.

Goals (issue 29): ``aotwheel inspect`` of a small library ≤ 1.5 × ``python -c pass`` (medians);
``import aotwheel`` ≤ 5 ms (its ``-X importtime`` cumulative time).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "tests" / "data" / "cuda-h100" / "libkern_sm_90.so"
INSPECT_GOAL = 1.5  # × python -c pass
IMPORT_GOAL_MS = 5.0


def commands(python: str, lib: Path) -> dict[str, list[str]]:
    """The rows, by label: argument lists (no shell)."""
    script = Path(python).parent / "aotwheel"  # pip's console script for this interpreter
    if not script.is_file():
        raise SystemExit(f"{script}: no aotwheel console script beside {python}; install aotwheel into that environment (pip install .)")
    return {
        "python -c pass": [python, "-c", "pass"],
        "import aotwheel": [python, "-c", "import aotwheel"],
        "aotwheel inspect LIB": [str(script), "inspect", str(lib)],
        "python -m aotwheel inspect LIB": [python, "-m", "aotwheel", "inspect", str(lib)],
        "aotwheel --version": [str(script), "--version"],
        "aotwheel check --device pvc LIB": [str(script), "check", "--device", "pvc", str(lib)],
        # What no argparse CLI over dataclass reports avoids: `-m`'s runpy, argparse (re, gettext,
        # locale), dataclasses (inspect, ast, dis, tokenize), typing.
        "stdlib floor": [python, "-c", "import runpy, argparse, dataclasses, typing"],
    }


def _wall(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # Exit status 1 is a verdict (check: pvc cannot load an NVIDIA-only library), not a failure.
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    dt_ = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return dt_, after.ru_utime + after.ru_stime - ru.ru_utime - ru.ru_stime


def importtime(cmd: list[str], env: dict[str, str]) -> dict[str, object]:
    """Modules ``cmd`` imports (``-X importtime``): how many, which aotwheel ones, and the
    cumulative µs of the top-level ``aotwheel`` package."""
    python = cmd[0] if not cmd[0].endswith("/aotwheel") else str(Path(cmd[0]).parent / "python")  # a console script: its interpreter runs it
    args = cmd[1:] if python == cmd[0] else cmd
    proc = subprocess.run([python, "-X", "importtime", *args], capture_output=True, text=True, env=env, check=False)
    modules: list[str] = []
    aotwheel_us = None
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line[len("import time:"):].split("|")
        name = name.strip()
        modules.append(name)
        if name == "aotwheel":
            aotwheel_us = int(cumulative.strip())
    return {"modules": len(modules), "aotwheel_modules": sorted(m for m in modules if m.startswith("aotwheel")),
            "import_aotwheel_us": aotwheel_us}


def load1() -> float:
    return os.getloadavg()[0]


def run(python: str, runs: int, lib: Path, pythonpath: str | None = None, compare: str | None = None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AOTWHEEL_", "PYTHON"))}
    env.update(AOTWHEEL_JIT="ignore", **({"PYTHONPATH": pythonpath} if pythonpath else {}))
    rows = {label: (cmd, env) for label, cmd in commands(python, lib).items()}
    if compare:  # the same aotwheel rows for another tree (e.g. the commit before), in the same rounds
        other = {**env, "PYTHONPATH": compare}
        rows.update({f"{label} [{compare}]": (cmd, other) for label, cmd in commands(python, lib).items()
                     if label.startswith(("import", "aotwheel", "python -m"))})
    before = load1()
    for cmd, cmd_env in rows.values():  # warm-up: page cache, .pyc files
        _wall(cmd, cmd_env)
    samples: dict[str, list[float]] = {label: [] for label in rows}
    cpu: dict[str, list[float]] = {label: [] for label in rows}
    for _ in range(runs):
        for label, (cmd, cmd_env) in rows.items():
            wall, used = _wall(cmd, cmd_env)
            samples[label].append(wall * 1e3)
            cpu[label].append(used * 1e3)
    after = load1()
    out_rows = {}
    for label, values in samples.items():
        out_rows[label] = {"median_ms": statistics.median(values), "min_ms": min(values), "max_ms": max(values),
                           "cpu_median_ms": statistics.median(cpu[label]), "runs": len(values), **importtime(*rows[label])}
    base = out_rows["python -c pass"]["median_ms"]
    inspect = out_rows["aotwheel inspect LIB"]["median_ms"]
    import_us = out_rows["import aotwheel"]["import_aotwheel_us"]
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python -m benchmarks.cli_startup " + " ".join(sys.argv[1:]),
        "python": subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                                 text=True, check=True).stdout.strip(),
        "library": str(lib.relative_to(REPO)) if lib.is_relative_to(REPO) else str(lib),
        "library_bytes": lib.stat().st_size,
        "pythonpath": pythonpath,
        "compare": compare,
        "machine": {"cores": os.cpu_count(), "load1_before": before, "load1_after": after},
        "rows": out_rows,
        "goals": {
            "inspect_over_pass": {"value": inspect / base, "goal": INSPECT_GOAL, "met": inspect / base <= INSPECT_GOAL},
            "import_aotwheel_ms": {"value": None if import_us is None else import_us / 1e3, "goal": IMPORT_GOAL_MS,
                                   "met": import_us is not None and import_us / 1e3 <= IMPORT_GOAL_MS},
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40, help="samples per command (interleaved)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose aotwheel is measured")
    ap.add_argument("--lib", type=Path, default=LIB, help="the small library inspected")
    ap.add_argument("--pythonpath", help="PYTHONPATH for the commands (an aotwheel tree to measure instead of the installed one)")
    ap.add_argument("--compare", metavar="PYTHONPATH", help="also measure the aotwheel rows with this PYTHONPATH (another tree)")
    ap.add_argument("--out", type=Path, help="write the result as JSON here")
    args = ap.parse_args(argv)
    res = run(args.python, args.runs, args.lib.resolve(), args.pythonpath, args.compare)
    for label, row in res["rows"].items():  # type: ignore[union-attr]
        print(f"{label:34s} median {row['median_ms']:7.2f} ms  (min {row['min_ms']:.2f}, max {row['max_ms']:.2f})  "
              f"CPU {row['cpu_median_ms']:.2f} ms  {row['modules']} modules")
    for name, goal in res["goals"].items():  # type: ignore[union-attr]
        print(f"{name}: {goal['value']:.3f} (goal ≤ {goal['goal']}) {'met' if goal['met'] else 'MISSED'}")
    print(f"cores {res['machine']['cores']}, load1 {res['machine']['load1_before']:.2f} -> {res['machine']['load1_after']:.2f}")  # type: ignore[index]
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
