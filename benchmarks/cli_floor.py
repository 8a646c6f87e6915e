#!/usr/bin/env python3
"""What issue 40's CLI budget (each command ≤ 4 × ``python -c pass``) leaves to aotwheel once the
standard library the commands must use is loaded, and how far the records' cost goes.

    python -m benchmarks.cli_floor [--runs 3] [--rounds 20] [--out FILE.json]

The rows, side by side in one run (interleaved rounds, medians, as benchmarks/cli_startup):
``python -c pass``; the floors ``import argparse, json``, ``+ dataclasses`` (which imports
``inspect``, ``ast``, ``dis``, ``tokenize``) and ``+ zstandard`` (what reading compressed images
needs; it imports ``platform`` and, before Python 3.12, ``typing``); then ``inspect LIB``,
``check --device pvc LIB`` and ``resolve``, each twice through the same ``python -c`` launcher:
as they are, and with every dataclass generated with its ``__init__`` only (no ``__repr__``,
``__eq__``, ``__hash__`` or frozen ``__setattr__``: dataclasses' private ``_process_class`` patched
for this experiment only), a lower bound for anything that makes the records cheaper to define
while they stay dataclasses. LIB is the installed ``aotwheel._kernels``. No test asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.cli_startup import BASE, COMMAND_GOAL, installed_extension, one_run

LAUNCH = ("import sys; sys.argv = ['aotwheel', *sys.argv[1:]]\n"
          "from aotwheel.cli import main\n"
          "sys.exit(main())")
# dataclasses._process_class(cls, init, repr, eq, order, unsafe_hash, frozen, match_args, kw_only,
# slots, weakref_slot) on Python 3.11-3.14: keep init, drop every other generated method.
INIT_ONLY = ("import dataclasses as d\n_p = d._process_class\n"
             "d._process_class = lambda cls, init, _r, _e, _o, _u, _f, *rest: _p(cls, init, False, False, False, False, False, *rest)\n")
FLOORS = {"import argparse, json": "import argparse, json",
          "import argparse, json, dataclasses": "import argparse, json, dataclasses",
          "import argparse, json, dataclasses, zstandard": "import argparse, json, dataclasses, zstandard"}


def rows(python: str, lib: Path) -> dict[str, list[str]]:
    out = {BASE: [python, "-c", "pass"], **{label: [python, "-c", code] for label, code in FLOORS.items()}}
    for label, args in (("inspect LIB", ["inspect", str(lib)]), ("check --device pvc LIB", ["check", "--device", "pvc", str(lib)]),
                        ("resolve", ["resolve"])):
        out[f"aotwheel {label}"] = [python, "-c", LAUNCH, *args]
        out[f"aotwheel {label}, records __init__ only"] = [python, "-c", INIT_ONLY + LAUNCH, *args]
    return out


def same_answers(commands: dict[str, list[str]], env: dict[str, str]) -> None:
    """Each command answers the same with its records ``__init__`` only (the experiment measures
    the same work), else SystemExit naming the command."""
    for label, cmd in commands.items():
        if label.endswith(", records __init__ only"):
            plain = commands[label.removesuffix(", records __init__ only")]
            a, b = (subprocess.run(c, capture_output=True, text=True, env=env, check=False) for c in (plain, cmd))
            if (a.returncode, a.stdout) != (b.returncode, b.stdout) or a.returncode not in (0, 1):
                raise SystemExit(f"{label}: answers differently from the command as it is (exit {a.returncode} vs {b.returncode}): "
                                 f"{(b.stderr or b.stdout)[-500:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs, one after the other (each row's median per run)")
    ap.add_argument("--rounds", type=int, default=20, help="interleaved samples of each row per run")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose aotwheel is measured")
    ap.add_argument("--out", type=Path, help="write the result as JSON here")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AOTWHEEL_", "PYTHON", "USE_AOT_"))}
    env["AOTWHEEL_JIT"] = "ignore"
    commands = rows(args.python, installed_extension(args.python, env))
    same_answers(commands, env)
    before = os.getloadavg()[0]
    measured = [one_run(commands, env, args.rounds) for _ in range(args.runs)]
    result: dict[str, object] = {"command": "python -m benchmarks.cli_floor " + " ".join(sys.argv[1:]),
                                 "python": sys.version.split()[0], "runs": args.runs, "rounds": args.rounds,
                                 "machine": {"cores": os.cpu_count(), "load1_before": before, "load1_after": os.getloadavg()[0]},
                                 "goal_over_pass": COMMAND_GOAL, "rows": {}}
    for label in commands:
        walls = [m[label]["wall_ms"] for m in measured]
        ratios = [m[label]["wall_ms"] / m[BASE]["wall_ms"] for m in measured]
        result["rows"][label] = {"wall_median_ms": walls, "over_pass": ratios}  # type: ignore[index]
        print(f"{label:58s} {' / '.join(f'{w:6.2f}' for w in walls)} ms  × pass {' / '.join(f'{r:.2f}' for r in ratios)}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
