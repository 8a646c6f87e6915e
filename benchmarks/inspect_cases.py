"""Inspect at scale (issue 13): a library with a thousand native members, a whole XPU
environment from PyPI, and an empty page cache.

- ``p4_native``: vllm-xpu-kernels' 330 MB ``libattn_kernels_xe_2.so`` (251 fat binaries, 1,004
  zebin members): ``inspect()`` median, and the cost of one native member (the per-member step
  of the default walk, timed over every member of the file).
- ``env``: ``inspect()`` of the lib folder (site-packages and the libraries onemkl installs beside
  it) of a venv holding dpnp, dpctl and the onemkl-sycl-* libraries from PyPI: files, bytes,
  seconds, GB/s (page cache warm).
- ``cold``: libraries with thousands of small SPIR-V images, inspected and ``cat``-ed with their
  pages dropped first (``posix_fadvise(DONTNEED)``), alternating, ratio per run.

Downloads are cached under ``benchmarks/.cache`` (never committed).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.project import REPO
from benchmarks.timing import Samples

VLLM_WHEEL = "vllm-xpu-kernels==0.1.16.2"
VLLM_MEMBER = "vllm_xpu_kernels/libattn_kernels_xe_2.so"
ENV_PACKAGES = ["dpnp==0.20.0", "dpctl==0.22.1", "onemkl-sycl-blas==2026.2.0", "onemkl-sycl-dft==2026.2.0",
                "onemkl-sycl-lapack==2026.2.0", "onemkl-sycl-rng==2026.2.0", "onemkl-sycl-sparse==2026.2.0",
                "onemkl-sycl-vm==2026.2.0", "onemkl-sycl-stats==2026.2.0", "onemkl-sycl-datafitting==2026.2.0"]
COLD_LIBRARIES = ["libmkl_sycl_blas.so.6", "libmkl_sycl_vm.so.6", "libmkl_sycl_rng.so.6"]


def _aotwheel():
    sys.path.insert(0, str(REPO / "python"))
    import aotwheel.inspector

    return aotwheel.inspector


def fetch_vllm_library(cache: Path, log: Callable[[str], None]) -> Path | None:
    from benchmarks.runtime_cases import fetch_wheel_member

    return fetch_wheel_member(cache, VLLM_WHEEL, "vllm_xpu_kernels-0.1.16.2-*.whl", VLLM_MEMBER, "p4n", log)


def p4_native(path: Path, runs: int, log: Callable[[str], None]) -> dict:
    """inspect() of a library of fat binaries with many zebin members, and µs per member."""
    insp = _aotwheel()
    from aotwheel.formats.ar import read_ar

    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
    report = insp.inspect(path)
    whole = Samples()
    for r in range(runs):
        t0 = time.perf_counter()
        insp.inspect(path)
        whole.add(time.perf_counter() - t0)
        log(f"p4n run {r + 1}: inspect {whole.values[-1] * 1e3:.1f} ms")
    fr = report.files[0]
    per_member = Samples()
    with insp._mapped(path) as region:
        members = []
        for img in fr.images:
            if img.kind != "ar":
                continue
            sub = region.sub(img.offset, img.size, "image")
            members += [(sub.sub(m.offset, m.size, m.name), img.index, m.name) for m in read_ar(sub) if m.name.startswith("64.")]
        walk = insp._Walk(insp.FileReport(path=str(path), native_targets=[], ir=[], images=[], kernels=None), deep=False)
        for _ in range(runs):
            walk.report.native_targets.clear()
            walk.report.warnings.clear()
            t0 = time.perf_counter()
            for body, index, name in members:
                insp._native_target(walk, body, "zebin", index, name)
            per_member.add((time.perf_counter() - t0) / len(members))
        del members, sub, body, walk
    return {
        "file": path.name, "source": f"PyPI {VLLM_WHEEL}", "bytes": path.stat().st_size, "images": len(fr.images),
        "native_targets": len(fr.native_targets), "inspect_ms": whole.to_dict(1e3), "per_member_us": per_member.to_dict(1e6),
        "target": "inspect median <= 50 ms; <= 10 us per native member",
        "met": whole.median <= 0.050 and per_member.median <= 10e-6,
    }


def ensure_xpu_env(work: Path, log: Callable[[str], None]) -> Path | None:
    """A venv with the XPU stack from PyPI (about 3 GB installed); made once, then reused."""
    venv = work / "xpu-env"
    marker = venv / ".complete"
    if marker.is_file():
        return venv
    log(f"env: creating {venv} with {' '.join(ENV_PACKAGES)} (several GB)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *ENV_PACKAGES], capture_output=True, text=True)
    if proc.returncode != 0:
        log(f"env skipped: pip install failed: {proc.stderr.strip()[-300:]}")
        return None
    marker.write_text("ok\n")
    return venv


def env_inspect(venv: Path, runs: int, log: Callable[[str], None]) -> dict:
    """``inspect(<venv>/lib)``: site-packages and the libraries onemkl installs beside it."""
    insp = _aotwheel()
    root = venv / "lib"
    files = {str(p): p.stat().st_size for p in insp._candidates(root)}
    for path in files:  # page cache warm
        with open(path, "rb") as fh:
            while fh.read(1 << 24):
                pass
    seconds = Samples()
    reported = unreadable = 0
    for r in range(runs):
        t0 = time.perf_counter()
        report = insp.inspect(root)
        seconds.add(time.perf_counter() - t0)
        reported = len(report.files)
        unreadable = sum(1 for f in report.files if getattr(f, "error", None))
        log(f"env run {r + 1}: {seconds.values[-1]:.2f} s for {reported} binaries")
    total = sum(files.values())
    gbps = total / 1e9 / seconds.median
    return {"folder": "<venv>/lib", "packages": ENV_PACKAGES, "files": len(files), "bytes": total,
            "binaries_reported": reported, "unreadable": unreadable, "seconds": seconds.to_dict(),
            "gb_per_s": gbps, "target": ">= 5 GB/s, page cache warm", "met": gbps >= 5.0}


def _drop(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def cold_inspect(paths: list[Path], runs: int, log: Callable[[str], None]) -> dict:
    """inspect() and cat with the file's pages dropped first, alternating; ratio per run."""
    insp = _aotwheel()
    out = {}
    for path in paths:
        insp.inspect(path)  # imports and code warm; only the file's pages are cold
        cats, inspects, ratio = Samples(), Samples(), Samples()
        for r in range(runs):
            _drop(str(path))
            t0 = time.perf_counter()
            subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
            c = time.perf_counter() - t0
            _drop(str(path))
            t0 = time.perf_counter()
            report = insp.inspect(path)
            i = time.perf_counter() - t0
            cats.add(c)
            inspects.add(i)
            ratio.add(i / c)
            log(f"cold {path.name} run {r + 1}: inspect {i * 1e3:.0f} ms, cat {c * 1e3:.0f} ms")
        warm = Samples()
        for _ in range(runs):
            t0 = time.perf_counter()
            insp.inspect(path)
            warm.add(time.perf_counter() - t0)
        out[path.name] = {"bytes": path.stat().st_size, "images": len(report.files[0].images),
                          "cold_inspect_ms": inspects.to_dict(1e3), "cold_cat_ms": cats.to_dict(1e3),
                          "warm_inspect_ms": warm.to_dict(1e3), "ratio": ratio.to_dict()}
    worst = max((d["ratio"]["median"] for d in out.values()), default=None)
    return {"files": out, "worst_ratio": worst, "target": "cold inspect <= 1.5 x cold cat",
            "met": worst is not None and worst <= 1.5}
