#!/usr/bin/env python3
"""Compressed device images (issue 25): which zstd layout, and what it buys.

    source .venv/opencl-cpu.env
    .venv/bin/python benchmarks/compress.py [--part codec|build|all] [--json benchmarks/results/compress.json]

Part ``codec`` (chooses the layout): this repository's kernels (``csrc/kernels/*.cl``) compiled by
the installed ocloc for the first 1, 2, 4 and 8 of :data:`DEVICES`; per source, three layouts at
zstd levels 3, 9 and 19:

- ``fatbin_frame``: one zstd frame holding the source's whole ocloc fat binary (what icpx's
  ``--offload-compress`` does to each image; what ``aotwheel inspect`` already reads);
- ``per_image``: one frame per device image (and one for the SPIR-V);
- ``dict_shared``: per-image frames compressed against a raw-content dictionary (the source's
  SPIR-V), which must itself be stored and decompressed first.

Reported: total compressed bytes and the time to get ONE device's image out (median of many
in-process runs: decompress what that layout needs, then pick the member).

Part ``build`` (measures the chosen layout end to end): a project holding only these kernels in
one abi3 extension (``aotwheel_add_device_code(... COMPRESS OFF|ON)``, this checkout's CMake and
build steps), built by ``pip wheel`` for the same 1/2/4/8 devices: wheel bytes, installed extension
bytes; time to program creation through ``aotwheel.opencl`` on Intel's CPU OpenCL runtime (it
JITs the SPIR-V: JIT cache off, fresh processes, OFF and ON alternating), split into reading the
images (``device_code``: decompression when ON) and ``load_program``; and the time to get one
device's native image out of each fat binary. :func:`goals` checks the issue's three goals.
No test asserts any timing here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))  # this checkout's aotwheel (its build steps build the wheels)
from aotwheel.formats.zstd import IMAGE_LEVEL  # noqa: E402
from benchmarks.project import PYPROJECT  # noqa: E402

KERNELS = sorted((REPO / "csrc" / "kernels").glob("*.cl"))
#: 8 distinct IPs Debian 12's ocloc 22.43 builds; the first N are the N-target build.
DEVICES = ["tgllp", "rkl", "adl-s", "adl-p", "dg1", "acm-g10", "acm-g11", "pvc"]
COUNTS = (1, 2, 4, 8)
LEVELS = (3, 9, 19)
FIELD_OPTIONS = ("-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels "
                 "-cl-intel-greater-than-4GB-buffer-required")


def ocloc_version() -> str:
    """``ocloc --version`` (24.x and later), else the Debian package's version (22.43 has no --version)."""
    proc = subprocess.run(["ocloc", "--version"], capture_output=True, text=True)
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.strip()
    pkg = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "intel-opencl-icd"], capture_output=True, text=True)
    return f"intel-opencl-icd {pkg.stdout.strip()}" if pkg.returncode == 0 else "unknown"


def _median_us(fn, runs: int = 200) -> float:
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return round(statistics.median(samples) * 1e6, 1)


def _spirv(src: Path, work: Path) -> bytes:
    bc, spv = work / f"{src.stem}.bc", work / f"{src.stem}.spv"
    subprocess.run(["clang-15", "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)],
                   check=True)
    subprocess.run(["llvm-spirv-15", str(bc), "-o", str(spv)], check=True)
    return spv.read_bytes()


def _native(spv: Path, device: str, work: Path) -> bytes:
    out = work / "out"
    name = f"{spv.stem}_{device}"
    subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", name,
                    "-out_dir", str(out), "-output_no_suffix", "-exclude_ir", "-options", FIELD_OPTIONS],
                   check=True, stdout=subprocess.DEVNULL)
    return (out / name).read_bytes()


def _ip(device: str) -> str:
    from aotwheel.backends.intel.catalog import load_catalog

    dev = load_catalog().by_name(device)
    assert dev is not None, device
    return dev.ip


