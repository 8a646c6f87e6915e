#!/usr/bin/env python3
"""What the nvcc and hipcc steps' cache costs and saves: each (source, target) is keyed by the
compile's own command run with ``-E`` (:mod:`aotwheel.buildsteps.preprocess`), so a fully cached
build still runs the preprocessor once per edge.

    python -m benchmarks.vendor_cache [--runs 3] [--out benchmarks/results/vendor_cache.json]

Per vendor whose compiler is installed, a CMake + ninja project of this checkout: NVIDIA, the four
``csrc/kernels/*.cl`` through ``aotwheel_add_cuda_device_code(TARGETS sm_80 sm_90 ptx)`` (12
compile edges); AMD, ``csrc/hip/elementwise.hip`` through ``aotwheel_add_hip_device_code`` for
gfx906, gfx908, gfx90a and gfx1030 (4 edges). Each run times ``ninja`` (configure apart) in a fresh
build tree three ways, side by side: ``cold`` (an empty cache: preprocess, compile, store),
``cached`` (the cache ``cold`` filled: preprocess and hit) and ``no cache`` (``AOTWHEEL_CACHE_DIR=off``:
compile only, no key made). No test asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STUB = "int bench_nothing(void) { return 0; }\n"
PROJECTS = {
    "nvidia": ('aotwheel_add_cuda_device_code(k NAME kernels TARGETS sm_80 sm_90 ptx SOURCES {sources})',
               sorted((REPO / "csrc" / "kernels").glob("*.cl")), "nvcc"),
    "amd": ('aotwheel_add_hip_device_code(k NAME kernels TARGETS gfx906 gfx908 gfx90a gfx1030 SOURCES {sources})',
            [REPO / "csrc" / "hip" / "elementwise.hip"], "hipcc"),
}
ROWS = ("cold", "cached", "no cache")


def project(src: Path, vendor: str) -> None:
    call, sources, _ = PROJECTS[vendor]
    src.mkdir(parents=True)
    (src / "stub.c").write_text(STUB)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(bench LANGUAGES C)\n"
        f'find_package(aotwheel CONFIG REQUIRED PATHS "{REPO / "cmake"}" NO_DEFAULT_PATH)\n'
        "add_library(k MODULE stub.c)\n" + call.format(sources=" ".join(f'"{s}"' for s in sources)) + "\n")


def ninja_seconds(src: Path, bld: Path, cache: str) -> float:
    """Configure ``src`` into ``bld``, then the wall seconds of ``ninja`` alone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_")) or k == "AOTWHEEL_NVCC"}
    env.update(AOTWHEEL_CACHE_DIR=cache, AOTWHEEL_CLANG="/nonexistent", AOTWHEEL_OCLOC="/nonexistent")
    subprocess.run(["cmake", "-S", str(src), "-B", str(bld), "-G", "Ninja", f"-DPython_EXECUTABLE={sys.executable}"],
                   check=True, capture_output=True, env=env)
    t = time.perf_counter()
    subprocess.run(["ninja", "-C", str(bld)], check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def measure(vendor: str, runs: int, work: Path) -> dict[str, object]:
    src = work / vendor / "src"
    project(src, vendor)
    samples: dict[str, list[float]] = {row: [] for row in ROWS}
    for run in range(runs):
        cache = work / vendor / f"cache{run}"
        samples["cold"].append(ninja_seconds(src, work / vendor / f"cold{run}", str(cache)))
        samples["cached"].append(ninja_seconds(src, work / vendor / f"cached{run}", str(cache)))
        samples["no cache"].append(ninja_seconds(src, work / vendor / f"off{run}", "off"))
    hits = sum(1 for ln in (work / vendor / "cache0" / "v2" / "events.log").read_text().splitlines() if ln.startswith("hit "))
    medians = {row: statistics.median(v) for row, v in samples.items()}
    compiler = os.environ.get("AOTWHEEL_NVCC") if vendor == "nvidia" else shutil.which("hipcc")
    return {"compiler": compiler, "hits_per_cached_build": hits, "seconds": samples,
            "median_s": medians, "cached_over_cold": medians["cached"] / medians["cold"],
            "cached_over_no_cache": medians["cached"] / medians["no cache"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the result as JSON here")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "python"))
    from aotwheel.backends.nvidia.nvcc import find_nvcc
    from aotwheel.errors import ToolchainError

    try:
        os.environ.setdefault("AOTWHEEL_NVCC", find_nvcc().path)  # the nvcc aotwheel finds (PyPI's), for CMake's steps too
        vendors = ["nvidia"]
    except ToolchainError:
        vendors = []
    vendors += ["amd"] if shutil.which("hipcc") else []
    result: dict[str, object] = {"command": "python -m benchmarks.vendor_cache " + " ".join(sys.argv[1:]), "runs": args.runs,
                                 "cores": os.cpu_count(), "vendors": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for vendor in vendors:
            row = measure(vendor, args.runs, Path(tmp))
            result["vendors"][vendor] = row  # type: ignore[index]
            med: dict[str, float] = row["median_s"]  # type: ignore[assignment]
            print(f"{vendor}: " + ", ".join(f"{k} {v:.2f} s" for k, v in med.items())
                  + f"; cached/cold {row['cached_over_cold']:.2f}, cached/no cache {row['cached_over_no_cache']:.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
