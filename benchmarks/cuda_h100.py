#!/usr/bin/env python3
"""aotwheel's NVIDIA path end to end on one GPU (the H100 run of issue 8).

    PYTHONPATH=python python3 benchmarks/cuda_h100.py --out "$OUT"            # on the GPU machine
    PYTHONPATH=python python3 benchmarks/cuda_h100.py --out /tmp/x --no-gpu   # the CPU part, anywhere

1. builds csrc/kernels/*.cl three times with aotwheel_add_cuda_device_code() (CMake + ninja + nvcc):
   (a) sm_90, (b) sm_80 + its PTX ("sm_80 ptx"), (c) PTX only (compute_80);
2. lists each library with cuobjdump --list-elf --list-ptx and compares with aotwheel's parser;
3. probes the GPU (aotwheel.backends.nvidia.probe) and gives aotwheel's verdict for each (native / jit / jit);
4. loads each fat binary with cuModuleLoadData, runs every kernel on fresh random data and
   compares with NumPy in float64 (outputs poisoned with NaN first);
5. times the first module load in fresh processes, JIT cache disabled (CUDA_CACHE_DISABLE=1) vs
   warm (CUDA_CACHE_PATH primed once), --runs times each; writes cuda_h100.json into --out.
Only the CUDA driver (ctypes), NumPy, CMake, ninja, nvcc and cuobjdump are needed.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

try:  # python3 benchmarks/cuda_h100.py puts this folder first on sys.path
    import cuda_common as common
except ImportError:
    from benchmarks import cuda_common as common

REPO = common.REPO
KERNELS = common.KERNELS
VARIANTS = {"sm_90": "sm_90", "sm_80-ptx": "sm_80 ptx", "ptx": "compute_80"}
EXPECTED = {"sm_90": "native", "sm_80-ptx": "jit", "ptx": "jit"}
PROJECT = """cmake_minimum_required(VERSION 3.21)
project(aotwheel_cuda_bench LANGUAGES C)
include("{cmake}/aotwheel-cuda.cmake")
add_library(kern SHARED stub.c)
aotwheel_add_cuda_device_code(kern NAME kernels TARGETS {targets} SOURCES {sources})
"""
sh = common.sh


def environment() -> dict[str, object]:
    env: dict[str, object] = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name, args in {"nvidia_smi": ["nvidia-smi", "--query-gpu=name,driver_version,compute_cap,memory.total", "--format=csv,noheader"],
                       "nvcc": ["nvcc", "--version"], "cmake": ["cmake", "--version"], "cuobjdump": ["cuobjdump", "--version"]}.items():
        if shutil.which(args[0]):
            p = sh(args)
            env[name] = (p.stdout or p.stderr).strip().splitlines()[-1] if name != "nvidia_smi" else p.stdout.strip()
    return env


# ---- 1. build ---------------------------------------------------------------------------------

def build(work: Path) -> dict[str, dict[str, object]]:
    sources = common.kernel_sources()
    out: dict[str, dict[str, object]] = {}
    cache = work / "cache"
    for name, targets in VARIANTS.items():
        env = dict(os.environ, AOTWHEEL_CACHE_DIR=str(cache))
        env.pop("USE_AOT_DEVLIST", None)
        b = common.cmake_build(work / f"src_{name}", work / f"build_{name}", PROJECT.format(cmake=REPO / "cmake", targets=targets, sources=sources),
                               env, "-DCMAKE_BUILD_TYPE=Release")
        out[name] = {"targets": targets, "ok": b.ok, "seconds": round(b.seconds, 2), "so": str(b.so) if b.ok else None,
                     "error": None if b.ok else (b.cfg.stderr + b.nin.stdout + b.nin.stderr)[-1500:]}
        print(f"build {name:10s} {'ok' if b.ok else 'FAILED'} in {b.seconds:.1f} s", flush=True)
    return out


# ---- 2. cuobjdump vs parser ---------------------------------------------------------------------

def cuobjdump_listing(so: Path, tool: str | None) -> tuple[str | None, list[tuple[str, str]]]:
    if not tool:
        return None, []
    p = sh([tool, "--list-elf", "--list-ptx", str(so)])
    pairs = []
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] in ("ELF", "PTX"):
            arch = parts[-1].rsplit(".", 2)[-2]
            pairs.append(("cubin" if parts[0] == "ELF" else "ptx", arch))
    return p.stdout, pairs


def parser_view(so: Path) -> tuple[object, list[tuple[str, str]], list[object]]:
    from aotwheel.backends.nvidia.fatbin import read_fatbin
    from aotwheel.backends.nvidia.targets import CudaTarget

    fat = read_fatbin(so)
    assert fat is not None, f"{so}: no .nv_fatbin"
    pairs = []
    for e in fat.entries:  # cuobjdump's spelling (measured): PTX sm_XY[a|f], cubins sm_XY[a]
        suffix = "a" if e.arch_specific else ("f" if e.family_specific and e.kind == "ptx" else "")
        pairs.append((e.kind, f"sm_{e.arch}{suffix}"))
    targets = sorted({CudaTarget(e.arch, e.kind, e.arch_specific, e.family_specific) for e in fat.entries})
    return fat, pairs, targets


extract_containers = common.write_containers


# ---- 4/5. kernels and first-use timing (aotwheel.backends.nvidia.selftest drives the CUDA driver) -----------

def run_kernels(so: Path) -> dict[str, object]:
    """aotwheel's CUDA selftest on the library: every kernel vs NumPy (float64)."""
    from aotwheel.backends.nvidia.selftest import run_cuda

    results, why = run_cuda(so)
    if not results:
        return {"pass": False, "error": why}
    r = results[0]
    return {"pass": r.ok, "device": r.device, "verdict": r.verdict, "load_ms": r.build_ms, "error": r.error,
            "max_error": {k.name: k.max_error for k in r.kernels}, "tolerance": r.kernels[0].tolerance if r.kernels else None}


