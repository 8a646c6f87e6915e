#!/usr/bin/env python3
"""Native coverage planning (issue 36): images, ocloc seconds and bytes for a current-client list,
against one image per device, with the same native coverage.

    /work/sidrun '... .venv/bin/python benchmarks/coverage.py --json benchmarks/results/coverage.json'

Needs an ocloc that builds the list (25.27+; Debian sid's 26.x) and, for the coverage check, the
Intel OpenCL driver (intel-opencl-icd) in simulation mode. The list is
``bmg-g21,bmg-g31,lnl-m,ptl-h,ptl-u,wcl``; two plans:

- ``coverage``: ``USE_AOT_MIN_DRIVER=26.05`` (the release that serves wcl): what the planner chooses;
- ``per_device``: ``USE_AOT_MIN_DRIVER=24.45`` (before any mapping shares an image): one image per
  device, members ``64.<ip>``, as aotwheel built before.

Per plan: ``aotwheel compile`` of the benchmark workload's SPIR-V (``benchmarks/workload.py``, the
files of ``--kernels``/``--files``) with the device-code cache off and one job (``-j 1``), so the
CPU seconds of its children are ocloc's alone; the fat binaries' bytes raw and as the build embeds
them (one zstd frame, level :data:`IMAGE_LEVEL`); ``pip wheel`` of the same workload as a
scikit-build-core project (this checkout's CMake and build steps, a fresh cache): wall seconds,
CPU seconds of the build and the wheel's bytes (and its bytes with ``USE_AOT_COMPRESS=OFF``); and, for every device of the list, what the driver
(simulating it) does with the first source's fat binary. No test asserts any timing here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from aotwheel.formats.zstd import IMAGE_LEVEL  # noqa: E402
from benchmarks.project import tool_env, write_project  # noqa: E402
from benchmarks.timing import child_cpu  # noqa: E402

DEVICES = ["bmg-g21", "bmg-g31", "lnl-m", "ptl-h", "ptl-u", "wcl"]
PLANS = {"coverage": "26.05", "per_device": "24.45"}

def _tools() -> tuple[str, str]:
    for major in range(19, 14, -1):
        if shutil.which(f"clang-{major}") and shutil.which(f"llvm-spirv-{major}"):
            return f"clang-{major}", f"llvm-spirv-{major}"
    raise SystemExit("needs clang-N and llvm-spirv-N")


def _spirv(src: Path, work: Path) -> Path:
    clang, llvm_spirv = _tools()
    bc, spv = work / f"{src.stem}.bc", work / f"{src.stem}.spv"
    subprocess.run([clang, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)], check=True)
    subprocess.run([llvm_spirv, str(bc), "-o", str(spv)], check=True)
    return spv


def _driver(binary: Path, device: str) -> str:
    from aotwheel.backends.intel.simulate import BY_NAME, OPENCL, judge

    answer = judge(BY_NAME[device], [binary], apis=(OPENCL,))
    return answer.error or str(answer.outcome(binary))


def compile_row(spvs: list[Path], floor: str, work: Path) -> dict:
    """``aotwheel compile`` of every SPIR-V for the list, cache off, one job: ocloc's CPU seconds."""
    import zstandard

    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "AOTWHEEL_CACHE_DIR": "off", "USE_AOT_MIN_DRIVER": floor}
    cpu0, t0 = child_cpu(), time.perf_counter()
    raw = packed = 0
    report = {}
    for spv in spvs:
        out = work / f"{spv.stem}-{floor}.ar"
        proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", ",".join(DEVICES), "-j", "1", "--json",
                               "-o", str(out)], capture_output=True, text=True, env=env, check=True)
        report = json.loads(proc.stdout)
        data = out.read_bytes()
        raw += len(data)
        packed += len(zstandard.ZstdCompressor(level=IMAGE_LEVEL, write_content_size=True, write_checksum=True).compress(data))
    wall, cpu = time.perf_counter() - t0, child_cpu() - cpu0
    first = work / f"{spvs[0].stem}-{floor}.ar"
    return {"images": len(report["devices"]), "members": [d["member"] for d in report["devices"]],
            "ocloc_device": ",".join(d["ocloc_device"] for d in report["coverage"]["images"]),
            "compile_wall_s": round(wall, 2), "ocloc_cpu_s": round(cpu, 2), "fatbin_bytes": raw, "fatbin_zstd_bytes": packed,
            "driver_26_27": {d: _driver(first, d) for d in DEVICES}}


def wheel_row(project: Path, floor: str, work: Path) -> dict:
    """``pip wheel`` of the workload project for the list (fresh cache): wall, CPU, wheel bytes;
    then with ``USE_AOT_COMPRESS=OFF`` (from the first build's cache: bytes only)."""
    cache = work / f"cache-{floor}"
    out: dict[str, object] = {}
    for compress in ("ON", "OFF"):
        env = tool_env(cache, USE_AOT_DEVLIST=",".join(DEVICES), USE_AOT_MIN_DRIVER=floor, USE_AOT_COMPRESS=compress)
        dist = work / f"dist-{floor}-{compress}"
        cpu0, t0 = child_cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(project),
                        "-C", f"build-dir={work / ('build-' + floor + compress)}"], check=True, env=env)
        wall, cpu = time.perf_counter() - t0, child_cpu() - cpu0
        wheel = next(dist.glob("*.whl"))
        if compress == "ON":
            out.update(wheel_wall_s=round(wall, 2), wheel_cpu_s=round(cpu, 2), wheel_bytes=wheel.stat().st_size)
        else:
            out.update(wheel_bytes_compress_off=wheel.stat().st_size)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=int, default=12, help="workload kernels (benchmarks/workload.py)")
    p.add_argument("--files", type=int, default=3, help="workload kernel files")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="aotwheel-coverage-bench-") as tmp:
        work = Path(tmp)
        project = work / "project"
        sources = write_project(project, kernels=args.kernels, files=args.files)
        spvs = [_spirv(s, work) for s in sources]
        source_bytes = sum(s.stat().st_size for s in sources)
        rows = {}
        for name, floor in PLANS.items():
            rows[name] = {"min_driver": floor, **compile_row(spvs, floor, work), **wheel_row(project, floor, work)}
    ocloc = subprocess.run(["ocloc", "--version"], capture_output=True, text=True, check=False).stdout.strip().splitlines()
    result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "devices": DEVICES,
              "workload": {"kernels": args.kernels, "files": args.files, "source_bytes": source_bytes},
              "ocloc": ocloc[-1] if ocloc else "", "cpus": os.cpu_count(), "plans": rows}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
