#!/usr/bin/env python3
"""Time ``inspect()`` on NVIDIA libraries against reading the same file (page cache warm).

    PYTHONPATH=python python3 benchmarks/nvidia_sections.py LIB... [--runs 9] [--out results.json]

Per library: median (min, max) of ``inspect(path)`` and of reading every byte with 16 MiB
``read()`` calls, alternating, after one warm-up of each; and the median of 3 ``inspect(path,
deep=True)``. Prints one line per library and, with --out, writes the samples as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path


def read_all(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def measure(path: str, runs: int) -> dict[str, object]:
    from aotwheel.inspector import inspect

    inspect(path)
    read_all(path)
    ins, rd = [], []
    for _ in range(runs):
        t = time.perf_counter()
        report = inspect(path)
        ins.append(time.perf_counter() - t)
        t = time.perf_counter()
        read_all(path)
        rd.append(time.perf_counter() - t)
    deep = []
    for _ in range(3):
        t = time.perf_counter()
        inspect(path, deep=True)
        deep.append(time.perf_counter() - t)
    f = report.files[0]
    return {"path": path, "bytes": os.path.getsize(path), "images": len(f.images),
            "cubins": sum(1 for t in f.native_targets if t.vendor == "nvidia"),
            "sections": sorted({i.section for i in f.images if i.section}),
            "inspect_ms": [round(x * 1e3, 1) for x in ins], "read_ms": [round(x * 1e3, 1) for x in rd],
            "deep_ms": [round(x * 1e3, 1) for x in deep]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("libs", nargs="+")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--out")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    rows = [measure(p, args.runs) for p in args.libs]
    for r in rows:
        med = {k: statistics.median(r[k]) for k in ("inspect_ms", "read_ms", "deep_ms")}  # type: ignore[arg-type]
        print(f"{Path(str(r['path'])).name}: {r['bytes']} B, {r['cubins']} cubins in {', '.join(r['sections'])}; "  # type: ignore[arg-type]
              f"inspect {med['inspect_ms']:.0f} ms ({min(r['inspect_ms']):.0f}-{max(r['inspect_ms']):.0f}), "  # type: ignore[type-var,arg-type]
              f"read {med['read_ms']:.0f} ms ({min(r['read_ms']):.0f}-{max(r['read_ms']):.0f}), deep {med['deep_ms']:.0f} ms")  # type: ignore[type-var,arg-type]
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
