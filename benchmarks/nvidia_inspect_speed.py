#!/usr/bin/env python3
"""``aotwheel inspect`` of large CUDA libraries against ``cat`` and ``cuobjdump``, side by side.

    python benchmarks/nvidia_inspect_speed.py LIB... [--cuobjdump PATH] [--rounds 9] [--out results.json]

Issue 28's goal: inspect of a >= 300 MB CUDA library within 1.5 x ``cat file > /dev/null``, page
cache warm. Per library, after one warm-up of each, ``--rounds`` interleaved rounds of:

- ``cat``: ``cat LIB`` with stdout on /dev/null (a process, as a user runs it);
- ``inspect``: ``aotwheel.inspector.inspect(LIB)`` in this process, with the C scanner
  (aotwheel._fastscan: the installed aotwheel must have it);
- ``cli``: ``python -m aotwheel inspect LIB`` (a process: interpreter start and imports
  included; the text report), ``cli_json``: the same with ``--json``, and ``start``:
  ``python -c "import aotwheel.inspector"``, the part of them that is not reading the library;
and, fewer times (they are slow), ``inspect`` with the Python readers (``AOTWHEEL_NO_FASTSCAN=1``)
and ``cuobjdump --list-elf --list-ptx LIB``. Cubins per architecture from inspect and from
cuobjdump (which lists ``.nv_fatbin`` only) are recorded too. Each measure also records its CPU
seconds (user + system: this process's for inspect, getrusage of the children for the rest),
which other work on a shared machine disturbs less than wall time. Writes the samples as JSON.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CPU: dict[str, list[float]] = collections.defaultdict(list)  # CPU seconds (user + system) per measure


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(args: list[str], key: str | None = None) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    """Wall seconds of ``args`` (stdout on /dev/null for cat, else captured); its CPU seconds go to CPU[key]."""
    with open(os.devnull, "wb") as null:
        c, t = _children_cpu(), time.perf_counter()
        proc = subprocess.run(args, stdout=null if args[0] == "cat" else subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        wall = time.perf_counter() - t
        if key:
            CPU[key].append(_children_cpu() - c)
        return wall, proc


def in_process(path: str, python_only: bool, key: str | None = None) -> tuple[float, Any]:
    from aotwheel.inspector import inspect

    if python_only:
        os.environ["AOTWHEEL_NO_FASTSCAN"] = "1"
    try:
        c, t = time.process_time(), time.perf_counter()
        report = inspect(path)
        wall = time.perf_counter() - t
        if key:
            CPU[key].append(time.process_time() - c)
        return wall, report
    finally:
        os.environ.pop("AOTWHEEL_NO_FASTSCAN", None)


_LISTED = re.compile(r"^ELF file\s+\d+: .*?\.(sm_\d+[af]?)\.cubin$")


def measure(path: str, rounds: int, slow_rounds: int, cuobjdump: str | None) -> dict[str, Any]:
    ms: dict[str, list[float]] = collections.defaultdict(list)
    CPU.clear()
    cli = [sys.executable, "-m", "aotwheel", "inspect", path]
    cli_json = [*cli[:-1], "--json", path]
    start = [sys.executable, "-c", "import aotwheel.inspector"]
    timed(["cat", path]), in_process(path, False), timed(cli), timed(start)  # warm-up: page cache, imports
    for _ in range(rounds):
        ms["cat"].append(timed(["cat", path], "cat")[0])
        seconds, report = in_process(path, False, "inspect")
        ms["inspect"].append(seconds)
        seconds, proc = timed(cli, "cli")
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        ms["cli"].append(seconds)
        seconds, proc = timed(cli_json, "cli_json")
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        ms["cli_json"].append(seconds)
        ms["start"].append(timed(start, "start")[0])
    for _ in range(slow_rounds):
        seconds, python_report = in_process(path, True, "inspect_python")
        ms["inspect_python"].append(seconds)
    assert python_report.to_dict() == report.to_dict(), f"{path}: the C scanner and the Python readers disagree"
    fr = report.files[0]
    ours = collections.Counter(t.arch for t in fr.native_targets if t.vendor == "nvidia")
    # cuobjdump lists .nv_fatbin only, and spells a family-specific cubin sm_100f as sm_100 (measured)
    section = {i.index: i.section for i in fr.images}
    nv = collections.Counter(t.arch.removesuffix("f") for t in fr.native_targets if t.vendor == "nvidia" and section[t.image] == ".nv_fatbin")
    row: dict[str, Any] = {
        "path": path, "bytes": os.path.getsize(path), "images": len(fr.images), "cubins": sum(ours.values()),
        "sections": sorted({i.section for i in fr.images if i.section}), "cubins_by_arch": dict(sorted(ours.items())),
    }
    if cuobjdump:
        listed: collections.Counter[str] = collections.Counter()
        for _ in range(slow_rounds):
            seconds, proc = timed([cuobjdump, "--list-elf", "--list-ptx", path], "cuobjdump")
            ms["cuobjdump"].append(seconds)
        for line in proc.stdout.decode(errors="replace").splitlines():
            m = _LISTED.match(line.strip())
            if m:
                listed[m[1]] += 1
        row["cuobjdump_rc"] = proc.returncode
        row["cuobjdump_cubins_by_arch"] = dict(sorted(listed.items()))
        row["nv_fatbin_cubins_by_arch_as_cuobjdump_spells"] = dict(sorted(nv.items()))
        row["agrees_with_cuobjdump"] = nv == listed
    row["ms"] = {k: [round(x * 1e3, 2) for x in v] for k, v in ms.items()}
    med = {k: statistics.median(v) for k, v in row["ms"].items()}
    row["median_ms"] = {k: round(v, 2) for k, v in med.items()}
    row["cpu_ms"] = {k: [round(x * 1e3, 2) for x in v] for k, v in CPU.items()}
    cpu = {k: statistics.median(v) for k, v in row["cpu_ms"].items()}
    row["median_cpu_ms"] = {k: round(v, 2) for k, v in cpu.items()}
    row["inspect_over_cat"] = round(med["inspect"] / med["cat"], 2)
    row["inspect_over_cat_cpu"] = round(cpu["inspect"] / cpu["cat"], 2)
    row["cli_over_cat"] = round(med["cli"] / med["cat"], 2)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("libs", nargs="+")
    ap.add_argument("--cuobjdump", help="NVIDIA's cuobjdump (tests/.cache/cuda/extracted/nvidia_cuda_cuobjdump-*/nvidia/cu13/bin)")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--slow-rounds", type=int, default=3, help="rounds of the Python readers and of cuobjdump")
    ap.add_argument("--out")
    args = ap.parse_args()
    from aotwheel.formats import fastscan

    if fastscan.module() is None:
        sys.exit("nvidia_inspect_speed: the installed aotwheel has no C scanner (aotwheel._fastscan); pip install the wheel")
    load = os.getloadavg()
    rows = [measure(p, args.rounds, args.slow_rounds, args.cuobjdump) for p in args.libs]
    for r in rows:
        m = r["median_ms"]
        c = r["median_cpu_ms"]
        print(f"{Path(r['path']).name} ({r['bytes'] / 1e6:.0f} MB, {r['cubins']} cubins in {', '.join(r['sections'])}): "
              f"cat {m['cat']:.1f} ms (CPU {c['cat']:.1f}), inspect {m['inspect']:.1f} ms (CPU {c['inspect']:.1f}; "
              f"{r['inspect_over_cat']} x cat, CPU {r['inspect_over_cat_cpu']} x; Python readers "
              f"{m['inspect_python']:.0f} ms), CLI {m['cli']:.0f} ms, --json {m['cli_json']:.0f} ms (interpreter start {m['start']:.0f} ms)"
              + (f", cuobjdump {m['cuobjdump']:.0f} ms (per-arch .nv_fatbin cubins agree: {r['agrees_with_cuobjdump']})"
                 if "cuobjdump" in m else ""))
    if args.out:
        meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version(),
                "machine": platform.machine(), "cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()], "rounds": args.rounds, "slow_rounds": args.slow_rounds}
        Path(args.out).write_text(json.dumps({"meta": meta, "libraries": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
