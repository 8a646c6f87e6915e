#!/usr/bin/env python3
"""The long libFuzzer run of aotwheel._fastscan's C core (csrc/fastscan_core.h), ASan + UBSan.

    python fuzz/fastscan_long.py                  # 300 s
    python fuzz/fastscan_long.py --seconds 3600   # an hour
    python fuzz/fastscan_long.py --json out.json  # also write the figures as JSON

Builds fuzz/fastscan_fuzzer.c with clang-15 (-fsanitize=fuzzer,address,undefined), seeds
tests/.cache/fuzz/fastscan-corpus from real ocloc output (kept and grown across runs: git-ignored)
and runs it; a crash or sanitizer report is written to tests/.cache/fuzz/fastscan-findings/ (the
input, to reproduce with ``fastscan_fuzzer <file>``) and makes the exit status 1. Prints executions,
edges covered (cov), features (ft) and corpus size. The short CI run is tests/test_fuzz_fastscan.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "python")]


def main(argv: list[str] | None = None) -> int:
    import _fastscan_util as fz
    import _fuzz_util as fu

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    work = fu.CACHE / "fastscan"
    work.mkdir(parents=True, exist_ok=True)
    fuzzer = fz.build(work / "fastscan_fuzzer")
    corpus = fu.CACHE / "fastscan-corpus"
    fz.seed_corpus(corpus)
    run = fz.run(fuzzer, corpus, fu.CACHE / "fastscan-findings", f"-max_total_time={a.seconds}", f"-seed={a.seed}",
                 "-timeout=10", "-rss_limit_mb=2048", "-max_len=65536", timeout=a.seconds + 600)
    figures = {"seconds": run.seconds, "execs": run.execs, "execs_per_s": run.execs // max(1, run.seconds), "cov": run.cov, "ft": run.ft,
               "corpus": run.corpus, "findings": run.findings, "returncode": run.returncode}
    print(json.dumps(figures, indent=1))
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if run.returncode == 0 and not run.findings else 1


if __name__ == "__main__":
    sys.exit(main())