KERNEL_NAMES = ("vector_add", "saxpy", "reduce_sum", "softmax_rows", "gemm_tiled")


def child_load(files: list[str]) -> None:
    """One fresh process: time context creation, cuModuleLoadData of every module, looking up
    every kernel (with lazy loading, CUDA 12+'s default, work can move here) and the first
    launch of vector_add; prints JSON. first_use_ms = load + lookup + first launch."""
    from aotwheel.backends.nvidia.selftest import CudaError, Driver

    t0 = time.perf_counter()
    drv = Driver()
    t1 = time.perf_counter()
    mods, per = [], []
    for path in files:
        data = Path(path).read_bytes()
        s = time.perf_counter()
        mods.append(drv.load(data))
        per.append((time.perf_counter() - s) * 1e3)
    t2 = time.perf_counter()
    funcs = {}
    for mod in mods:
        for name in KERNEL_NAMES:
            try:
                funcs[name] = drv.function(mod, name)
            except CudaError:
                pass
    t3 = time.perf_counter()
    n = 1 << 16
    ptrs = [drv.alloc(4 * n) for _ in range(3)]
    s = time.perf_counter()
    drv.launch(funcs["vector_add"], (n // 256, 1), (256, 1), *ptrs, ctypes.c_uint32(n))
    t4 = time.perf_counter()
    print(json.dumps({"init_ms": (t1 - t0) * 1e3, "load_ms": (t2 - t1) * 1e3, "per_module_ms": per, "lookup_ms": (t3 - t2) * 1e3,
                      "first_launch_ms": (t4 - s) * 1e3, "first_use_ms": (t2 - t1 + t3 - t2 + t4 - s) * 1e3, "kernels": len(funcs)}))


def time_loads(files: list[Path], runs: int, work: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for mode in ("cold", "warm"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("CUDA_CACHE") and k != "CUDA_FORCE_PTX_JIT"}
        if mode == "cold":
            env["CUDA_CACHE_DISABLE"] = "1"
        else:
            cache = Path(tempfile.mkdtemp(prefix="cudacache-", dir=work))
            env["CUDA_CACHE_PATH"] = str(cache)
        samples = []
        for i in range(runs + (1 if mode == "warm" else 0)):
            p = common.child_load(str(Path(__file__).resolve()), files, env)
            if p.returncode != 0:
                raise RuntimeError(f"child load failed: {p.stderr[-800:]}")
            if mode == "warm" and i == 0:
                continue  # the priming run fills the cache
            samples.append(common.child_json(p))
        loads = [s["load_ms"] for s in samples]
        out[mode] = {
            "runs": len(samples),
            "load_ms_median": statistics.median(loads),
            "load_ms_min": min(loads),
            "load_ms_max": max(loads),
            "first_launch_ms_median": statistics.median(s["first_launch_ms"] for s in samples),
            "first_use_ms_median": statistics.median(s["first_use_ms"] for s in samples),
            "first_use_ms_min": min(s["first_use_ms"] for s in samples),
            "first_use_ms_max": max(s["first_use_ms"] for s in samples),
            "init_ms_median": statistics.median(s["init_ms"] for s in samples),
            "samples": samples,
        }
        if mode == "warm":
            out["cache_files"] = sum(1 for p in cache.rglob("*") if p.is_file())
    return out


def third_party(tool: str | None, per_package: int = 2) -> list[dict[str, object]]:
    """cuobjdump vs our parser on CUDA libraries that CuPy and PyTorch ship on this machine."""
    import importlib.util

    if not tool:
        return []
    roots = []
    for pkg in ("cupy", "cupy_backends", "torch"):
        spec = importlib.util.find_spec(pkg)
        if spec and spec.submodule_search_locations:
            roots.extend(Path(p) for p in spec.submodule_search_locations)
    picked: list[Path] = []
    for root in roots:
        # Smallest first: the point is agreement, not size (libtorch_cuda.so is over a gigabyte).
        libs = sorted((p for p in root.rglob("*.so*") if p.is_file()), key=lambda p: p.stat().st_size)
        taken = 0
        for lib in libs:
            if taken >= per_package or lib.stat().st_size > 400 << 20:
                break
            try:
                parser_view(lib)
            except Exception:
                continue  # no .nv_fatbin
            picked.append(lib)
            taken += 1
    out = []
    for lib in picked:
        t0 = time.perf_counter()
        _, pairs, targets = parser_view(lib)
        ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        text, listed = cuobjdump_listing(lib, tool)
        theirs = time.perf_counter() - t0
        mismatch = next((i for i, (x, y) in enumerate(zip(pairs, listed)) if x != y), None)
        out.append({"lib": str(lib), "bytes": lib.stat().st_size, "entries": len(pairs), "cuobjdump_entries": len(listed),
                    "agree": pairs == listed, "first_mismatch": mismatch, "targets": sorted({t.name for t in targets}),
                    "parser_s": round(ours, 3), "cuobjdump_s": round(theirs, 3)})
        print(f"third-party {lib.name}: {len(pairs)} entries, agree={pairs == listed}", flush=True)
    return out


def integrated(libs: dict[str, Path], work: Path) -> dict[str, object]:
    """The real CLIs on the libraries: aotwheel devices, check, selftest, inspect. (Before the
    NVIDIA integration landed in the tree, its edits were applied here from a patch to a copy.)"""
    out: dict[str, object] = {"tree": str(REPO)}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "python"), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]))

    def cli(*args: str) -> dict[str, object]:
        p = sh([sys.executable, "-m", "aotwheel", *args], env=env, timeout=600)
        return {"args": list(args), "rc": p.returncode, "stdout": p.stdout[-4000:], "stderr": p.stderr[-1500:]}

    out["devices"] = cli("devices")
    for name, so in libs.items():
        out[f"check_{name}"] = cli("check", str(so))
        out[f"selftest_{name}"] = cli("selftest", str(so))
        out[f"inspect_{name}"] = cli("inspect", str(so))
    for value in out.values():
        if isinstance(value, dict) and "stdout" in value:
            print(
                f"--- aotwheel {' '.join(value['args'][:1])} {Path(value['args'][-1]).name} (rc {value['rc']})\n{value['stdout'].strip()[-1200:]}", flush=True
            )
    return out


