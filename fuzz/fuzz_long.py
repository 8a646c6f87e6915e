#!/usr/bin/env python3
"""The long parser-fuzzing run (issue 7.2): N mutated inputs per parser, seeded from real binaries.

    python fuzz/fuzz_long.py                       # 100000 inputs for each parser
    python fuzz/fuzz_long.py -n 2000 ar zstd       # a quick run of two parsers
    python fuzz/fuzz_long.py --json out.json       # also write the counts as JSON

Each parser runs in its own child process under ``RLIMIT_AS`` (default 2 GiB: a parser that
allocates what a hostile size field claims dies with MemoryError, which counts as a finding) and a
per-input time guard (default 2 s, SIGALRM). A finding is any exception other than
``InspectError``, a multi-line ``InspectError``, or an input past the time guard; each distinct
(exception, innermost aotwheel frame) is reported once with its count and a reproducer written
to ``--out`` (default tests/.cache/fuzz/findings/, git-ignored). Mutations come from ``random.Random(seed)``: a run is
reproducible from its seed. The short CI version is tests/test_fuzz_*.py (hypothesis).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "python")]


def worker(name: str, count: int, seed: int, guard_s: float, out: Path) -> dict:
    """Fuzz one parser in this process; returns counts and distinct findings."""
    import _fuzz_util as fu

    target = fu.TARGETS[name]
    seeds = fu.load_seeds(target)
    spots = [fu.hot_spots(s) for s in seeds]
    rng = random.Random(f"{seed}:{name}")
    findings: dict[str, dict] = {}
    rejected = accepted = 0
    slowest = 0.0
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as tmp:
        scratch = Path(tmp, "input.bin")
        # The unmutated seeds must parse: otherwise the run measures nothing.
        for s in seeds:
            outcome = fu.classify(target, s, scratch, guard_s)
            if outcome != ("accepted", None):
                raise SystemExit(f"{name}: the unmutated seed does not parse: {outcome}")
        t_start = time.perf_counter()
        for i in range(count):
            k = i % len(seeds)
            data = fu.apply(seeds[k], fu.random_ops(rng, len(spots[k])), spots[k])
            t0 = time.perf_counter()
            outcome, f = fu.classify(target, data, scratch, guard_s)
            slowest = max(slowest, time.perf_counter() - t0)
            if f is None:
                accepted += outcome == "accepted"
                rejected += outcome == "rejected"
                continue
            key = f"{f.error.split(':')[0]} at {f.where}"
            entry = findings.setdefault(key, {"count": 0, "example": f.error, "reproducer": None})
            entry["count"] += 1
            if entry["reproducer"] is None:
                out.mkdir(parents=True, exist_ok=True)
                path = out / f"{name}-{len(findings)}.bin"
                path.write_bytes(data)
                entry["reproducer"] = str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
        elapsed = time.perf_counter() - t_start
    return {"parser": name, "inputs": count, "seeds": len(seeds), "seconds": round(elapsed, 1),
            "accepted": accepted, "rejected": rejected, "findings": findings,
            "slowest_s": round(slowest, 3),
            "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _limit_memory(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str] | None = None) -> int:
    import _fuzz_util as fu

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("parsers", nargs="*", help=f"default: all ({', '.join(fu.TARGETS)})")
    p.add_argument("-n", "--count", type=int, default=100_000, help="inputs per parser (default 100000)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--guard", type=float, default=2.0, help="per-input time guard in seconds")
    p.add_argument("--memory", type=int, default=2048, help="RLIMIT_AS per parser process, MiB")
    p.add_argument("--out", type=Path, default=REPO / "tests" / ".cache" / "fuzz" / "findings")
    p.add_argument("--json", type=Path)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        print(json.dumps(worker(a.worker, a.count, a.seed, a.guard, a.out)))
        return 0
    names = a.parsers or list(fu.TARGETS)
    results = []
    for name in names:
        try:
            fu.load_seeds(fu.TARGETS[name])  # make seeds here, outside the memory limit
        except fu.MissingTool as exc:
            print(f"{name}: skipped ({exc})", flush=True)
            continue
        cmd = [sys.executable, __file__, "--worker", name, "-n", str(a.count), "--seed", str(a.seed),
               "--guard", str(a.guard), "--out", str(a.out)]
        env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              preexec_fn=lambda: _limit_memory(a.memory << 20))
        if proc.returncode != 0:
            results.append({"parser": name, "inputs": a.count, "crashed": proc.returncode, "stderr": proc.stderr[-2000:]})
            print(f"{name}: worker died (exit {proc.returncode}): {proc.stderr[-500:]}", flush=True)
            continue
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        results.append(res)
        found = sum(f["count"] for f in res["findings"].values())
        print(f"{name}: {res['inputs']} inputs in {res['seconds']} s, {res['rejected']} rejected with InspectError, "
              f"{res['accepted']} accepted, {found} findings ({len(res['findings'])} distinct), "
              f"slowest {res['slowest_s']} s, max RSS {res['max_rss_mib']} MiB", flush=True)
        for key, f in res["findings"].items():
            print(f"    {f['count']:6d}  {key}: {f['example'][:160]}  [{f['reproducer']}]", flush=True)
    if a.json:
        a.json.write_text(json.dumps({"count_per_parser": a.count, "seed": a.seed, "guard_s": a.guard,
                                      "memory_mib": a.memory, "results": results}, indent=2) + "\n")
    return 1 if any(r.get("findings") or r.get("crashed") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
