"""Two checkouts' ``aotwheel.inspect`` side by side on one file: which code is faster, on this machine, now.

    git worktree add /tmp/base <rev>            # the code to compare against, with its C scanner built:
    gcc -shared -fPIC -O2 -I"$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \\
        /tmp/base/csrc/_fastscan.c -o /tmp/base/python/aotwheel/_fastscan.abi3.so
    python -m benchmarks.inspect_ab /tmp/base . benchmarks/.cache/libmkl_sycl.so.3 --json ab.json

The machine's speed moves by 20-40% within an hour, so a figure from an earlier run says little
about a change: here each tree runs in its own process (``inspect`` after one warm-up call, page
cache warm), the two alternate, and which goes first alternates too; the result is each tree's
median (and quartile, min) over all its calls, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1] + "/python")
import aotwheel
aotwheel.inspect(sys.argv[2])
out = []
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter()
    aotwheel.inspect(sys.argv[2])
    out.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"file": aotwheel.__file__, "ms": out}))
"""


def compare(trees: list[Path], path: Path, rounds: int, calls: int) -> dict:
    """Each tree's inspect times (ms) over ``rounds`` alternating processes of ``calls`` calls."""
    ms: dict[str, list[float]] = {str(t): [] for t in trees}
    for r in range(rounds):
        for tree in trees if r % 2 == 0 else trees[::-1]:
            proc = subprocess.run([sys.executable, "-c", _CHILD, str(tree), str(path), str(calls)], capture_output=True, text=True, check=True)
            got = json.loads(proc.stdout)
            if not got["file"].startswith(str(tree)):
                raise SystemExit(f"inspect_ab: {tree} imported aotwheel from {got['file']}; pass a checkout with python/aotwheel")
            ms[str(tree)] += got["ms"]
    summary = {t: {"median_ms": statistics.median(v), "p25_ms": sorted(v)[len(v) // 4], "min_ms": min(v), "calls": len(v)}
               for t, v in ms.items()}
    first, second = (summary[str(t)]["median_ms"] for t in trees)
    return {"file": str(path), "rounds": rounds, "calls_per_round": calls, "trees": summary, "ratio_second_to_first": second / first}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first", type=Path, help="a checkout (the base)")
    ap.add_argument("second", type=Path, help="another checkout (the change)")
    ap.add_argument("file", type=Path, help="the binary to inspect")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    result = compare([a.first.resolve(), a.second.resolve()], a.file, a.rounds, a.calls)
    text = json.dumps(result, indent=1)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