def codec_rows(work: Path) -> list[dict]:
    """Per device count and zstd level: bytes and one-image extraction time of the three layouts."""
    import zstandard

    from aotwheel.backends.intel.buildsteps.fatbin import build_fatbin, ir_options, member_name
    from aotwheel.formats.ar import read_ar
    from aotwheel.formats.region import Region

    version = ocloc_version().split()[-1]
    rows = []
    sources = {}
    for src in KERNELS:
        spirv = _spirv(src, work)
        natives = {d: _native(work / f"{src.stem}.spv", d, work) for d in DEVICES}
        sources[src.name] = (spirv, natives)
    for n in COUNTS:
        devs = DEVICES[:n]
        want = devs[-1]  # the device whose image is taken out
        for level in LEVELS:
            cctx = zstandard.ZstdCompressor(level=level, write_checksum=True, write_content_size=True)
            dctx = zstandard.ZstdDecompressor()
            raw = fat = per = dic = 0
            t_fat = t_per = t_dic = 0.0
            for spirv, natives in sources.values():
                fatbin = build_fatbin([(_ip(d), natives[d]) for d in devs], spirv, ir_options(version, FIELD_OPTIONS))
                raw += len(fatbin)
                # one frame per fat binary: decompress it all, then find the member
                frame = cctx.compress(fatbin)
                fat += len(frame)
                member = member_name(_ip(want))

                def get_fat(frame: bytes = frame, member: str = member) -> bytes:
                    data = dctx.decompress(frame)
                    r = Region(data, "fatbin")
                    m = next(m for m in read_ar(r) if m.name == member)
                    return r.read(m.offset, m.size, "member")

                assert get_fat() == natives[want]
                t_fat += _median_us(get_fat)
                # one frame per image (+ SPIR-V): decompress just that one
                frames = {d: cctx.compress(natives[d]) for d in devs}
                per += sum(map(len, frames.values())) + len(cctx.compress(spirv))
                t_per += _median_us(lambda f=frames[want]: dctx.decompress(f))
                # per-image frames against the SPIR-V as a raw-content dictionary
                zdict = zstandard.ZstdCompressionDict(spirv, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                dc = zstandard.ZstdCompressor(level=level, dict_data=zdict, write_checksum=True)
                dframes = {d: dc.compress(natives[d]) for d in devs}
                spv_frame = cctx.compress(spirv)
                dic += sum(map(len, dframes.values())) + len(spv_frame)

                def get_dict(f: bytes = dframes[want], s: bytes = spv_frame) -> bytes:
                    d = zstandard.ZstdCompressionDict(dctx.decompress(s), dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                    return zstandard.ZstdDecompressor(dict_data=d).decompress(f)

                assert get_dict() == natives[want]
                t_dic += _median_us(get_dict)
            rows.append({"targets": n, "level": level, "uncompressed_bytes": raw,
                         "fatbin_frame": {"bytes": fat, "one_image_us": round(t_fat, 1)},
                         "per_image": {"bytes": per, "one_image_us": round(t_per, 1)},
                         "dict_shared": {"bytes": dic, "one_image_us": round(t_dic, 1)}})
            print(json.dumps(rows[-1]), flush=True)
    return rows


_CMAKELISTS = """cmake_minimum_required(VERSION 3.26)
project(aotbench LANGUAGES C)
find_package(Python 3.10 REQUIRED COMPONENTS Interpreter Development.Module Development.SABIModule)
include("{repo}/cmake/aotwheel-config.cmake")
Python_add_library(_kernels MODULE USE_SABI 3.10 WITH_SOABI _kernels.c)
string(REPLACE "," ";" devices "${{BENCH_DEVICES}}")
aotwheel_add_device_code(_kernels NAME kernels DEVICES ${{devices}} COMPRESS ${{BENCH_COMPRESS}}
  SOURCES {sources})
install(TARGETS _kernels LIBRARY DESTINATION aotbench)
"""

# In a fresh process (no memo): per source, the device code read from the module (images(),
# decompression when compressed: aotwheel.opencl.device_code), then load_program on it (JIT cache
# off) on Intel's CPU OpenCL runtime; both timed.
_TIMING = r"""
import json, sys, time
import pyopencl as cl
import aotbench._kernels as k
from aotwheel.opencl import device_code, load_program
from aotwheel.jitcache import JitCache
dev = [d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU][0]
ctx = cl.Context([dev])
sources = sorted({s for _, s, _ in k.images()})
out = {}
for s in sources:
    t = time.perf_counter()
    code = device_code(k, s)
    t1 = time.perf_counter()
    loaded = load_program(ctx, dev, code, cache=JitCache(None))
    out[s] = (t1 - t, time.perf_counter() - t1, loaded.source)
print(json.dumps(out))
"""

_NATIVE = r"""
import json, statistics, time
import aotbench._kernels as k
from aotwheel.formats.zstd import decompress_image, is_zstd
from aotwheel.formats.ar import read_ar
from aotwheel.formats.region import Region
member = %r
res = {}
for t, s, data in k.images():
    if t != "spir64_gen":
        continue
    def one():
        fat = decompress_image(data, s) if is_zstd(data) else data
        r = Region(fat, s)
        m = next(m for m in read_ar(r) if m.name == member)
        return r.read(m.offset, m.size, "member")
    samples = []
    for _ in range(200):
        t0 = time.perf_counter(); one(); samples.append(time.perf_counter() - t0)
    res[s] = statistics.median(samples)
print(json.dumps(res))
"""


def _bench_project(root: Path) -> Path:
    proj = root / "aotbench"
    (proj / "src" / "aotbench").mkdir(parents=True, exist_ok=True)
    (proj / "src" / "aotbench" / "__init__.py").write_text("")
    shutil.copy(REPO / "csrc" / "_kernels.c", proj / "_kernels.c")
    (proj / "CMakeLists.txt").write_text(_CMAKELISTS.format(repo=REPO, sources=" ".join(str(k) for k in KERNELS)))
    (proj / "pyproject.toml").write_text(PYPROJECT)
    return proj


def _build_wheel(proj: Path, root: Path, devices: list[str], compress: str) -> Path:
    tag = f"{len(devices)}-{compress}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    env["AOTWHEEL_CACHE_DIR"] = str(root / "cache")  # ocloc runs once per (source, device)
    env["PYTHONPATH"] = str(REPO / "python")
    dist = root / f"dist-{tag}"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(proj),
                    "-C", f"build-dir={root / ('build-' + tag)}", "-C", f"cmake.define.BENCH_DEVICES={','.join(devices)}",
                    "-C", f"cmake.define.BENCH_COMPRESS={compress}"], check=True, env=env)
    return next(dist.glob("*.whl"))


