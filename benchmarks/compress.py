#!/usr/bin/env python3
"""Compressed device images (issue 25): which zstd layout, and what it buys.

    source .venv/opencl-cpu.env
    .venv/bin/python benchmarks/compress.py [--part codec|build|all] [--json benchmarks/results/compress.json]

Part ``codec`` (chooses the layout): this repository's kernels (``csrc/kernels/*.cl``) compiled by
the installed ocloc for the first 1, 2, 4 and 8 of :data:`DEVICES`; per source, three layouts at
zstd levels 3, 9 and 19:

- ``fatbin_frame``: one zstd frame holding the source's whole ocloc fat binary (what icpx's
  ``--offload-compress`` does to each ``.tgtimg`` image; what the SYCL runtime and inspectors read);
- ``per_image``: one frame per device image (and one for the SPIR-V);
- ``dict_shared``: per-image frames compressed against a raw-content dictionary (the source's
  SPIR-V), which must itself be stored and decompressed first.

Reported: total compressed bytes and the time to get ONE device's image out (median of many
in-process runs: decompress what that layout needs, then pick the member).

Part ``build`` (measures the chosen layout end to end): the repository's own wheel built with
``USE_AOT_COMPRESS=ON`` and ``OFF`` for the same 1/2/4/8 devices: wheel bytes, installed extension
bytes; time to program creation through ``aotwheel.opencl.load_program`` on Intel's CPU OpenCL
runtime (it JITs the SPIR-V: JIT cache off, fresh context each run), compressed and not; and the
decompression time of one native image. No test asserts any timing here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
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
KERNELS = sorted((REPO / "csrc" / "kernels").glob("*.cl"))
#: 8 distinct IPs Debian 12's ocloc 22.43 builds; the first N are the N-target build.
DEVICES = ["tgllp", "rkl", "adl-s", "adl-p", "dg1", "acm-g10", "acm-g11", "pvc"]
COUNTS = (1, 2, 4, 8)
LEVELS = (3, 9, 19)
FIELD_OPTIONS = ("-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels "
                 "-cl-intel-greater-than-4GB-buffer-required")


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
    import zstandard

    from aotwheel.buildsteps.fatbin import build_fatbin, ir_options, member_name
    from aotwheel.formats.ar import read_ar
    from aotwheel.formats.region import Region

    version = subprocess.run(["ocloc", "--version"], capture_output=True, text=True).stdout
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
            for name, (spirv, natives) in sources.items():
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("codec", "build", "all"), default="all")
    ap.add_argument("--json", default=str(REPO / "benchmarks" / "results" / "compress.json"))
    a = ap.parse_args(argv)
    out: dict = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                 "ocloc": subprocess.run(["ocloc", "--version"], capture_output=True, text=True).stdout.strip(),
                 "devices": DEVICES, "kernels": [k.name for k in KERNELS]}
    if Path(a.json).is_file():
        out = {**json.loads(Path(a.json).read_text()), **out}
    with tempfile.TemporaryDirectory(prefix="aotwheel-compress-") as tmp:
        if a.part in ("codec", "all"):
            out["codec"] = codec_rows(Path(tmp))
        if a.part in ("build", "all"):
            out["build"] = build_rows(Path(tmp))
    Path(a.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
