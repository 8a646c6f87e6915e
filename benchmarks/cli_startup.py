#!/usr/bin/env python3
"""CLI start-up: what ``import aotwheel`` and short ``aotwheel`` commands cost over starting Python.

    python -m benchmarks.cli_startup [--runs 3] [--rounds 20] [--python PY] [--pythonpath DIR] [--lib SO] [--out FILE.json]

The rows, side by side in one run: ``python -c pass``, ``python -c "import aotwheel"``, and the
commands of issue 40's budget through the console script pip installs beside PY (what users type):
``aotwheel inspect LIB``, ``aotwheel check --device pvc LIB``, ``aotwheel resolve`` (the default
device list), ``aotwheel resolve pvc``, ``aotwheel --version`` and ``aotwheel compile --help``
(and ``python -m aotwheel inspect LIB``, shown apart: ``-m`` adds runpy to any package),
where LIB is this repository's own default-built extension, the installed ``aotwheel._kernels``
(``--lib`` names another). Each run interleaves the rows round by round (one sample of each per
round, after one warm-up round, so that a change of machine load hits every row alike) and keeps
each row's median wall and CPU (user + system) time; ``--runs`` such runs (default 3) one after
the other give each row its medians side by side, each with its ratio to that run's ``python -c
pass``. Per row also the modules it imports (``-X importtime``: their count and the aotwheel ones).

Goals (issue 40): ``import aotwheel`` ≤ 5 ms of wall time over ``python -c pass``; each command ≤ 4
× ``python -c pass``; both by the medians of every run. No test asserts a time.
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
COMMAND_GOAL = 4.0  # × python -c pass
IMPORT_GOAL_MS = 5.0  # over python -c pass
BASE = "python -c pass"
IMPORT = "import aotwheel"


def installed_extension(python: str, env: dict[str, str]) -> Path:
    """The ``aotwheel._kernels`` extension installed for ``python`` (not a source tree's: it has none)."""
    code = "import importlib.util as u; s = u.find_spec('aotwheel._kernels'); print(s.origin if s else '')"
    clean = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    found = subprocess.run([python, "-c", code], capture_output=True, text=True, env=clean, check=False).stdout.strip()
    if not found:
        raise SystemExit(f"{python}: no installed aotwheel._kernels; install aotwheel built with its default device list "
                         "(pip install .) or pass --lib")
    return Path(found)


def commands(python: str, lib: Path) -> dict[str, list[str]]:
    """The rows, by label: argument lists (no shell)."""
    script = Path(python).parent / "aotwheel"  # pip's console script for this interpreter
    if not script.is_file():
        raise SystemExit(f"{script}: no aotwheel console script beside {python}; install aotwheel into that environment (pip install .)")
    return {
        BASE: [python, "-c", "pass"],
        IMPORT: [python, "-c", "import aotwheel"],
        "aotwheel inspect LIB": [str(script), "inspect", str(lib)],
        # `-m` adds runpy and its imports to any package's start-up: shown, not a goal
        "python -m aotwheel inspect LIB": [python, "-m", "aotwheel", "inspect", str(lib)],
        "aotwheel check --device pvc LIB": [str(script), "check", "--device", "pvc", str(lib)],
        "aotwheel resolve": [str(script), "resolve"],
        "aotwheel resolve pvc": [str(script), "resolve", "pvc"],
        "aotwheel --version": [str(script), "--version"],
        "aotwheel compile --help": [str(script), "compile", "--help"],
    }


def _sample(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one run."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # Exit status 1 is a verdict (check: a device that cannot load the library), not a failure.
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    wall = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall * 1e3, (after.ru_utime + after.ru_stime - ru.ru_utime - ru.ru_stime) * 1e3


def importtime(cmd: list[str], env: dict[str, str]) -> dict[str, object]:
    """Modules ``cmd`` imports (``-X importtime``): how many, which aotwheel ones, and the
    cumulative µs of the top-level ``aotwheel`` package (what ``import aotwheel`` itself costs,
    free of the noise of two wall-time medians' difference on a busy machine)."""
    python = cmd[0] if not cmd[0].endswith("/aotwheel") else str(Path(cmd[0]).parent / "python")  # a console script: its interpreter runs it
    args = cmd[1:] if python == cmd[0] else cmd
    proc = subprocess.run([python, "-X", "importtime", *args], capture_output=True, text=True, env=env, check=False)
    rows = [line[len("import time:"):].split("|") for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "cumulative" not in line]
    modules = [name.strip() for _self, _cumulative, name in rows]
    aotwheel_us = next((int(cumulative) for _self, cumulative, name in rows if name.strip() == "aotwheel"), None)
    return {"modules": len(modules), "aotwheel_modules": sorted(m for m in modules if m.startswith("aotwheel")),
            "import_aotwheel_us": aotwheel_us}


def one_run(rows: dict[str, list[str]], env: dict[str, str], rounds: int) -> dict[str, dict[str, float]]:
    """Each row's median wall and CPU milliseconds over ``rounds`` interleaved rounds."""
    for cmd in rows.values():  # warm-up: page cache, .pyc files
        _sample(cmd, env)
    wall: dict[str, list[float]] = {label: [] for label in rows}
    cpu: dict[str, list[float]] = {label: [] for label in rows}
    for _ in range(rounds):
        for label, cmd in rows.items():
            w, c = _sample(cmd, env)
            wall[label].append(w)
            cpu[label].append(c)
    return {label: {"wall_ms": statistics.median(wall[label]), "cpu_ms": statistics.median(cpu[label])} for label in rows}


def run(python: str, runs: int, rounds: int, lib: Path | None = None, pythonpath: str | None = None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AOTWHEEL_", "PYTHON", "USE_AOT_"))}
    env.update(AOTWHEEL_JIT="ignore", **({"PYTHONPATH": pythonpath} if pythonpath else {}))
    lib = lib or installed_extension(python, env)
    rows = commands(python, lib)
    before = os.getloadavg()[0]
    measured = [one_run(rows, env, rounds) for _ in range(runs)]
    after = os.getloadavg()[0]
    out_rows: dict[str, dict[str, object]] = {}
    for label, cmd in rows.items():
        walls = [m[label]["wall_ms"] for m in measured]
        ratios = [m[label]["wall_ms"] / m[BASE]["wall_ms"] for m in measured]
        out_rows[label] = {"wall_median_ms": walls, "cpu_median_ms": [m[label]["cpu_ms"] for m in measured],
                           "over_pass": ratios, "over_pass_ms": [m[label]["wall_ms"] - m[BASE]["wall_ms"] for m in measured],
                           **importtime(cmd, env)}
    goals: dict[str, dict[str, object]] = {}
    over = out_rows[IMPORT]["over_pass_ms"]
    goals[IMPORT] = {"measure": "wall ms over python -c pass", "value": over, "goal": IMPORT_GOAL_MS,
                     "met": all(v <= IMPORT_GOAL_MS for v in over),  # type: ignore[attr-defined]
                     "import_aotwheel_us": out_rows[IMPORT]["import_aotwheel_us"]}
    for label in rows:
        if label.startswith("aotwheel "):
            ratio = out_rows[label]["over_pass"]
            goals[label] = {"measure": "× python -c pass", "value": ratio, "goal": COMMAND_GOAL,
                            "met": all(v <= COMMAND_GOAL for v in ratio)}  # type: ignore[attr-defined]
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python -m benchmarks.cli_startup " + " ".join(sys.argv[1:]),
        "python": subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                                 text=True, check=True).stdout.strip(),
        "library": str(lib),
        "library_bytes": lib.stat().st_size,
        "pythonpath": pythonpath,
        "runs": runs,
        "rounds": rounds,
        "machine": {"cores": os.cpu_count(), "load1_before": before, "load1_after": after},
        "rows": out_rows,
        "goals": goals,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs, one after the other (each row's median per run)")
    ap.add_argument("--rounds", type=int, default=20, help="interleaved samples of each row per run")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose aotwheel is measured")
    ap.add_argument("--lib", type=Path, help="the library inspect and check read (default: the installed aotwheel._kernels)")
    ap.add_argument("--pythonpath", help="PYTHONPATH for the commands (an aotwheel tree to measure instead of the installed one)")
    ap.add_argument("--out", type=Path, help="write the result as JSON here")
    args = ap.parse_args(argv)
    res = run(args.python, args.runs, args.rounds, args.lib.resolve() if args.lib else None, args.pythonpath)
    rows: dict[str, dict[str, list[float]]] = res["rows"]  # type: ignore[assignment]
    for label, row in rows.items():
        walls = " / ".join(f"{v:6.2f}" for v in row["wall_median_ms"])
        ratios = " / ".join(f"{v:.2f}" for v in row["over_pass"])
        print(f"{label:34s} wall medians {walls} ms  × pass {ratios}  {row['modules']} modules")
    goals: dict[str, dict[str, object]] = res["goals"]  # type: ignore[assignment]
    for label, goal in goals.items():
        values = " / ".join(f"{v:.2f}" for v in goal["value"])  # type: ignore[attr-defined]
        own = f"; -X importtime: {goal['import_aotwheel_us']} µs" if "import_aotwheel_us" in goal else ""
        print(f"{label}: {values} ({goal['measure']}; goal ≤ {goal['goal']}{own}) {'met' if goal['met'] else 'MISSED'}")
    machine: dict[str, float] = res["machine"]  # type: ignore[assignment]
    print(f"cores {machine['cores']}, load1 {machine['load1_before']:.2f} -> {machine['load1_after']:.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
