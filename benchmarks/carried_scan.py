#!/usr/bin/env python3
"""The search for library-loaded device images (aotwheel.carried, issue 39) on large libraries:
what it costs inside ``inspect()`` and the whole ``inspect()`` against ``cat``, warm and cold.

    python benchmarks/carried_scan.py LIB... [--rounds 5] [--out results.json]

Per library and round (interleaved): ``cat LIB > /dev/null`` (a process) and
``aotwheel.inspector.inspect(LIB)`` in this process, page cache warm; the same two with the file's
pages dropped first (``posix_fadvise(POSIX_FADV_DONTNEED)``, this file only); and the search alone
(``carried.scan`` over the already inspected report, C scanner, then the Python readers with
``AOTWHEEL_NO_FASTSCAN=1``). Records the bytes searched (data sections outside the registered
images, gaps of at least 128 bytes), the magic matches and the images kept. Writes JSON.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _drop(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _cat(path: str) -> float:
    t = time.perf_counter()
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def _inspect(path: str) -> float:
    from aotwheel.inspector import inspect

    t = time.perf_counter()
    inspect(path)
    return time.perf_counter() - t


def _scan_alone(path: str) -> dict[str, Any]:
    """carried.scan timed alone (C, then Python), over the registered images inspect found."""
    from aotwheel import carried
    from aotwheel.formats.elf import open_elf
    from aotwheel.formats.region import Region
    from aotwheel.inspector import _readers, _Walk, inspect

    (fr,) = inspect(path).files
    readers = _readers()
    out: dict[str, Any] = {}
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        region = Region(mm, path)
        view = open_elf(region)
        sections = carried.data_sections(view, readers.own_sections)
        spans = carried._spans(fr, 0, {s.name for s in sections})
        gaps = [(a, b) for s in sections
                for a, b in carried._gaps(spans, s.offset, s.offset + s.size) if b - a >= carried._MIN_IMAGE]
        out["bytes_searched"] = sum(b - a for a, b in gaps)
        out["matches"] = sum(len(carried._hits(mm, a, b, tuple(m for m, _ in readers.carried), 1 << 20)) for a, b in gaps)
        for mode, env in (("c", None), ("python", "1")):
            if env:
                os.environ["AOTWHEEL_NO_FASTSCAN"] = env
            t = time.perf_counter()
            found = carried.scan(region, view, fr, readers.carried, readers.own_sections, lambda r: _Walk(r, False, readers, {}))
            out[f"scan_ms_{mode}"] = round((time.perf_counter() - t) * 1e3, 2)
            os.environ.pop("AOTWHEEL_NO_FASTSCAN", None)
            out["carried_images"] = 0 if found is None else len(found.images)
        del view, region
        mm.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("libs", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    result: dict[str, Any] = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version(),
                                       "cpus": os.cpu_count(), "loadavg_before": os.getloadavg(), "rounds": args.rounds}, "libraries": []}
    for lib in args.libs:
        _inspect(lib)  # imports and one warm read
        ms: dict[str, list[float]] = {"cat": [], "inspect": [], "cat_cold": [], "inspect_cold": []}
        for _ in range(args.rounds):
            ms["cat"].append(_cat(lib) * 1e3)
            ms["inspect"].append(_inspect(lib) * 1e3)
            _drop(lib)
            ms["cat_cold"].append(_cat(lib) * 1e3)
            _drop(lib)
            ms["inspect_cold"].append(_inspect(lib) * 1e3)
            _cat(lib)  # warm again for the next round
        med = {k: round(statistics.median(v), 1) for k, v in ms.items()}
        row = {"path": lib, "bytes": Path(lib).stat().st_size, "ms": {k: [round(x, 1) for x in v] for k, v in ms.items()}, "median_ms": med,
               "inspect_over_cat": round(med["inspect"] / med["cat"], 2), "inspect_over_cat_cold": round(med["inspect_cold"] / med["cat_cold"], 2),
               **_scan_alone(lib)}
        result["libraries"].append(row)
        print(f"{Path(lib).name} ({row['bytes'] / 1e6:.0f} MB): warm cat {med['cat']} ms, inspect {med['inspect']} ms "
              f"({row['inspect_over_cat']} x); cold cat {med['cat_cold']} ms, inspect {med['inspect_cold']} ms ({row['inspect_over_cat_cold']} x); "
              f"search {row['bytes_searched'] / 1e6:.1f} MB, {row['matches']} matches, {row['carried_images']} images, "
              f"{row['scan_ms_c']} ms (Python {row['scan_ms_python']} ms)", flush=True)
    result["meta"]["loadavg_after"] = os.getloadavg()
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
