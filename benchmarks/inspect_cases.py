"""Inspect at scale (issue 13): a library with a thousand native members, a whole XPU
environment from PyPI, and an empty page cache.

- ``p4_native``: vllm-xpu-kernels' 330 MB ``libattn_kernels_xe_2.so`` (251 fat binaries, 1,004
  zebin members): ``inspect()`` median, and the cost of one native member (the whole fat-binary
  step of the default walk -- ar headers, zebin notes, targets -- over every image of the file,
  divided by its native members; with aotwheel._fastscan, and through the Python readers).
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
    """inspect() of a library of fat binaries with many zebin members, and µs per native member."""
    insp = _aotwheel()
    from aotwheel.formats import fastscan

    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
    report = insp.inspect(path)
    whole = Samples()
    for r in range(runs):
        t0 = time.perf_counter()
        insp.inspect(path)
        whole.add(time.perf_counter() - t0)
        log(f"p4n run {r + 1}: inspect {whole.values[-1] * 1e3:.1f} ms")
    fr = report.files[0]
    per_member = _per_member(insp, path, fr, runs)
    saved = os.environ.get("AOTWHEEL_NO_FASTSCAN")
    os.environ["AOTWHEEL_NO_FASTSCAN"] = "1"  # the same step through the pure-Python readers, for reference
    try:
        per_member_python = _per_member(insp, path, fr, runs)
    finally:
        if saved is None:
            del os.environ["AOTWHEEL_NO_FASTSCAN"]
        else:
            os.environ["AOTWHEEL_NO_FASTSCAN"] = saved
    return {
        "file": path.name, "source": f"PyPI {VLLM_WHEEL}", "bytes": path.stat().st_size, "images": len(fr.images),
        "native_targets": len(fr.native_targets), "inspect_ms": whole.to_dict(1e3), "per_member_us": per_member.to_dict(1e6),
        "per_member_python_us": per_member_python.to_dict(1e6), "fastscan": fastscan.module() is not None,
        "target": "inspect median <= 50 ms; <= 10 us per native member",
        "met": whole.median <= 0.050 and per_member.median <= 10e-6,
    }


def _per_member(insp, path: Path, fr, runs: int) -> Samples:  # type: ignore[no-untyped-def]
    """The whole per-member step of the default walk, per native member: ``_walk_fat_binary`` of
    every fat-binary image (ar headers, each member's zebin notes, its NativeTarget and warnings;
    the generic_ir member and padding included) through the same map inspect uses, divided by the
    native members. Before the C scanner this timed ``_native_target`` alone, after read_ar."""
    samples = Samples()
    members = sum(1 for t in fr.native_targets if t.member)
    from aotwheel.backends.intel.reader import _walk_fat_binary

    with insp._mapped(path) as region, insp._cyclic_gc_paused():  # as inspect() walks
        fats = [(region.sub(img.offset, img.size, "image"), img) for img in fr.images if img.kind == "ar"]
        for _ in range(runs):
            walk = insp._Walk(insp.FileReport(path=str(path), native_targets=[], ir=[], images=[], kernels=None), deep=False)
            fresh = [insp.Image(img.index, img.offset, img.size, "ar", img.triple, False, img.section) for _sub, img in fats]
            t0 = time.perf_counter()
            for (sub, _img), img in zip(fats, fresh):
                _walk_fat_binary(walk, sub, img, 0)
            samples.add((time.perf_counter() - t0) / members)
            assert len(walk.report.native_targets) == members
        del fats, sub, walk
    return samples


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
