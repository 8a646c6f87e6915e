#!/usr/bin/env python3
"""aotwheel's NVIDIA verdicts against the CUDA driver itself (issue 28), on one GPU.

    PYTHONPATH=python python3 benchmarks/cuda_driver_truth.py --out "$OUT"          # on the GPU machine
    PYTHONPATH=python python3 benchmarks/cuda_driver_truth.py --out /tmp/x --no-gpu # builds + verdicts, anywhere

1. builds csrc/kernels/*.cl six times from USE_AOT_DEVLIST (CMake + ninja + nvcc through
   aotwheel_add_cuda_device_code, the resolver's NVIDIA-only path): sm_80,sm_90 / sm_80,ptx /
   sm_80 / sm_90a / compute_80 / sm_100;
2. aotwheel's verdict for the GPU here (aotwheel.runtime.check, the probed device; and the
   `aotwheel check --json` CLI), timed;
3. the driver's truth: every fat binary of the library through cuModuleLoadData in a fresh
   process, once with PTX JIT disabled (CUDA_DISABLE_PTX_JIT=1) and once allowed, the JIT cache
   off in both (CUDA_CACHE_DISABLE=1). All load with JIT disabled = native; only with JIT = jit;
   otherwise unsupported (error 209 no image for the device, 218/223 PTX needed but refused);
4. optionally (--pip-install) `USE_AOT_DEVLIST=<arch of this GPU> pip wheel .` of this repository
   with clang, llvm-spirv and ocloc pointing nowhere, then `aotwheel selftest` of the installed
   wheel on the GPU and its `_aot.targets()`;
5. optionally (--libraries) `aotwheel inspect --json` of CUDA libraries here (cuFFT, cuBLASLt,
   libtorch_cuda) against `cuobjdump --list-elf` per architecture, with times and `cat`'s.
Writes cuda_driver_truth.json into --out.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import shutil
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

try:  # python3 benchmarks/cuda_driver_truth.py puts this folder first on sys.path
    import cuda_common as common
except ImportError:
    from benchmarks import cuda_common as common

REPO = common.REPO
KERNELS = common.KERNELS
VARIANTS = {"sm_80-sm_90": "sm_80,sm_90", "sm_80-ptx": "sm_80,ptx", "sm_80": "sm_80", "sm_90a": "sm_90a",
            "compute_80": "compute_80", "sm_100": "sm_100"}
PROJECT = """cmake_minimum_required(VERSION 3.21)
project(aotwheel_cuda_truth LANGUAGES C)
include("{cmake}/aotwheel-cuda.cmake")
add_library(kern SHARED stub.c)
aotwheel_add_cuda_device_code(kern NAME kernels SOURCES {sources})
"""
NO_INTEL_TOOLS = {"AOTWHEEL_CLANG": "/nonexistent/clang", "AOTWHEEL_LLVM_SPIRV": "/nonexistent/llvm-spirv",
                  "AOTWHEEL_OCLOC": "/nonexistent/ocloc"}


sh = partial(common.sh, errors="replace")  # tool output decoded leniently here


def python_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    paths = [str(REPO / "python"), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths), **(extra or {}))


def build(work: Path) -> dict[str, dict[str, object]]:
    """Each variant from USE_AOT_DEVLIST (no TARGETS): the devlist path an NVIDIA-only user takes."""
    sources = common.kernel_sources()
    out: dict[str, dict[str, object]] = {}
    for name, devlist in VARIANTS.items():
        env = python_env({"AOTWHEEL_CACHE_DIR": str(work / "cache"), "USE_AOT_DEVLIST": devlist, **NO_INTEL_TOOLS})
        b = common.cmake_build(work / f"src_{name}", work / f"build_{name}", PROJECT.format(cmake=REPO / "cmake", sources=sources), env,
                               errors="replace")
        out[name] = {"devlist": devlist, "ok": b.ok, "seconds": round(b.seconds, 2), "so": str(b.so) if b.ok else None,
                     "error": None if b.ok else (b.cfg.stdout[-800:] + b.cfg.stderr + b.nin.stdout + b.nin.stderr)[-1500:]}
        print(f"build {name:12s} {'ok' if b.ok else 'FAILED'} ({devlist})", flush=True)
    return out


def containers(so: Path, dest: Path) -> list[Path]:
    """Each fat binary container of ``so`` as a file (one cuModuleLoadData argument each)."""
    from aotwheel.backends.nvidia.fatbin import read_fatbin

    fat = read_fatbin(so)
    assert fat is not None, f"{so}: no fat binary"
    return common.write_containers(so, fat, dest)


def child_load(files: list[str]) -> None:
    """One fresh process: cuModuleLoadData of each file; prints [[rc, name, ms], ...] as JSON."""
    lib = ctypes.CDLL("libcuda.so.1")
    ctx, dev = ctypes.c_void_p(), ctypes.c_int()
    for fn, args in (("cuInit", (0,)), ("cuDeviceGet", (ctypes.byref(dev), 0)),
                     ("cuDevicePrimaryCtxRetain", (ctypes.byref(ctx), dev)), ("cuCtxSetCurrent", (ctx,))):
        rc = getattr(lib, fn)(*args)
        if rc:
            raise SystemExit(f"{fn} failed: {rc}")
    out = []
    for path in files:
        data = Path(path).read_bytes()
        mod = ctypes.c_void_p()
        t0 = time.perf_counter()
        rc = lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(data))
        ms = (time.perf_counter() - t0) * 1e3
        name = ctypes.c_char_p()
        lib.cuGetErrorName(rc, ctypes.byref(name))
        out.append([rc, name.value.decode() if name.value else str(rc), round(ms, 3)])
        if rc == 0:
            lib.cuModuleUnload(mod)
    print(json.dumps(out))


def driver_truth(files: list[Path]) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_CACHE") and k not in ("CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT")}
    runs = {}
    for mode, extra in (("jit_disabled", {"CUDA_DISABLE_PTX_JIT": "1", "CUDA_CACHE_DISABLE": "1"}),
                        ("jit_allowed", {"CUDA_CACHE_DISABLE": "1"})):
        p = common.child_load(str(Path(__file__).resolve()), files, {**base, **extra}, errors="replace")
        if p.returncode != 0:
            return {"error": p.stderr[-800:]}
        runs[mode] = common.child_json(p)
    native = all(r[0] == 0 for r in runs["jit_disabled"])
    loads = all(r[0] == 0 for r in runs["jit_allowed"])
    verdict = "native" if native else "jit" if loads else "unsupported"
    return {"verdict": verdict, **runs}


def aotwheel_verdict(so: Path) -> dict[str, object]:
    from aotwheel.runtime import check

    t0 = time.perf_counter()
    verdicts = check(str(so), policy="ignore", vendor="nvidia")
    ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    cli = sh([sys.executable, "-m", "aotwheel", "check", str(so), "--json", "--jit", "ignore"], env=python_env())
    cli_ms = (time.perf_counter() - t0) * 1e3
    rows = json.loads(cli.stdout)["verdicts"] if cli.stdout.strip().startswith("{") else []
    v = verdicts[0] if verdicts else None
    return {"verdict": v.verdict if v else None, "image": v.image if v else None, "rule": v.rule if v else None,
            "reason": v.reason if v else None, "remedy": v.remedy if v else None, "check_ms": round(ms, 2),
            "cli": {"rc": cli.returncode, "verdicts": [r.get("verdict") for r in rows], "ms": round(cli_ms, 1), "stderr": cli.stderr[-500:]}}


def pip_install(work: Path, arch: str) -> dict[str, object]:
    """This repository built for the GPU here by nvcc alone, installed, and its selftest run."""
    dist, site = work / "dist", work / "site"
    env = python_env({"USE_AOT_DEVLIST": arch, "AOTWHEEL_CACHE_DIR": str(work / "cache"), **NO_INTEL_TOOLS})
    t0 = time.perf_counter()
    p = sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(REPO),
            "-C", f"build-dir={work / 'pipbuild'}"], env=env, timeout=900)
    out: dict[str, object] = {"devlist": arch, "rc": p.returncode, "seconds": round(time.perf_counter() - t0, 1),
                              "stderr": p.stderr[-1500:]}
    wheels = sorted(dist.glob("aotwheel-*.whl"))
    if p.returncode != 0 or not wheels:
        return out
    sh([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(site), str(wheels[0])])
    run_env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), *[q for q in os.environ.get("PYTHONPATH", "").split(os.pathsep) if q]]))
    manifest = json.loads((site / "aotwheel" / "_aot_manifest.json").read_text())
    out["manifest_cuda"] = manifest["devlist"]["cuda"]
    out["manifest_vendors"] = sorted({i["vendor"] for i in manifest["images"]})
    t = sh([sys.executable, "-c", "import aotwheel._aot as a; print(','.join(a.targets()))"], env=run_env, cwd=work)
    out["aot_targets"] = t.stdout.strip() or t.stderr[-500:]
    s = sh([sys.executable, "-m", "aotwheel", "selftest", "--json"], env=run_env, cwd=work, timeout=600)
    out["selftest"] = {"rc": s.returncode, "stdout": s.stdout[-4000:], "stderr": s.stderr[-800:]}
    print(f"pip install (USE_AOT_DEVLIST={arch}): rc {p.returncode}, targets {out['aot_targets']}, selftest rc {s.returncode}", flush=True)
    return out


def libraries(tool: str | None) -> list[dict[str, object]]:
    """inspect vs cuobjdump per architecture on CUDA libraries of this machine's Python packages."""
    import importlib.util

    if not tool:
        return []
    picked: list[Path] = []
    for pkg, pattern in (("nvidia", "libcufft.so*"), ("nvidia", "libcublasLt.so*"), ("torch", "libtorch_cuda.so")):
        spec = importlib.util.find_spec(pkg)
        for root in (spec.submodule_search_locations or []) if spec else []:
            hits = sorted(p for p in Path(root).rglob(pattern) if p.is_file())
            if hits:
                picked.append(hits[0])
                break
    out = []
    for lib in picked:
        with open(lib, "rb") as f:  # warm the page cache first: every reader then reads from memory
            while f.read(1 << 24):
                pass
        t0 = time.perf_counter()
        with open(lib, "rb") as f:
            while f.read(1 << 24):
                pass
        cat_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        ins = sh([sys.executable, "-m", "aotwheel", "inspect", "--json", str(lib)], env=python_env(), timeout=600)
        ins_s = time.perf_counter() - t0
        ours: collections.Counter[str] = collections.Counter()
        if ins.returncode == 0:
            for fr in json.loads(ins.stdout)["files"]:
                ours.update(t["arch"] for t in fr["native_targets"] if t.get("vendor") == "nvidia")
        t0 = time.perf_counter()
        dump = sh([tool, "--list-elf", str(lib)], timeout=600)
        dump_s = time.perf_counter() - t0
        theirs: collections.Counter[str] = collections.Counter()
        for line in dump.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[0] == "ELF":
                theirs[parts[-1].rsplit(".", 2)[-2]] += 1
        ck = sh([sys.executable, "-m", "aotwheel", "check", str(lib), "--json", "--jit", "ignore"], env=python_env(), timeout=600)
        rows = json.loads(ck.stdout)["verdicts"] if ck.stdout.strip().startswith("{") else []
        out.append({"lib": str(lib), "bytes": lib.stat().st_size, "inspect_rc": ins.returncode, "inspect_s": round(ins_s, 3),
                    "cuobjdump_rc": dump.returncode, "cuobjdump_s": round(dump_s, 3), "read_s": round(cat_s, 3),
                    "cubins_inspect": dict(sorted(ours.items())), "cubins_cuobjdump": dict(sorted(theirs.items())),
                    "cuobjdump_stderr": dump.stderr[-300:], "check": [(r.get("device"), r.get("verdict"), r.get("rule")) for r in rows]})
        print(f"library {lib.name}: inspect {ins_s:.2f} s, cuobjdump {dump_s:.2f} s, read {cat_s:.2f} s, "
              f"{sum(ours.values())} vs {sum(theirs.values())} cubins", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--no-gpu", action="store_true", help="builds and verdicts for an assumed sm_90 only")
    ap.add_argument("--pip-install", action="store_true", help="also pip wheel this repository for this GPU and run its selftest")
    ap.add_argument("--libraries", action="store_true", help="also inspect/check CUDA libraries here against cuobjdump")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "")
    ap.add_argument("--child-load", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_load:
        child_load(args.child_load)
        return 0
    sys.path.insert(0, str(REPO / "python"))
    from aotwheel.backends.nvidia.probe import probe_cuda

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="aotwheel-truth-"))
    probe = probe_cuda()
    gpu = bool(probe.devices) and not args.no_gpu
    nvsmi = sh(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"]) if shutil.which("nvidia-smi") else None
    nvcc = sh(["nvcc", "--version"]) if shutil.which("nvcc") else None
    report: dict[str, object] = {"probe": probe.to_dict(), "nvidia_smi": nvsmi.stdout.strip() if nvsmi else None,
                                 "nvcc": nvcc.stdout.strip().splitlines()[-1] if nvcc and nvcc.stdout else None, "variants": {}}
    for name, b in build(work).items():
        v: dict[str, object] = {"build": {k: b[k] for k in ("devlist", "ok", "seconds", "error")}}
        report["variants"][name] = v  # type: ignore[index]
        if not b["so"]:
            continue
        so = Path(str(b["so"]))
        from aotwheel.backends.nvidia.fatbin import read_fatbin

        fat = read_fatbin(so)
        v["images"] = sorted({e.target for e in fat.entries}) if fat else []
        if gpu:
            v["aotwheel"] = aotwheel_verdict(so)
            v["driver"] = driver_truth(containers(so, work / f"containers_{name}"))
            v["agree"] = v["aotwheel"]["verdict"] == v["driver"].get("verdict")  # type: ignore[index,union-attr]
            print(f"{name:12s} aotwheel={v['aotwheel']['verdict']} driver={v['driver'].get('verdict')} agree={v['agree']}", flush=True)  # type: ignore[index,union-attr]
    if gpu and args.pip_install:
        report["pip_install"] = pip_install(work, probe.devices[0].target if hasattr(probe.devices[0], "target") else "sm_90")
    (out / "cuda_driver_truth.json").write_text(json.dumps(report, indent=1, default=str))  # kept should a library fail
    if args.libraries:
        report["libraries"] = libraries(args.cuobjdump)
    agree = [v.get("agree") for v in report["variants"].values()]  # type: ignore[union-attr]
    report["summary"] = {"variants": len(agree), "agree": sum(1 for a in agree if a), "gpu": gpu}
    (out / "cuda_driver_truth.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