def aotwheel_cli(args: list[str]) -> dict[str, object]:
    p = sh([sys.executable, "-m", "aotwheel", *args], env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    return {"args": args, "rc": p.returncode, "stdout": p.stdout[-3000:], "stderr": p.stderr[-1500:]}


# ---- driver -------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=False, default=os.environ.get("OUT", "."))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--no-gpu", action="store_true", help="build, list, parse and verdict for an assumed CC 9.0 only")
    ap.add_argument("--prebuilt", default="", help="folder with libkern_<variant>.so to use where a build fails")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "")
    ap.add_argument("--child-load", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_load:
        child_load(args.child_load)
        return 0
    sys.path.insert(0, str(REPO / "python"))
    from aotwheel.backends.nvidia.probe import probe_cuda
    from aotwheel.backends.nvidia.targets import cuda_verdict

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="aotwheel-cuda-"))
    report: dict[str, object] = {"environment": environment(), "variants": {}}
    probe = probe_cuda()
    report["probe"] = probe.to_dict()
    cc = probe.devices[0].cc if probe.devices else (9, 0)
    report["device_cc"] = "%d.%d" % cc + ("" if probe.devices else " (assumed: no GPU)")
    builds = build(work)
    listings = []
    for name, b in builds.items():
        v: dict[str, object] = {"build": {k: b[k] for k in ("targets", "ok", "seconds", "error")}}
        report["variants"][name] = v  # type: ignore[index]
        so = Path(b["so"]) if b["so"] else Path(args.prebuilt, f"libkern_{name}.so")
        v["prebuilt_used"] = not b["so"]
        if not so.is_file():
            v["error"] = "no library"
            continue
        shutil.copy(so, out / f"libkern_{name}.so")
        fat, pairs, targets = parser_view(so)
        text, listed = cuobjdump_listing(so, args.cuobjdump)
        if text is not None:
            listings.append(f"### {name}: cuobjdump --list-elf --list-ptx libkern_{name}.so\n{text}")
        v["parser"] = [f"{k}:{a}" for k, a in pairs]
        v["cuobjdump"] = [f"{k}:{a}" for k, a in listed] if text is not None else None
        v["agree"] = (pairs == listed) if text is not None else None
        verdict = cuda_verdict(targets, cc)
        v["verdict"] = {"verdict": verdict.verdict, "image": verdict.image.name if verdict.image else None, "rule": verdict.rule, "reason": verdict.reason}
        v["verdict_ok"] = verdict.verdict == EXPECTED[name]
        v["check_cli"] = aotwheel_cli(["check", str(so)])  # the Intel-side CLI, once NVIDIA is wired in
        p = sh([sys.executable, "-m", "aotwheel", "check", str(so), "--json", "--jit", "ignore"], env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
        v["cuda_check_cli"] = {"rc": p.returncode, "stdout": p.stdout[-3000:], "stderr": p.stderr[-1500:]}
        if probe.devices:
            from aotwheel.runtime import check

            v["cuda_check"] = [x.to_dict() for x in check(so, policy="ignore", vendor="nvidia")]
        if probe.devices and not args.no_gpu:
            files = extract_containers(so, fat, work / f"containers_{name}")
            try:
                v["kernels"] = run_kernels(so)
            except Exception as exc:  # record and go on: the other variants still count
                v["kernels"] = {"pass": False, "error": f"{type(exc).__name__}: {exc}"}
            try:
                v["first_load"] = time_loads(files, args.runs, work)
            except Exception as exc:
                v["first_load"] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"{name:10s} parser={v['parser']} agree={v['agree']} verdict={verdict.verdict} ({verdict.rule})", flush=True)
    libs = {n: out / f"libkern_{n}.so" for n in VARIANTS if (out / f"libkern_{n}.so").is_file()}
    try:
        report["integrated"] = integrated(libs, work)
    except Exception as exc:
        report["integrated"] = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        report["third_party"] = third_party(args.cuobjdump)
    except Exception as exc:
        report["third_party"] = [{"error": f"{type(exc).__name__}: {exc}"}]
    (out / "cuobjdump.txt").write_text("\n".join(listings))
    (out / "cuda_h100.json").write_text(json.dumps(report, indent=1, default=str))
    print_table(report)
    return 0


def print_table(report: dict) -> None:  # type: ignore[type-arg]
    print(f"\ndevice: {report['environment'].get('nvidia_smi', 'none')}  cc {report['device_cc']}")
    print(f"{'variant':10s} {'verdict':8s} {'kernels':8s} {'cold first use ms':>18s} {'warm first use ms':>18s} {'agree':>6s}")
    for name, v in report["variants"].items():
        fl = v.get("first_load") or {}
        cold = fl.get("cold", {}).get("first_use_ms_median")
        warm = fl.get("warm", {}).get("first_use_ms_median")
        k = v.get("kernels", {}).get("pass")
        print(f"{name:10s} {v.get('verdict', {}).get('verdict', '-'):8s} {k!s:8s} "
              f"{(f'{cold:.2f}' if cold is not None else '-'):>18s} {(f'{warm:.2f}' if warm is not None else '-'):>18s} {v.get('agree')!s:>6s}")


if __name__ == "__main__":
    sys.exit(main())