def _child(code: str, site: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO / "python")]), "AOTWHEEL_JIT_CACHE_DIR": "off"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout)


def build_rows(work: Path, runs: int = 9) -> list[dict]:
    """Wheel and installed bytes, program creation and native-image decompression per build.
    Program creation is timed in fresh processes, OFF and ON alternating (this machine's cores
    are shared: back-to-back runs of one mode would see different loads)."""
    proj = _bench_project(work)
    rows = []
    for n in COUNTS:
        devs = DEVICES[:n]
        for compress in ("OFF", "ON"):
            wheel = _build_wheel(proj, work, devs, compress)
            site = work / f"site-{n}-{compress}"
            with zipfile.ZipFile(wheel) as z:
                (so,) = [i for i in z.infolist() if i.filename.startswith("aotbench/_kernels.")]
                z.extractall(site)
            native = _child(_NATIVE % ("64." + _ip(devs[-1])), site)
            rows.append({"targets": n, "compress": compress, "wheel_bytes": wheel.stat().st_size,
                         "extension_bytes": so.file_size, "native_image_out_us": round(sum(native.values()) * 1e6, 1),
                         "site": site})
    for n in COUNTS:
        pair = [r for r in rows if r["targets"] == n]
        for r in pair:
            r["read_ms"], r["load_ms"], r["total_ms"], r["program_source"] = [], [], [], set()
        for _ in range(runs):
            for r in pair:
                got = _child(_TIMING, r["site"]).values()
                r["read_ms"].append(sum(v[0] for v in got) * 1e3)
                r["load_ms"].append(sum(v[1] for v in got) * 1e3)
                r["total_ms"].append(r["read_ms"][-1] + r["load_ms"][-1])
                r["program_source"] |= {v[2] for v in got}
    for r in rows:
        del r["site"]
        r["program_source"] = sorted(r["program_source"])
        for key in ("read_ms", "load_ms", "total_ms"):
            r[key.replace("_ms", "_median_ms")] = round(statistics.median(r[key]), 3)
            r[key] = [round(x, 3) for x in r[key]]
        print(json.dumps(r), flush=True)
    return rows


def goals(rows: list[dict]) -> dict:
    """The issue's goals, from the build rows: ratios and whether each is met."""
    by = {(r["targets"], r["compress"]): r for r in rows}
    one, eight = by[(1, "ON")], by[(8, "ON")]
    wheel = eight["wheel_bytes"] / one["wheel_bytes"]
    installed = eight["extension_bytes"] / one["extension_bytes"]
    # Program creation: the medians of the whole path, and, less noisy, the plain path's time plus
    # what compression adds (reading + decompressing the images, ON minus OFF).
    creation = max(by[(n, "ON")]["total_median_ms"] / by[(n, "OFF")]["total_median_ms"] for n in COUNTS)
    added = max((by[(n, "ON")]["read_median_ms"] - by[(n, "OFF")]["read_median_ms"]) / by[(n, "OFF")]["total_median_ms"]
                for n in COUNTS)
    return {"wheel_8_over_1": round(wheel, 3), "wheel_goal_met": wheel <= 2,
            "installed_8_over_1": round(installed, 3), "installed_goal_met": installed <= 3,
            "creation_compressed_over_plain_worst": round(creation, 3),
            "creation_decompression_share_worst": round(added, 5), "creation_goal_met": 1 + added <= 1.1,
            "uncompressed_wheel_8_over_1": round(by[(8, "OFF")]["wheel_bytes"] / by[(1, "OFF")]["wheel_bytes"], 3),
            "uncompressed_installed_8_over_1": round(by[(8, "OFF")]["extension_bytes"] / by[(1, "OFF")]["extension_bytes"], 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("codec", "build", "all"), default="all")
    ap.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "compress.json"))
    a = ap.parse_args(argv)
    out: dict = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                 "ocloc": ocloc_version(), "zstd_level": IMAGE_LEVEL,
                 "devices": DEVICES, "kernels": [k.name for k in KERNELS]}
    if Path(a.json).is_file():
        out = {**json.loads(Path(a.json).read_text()), **out}
    with tempfile.TemporaryDirectory(prefix="aotwheel-compress-") as tmp:
        if a.part in ("codec", "all"):
            out["codec"] = codec_rows(Path(tmp))
        if a.part in ("build", "all"):
            out["build"] = build_rows(Path(tmp))
            out["goals"] = goals(out["build"])
    Path(a.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
