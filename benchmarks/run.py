"""Run the benchmark suite: ``python -m benchmarks`` (or ``python benchmarks/run.py``).

Full run (≥5 runs each; wait for a quiet machine): writes ``benchmarks/results/results.json`` and
``docs/performance.md``. ``--quick``: a 6-kernel workload, one run, N=2 only, no download — for
smoke tests; writes only the JSON given by ``--json`` (default ``benchmarks/.work/quick.json``).
``--only p1,p3`` restricts the cases (p1 p2 p3 p4 p5 p6 jit).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # `python benchmarks/run.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import build_cases, inspect_cases, report, runtime_cases
from benchmarks.project import REPO, write_project
from benchmarks.timing import load1, wait_quiet
from benchmarks.tools import CLANG, LLVM_LINK, LLVM_SPIRV

HERE = Path(__file__).resolve().parent
CASES = ("p1", "p2", "p3", "p4", "p4n", "env", "cold", "p5", "p6", "jit")


def _version(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()
    except OSError:
        return "absent"
    return out[0] if out else "unknown"


def _display(path: Path) -> str:
    """``path`` relative to the repository when inside it (as the docs cite it)."""
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def machine() -> dict:
    """What the numbers were measured on."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        osname = platform.freedesktop_os_release().get("PRETTY_NAME", platform.platform())
    except OSError:
        osname = platform.platform()
    ocloc_pkg = _version(["dpkg-query", "-W", "-f", "${Version}", "intel-opencl-icd"])
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_gib": mem, "os": osname, "python": platform.python_version(),
            "ocloc": f"{ocloc_pkg} (Debian intel-opencl-icd)", "cmake": _version(["cmake", "--version"]),
            "ninja": _version(["ninja", "--version"]), "load_start": load1()}


def one_device_seconds(project: Path, scratch: Path, runs: int) -> float:
    """Seconds one ``ocloc -device pvc`` takes over the whole workload (linked SPIR-V)."""
    scratch.mkdir(parents=True, exist_ok=True)
    spvs = []
    for src in sorted((project / "kernels").glob("ops_*.cl")):
        bc, spv = scratch / f"{src.stem}.bc", scratch / f"{src.stem}.spv"
        subprocess.run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)], check=True)
        subprocess.run([LLVM_SPIRV, str(bc), "-o", str(spv)], check=True)
        spvs.append(spv)
    all_spv = build_cases.link_spirv(spvs, scratch / "all.spv")
    return min(build_cases.serial_ocloc(all_spv, ["pvc"], scratch)[0] for _ in range(runs))


class _Saving(dict):  # type: ignore[type-arg]
    """``res["cases"]``: storing a case writes the whole result document to ``path`` at once."""

    def __init__(self, doc: dict, path: Path) -> None:  # type: ignore[type-arg]
        super().__init__()
        self.doc, self.path = doc, path

    def __setitem__(self, key: str, value: object) -> None:
        super().__setitem__(key, value)
        self.path.write_text(json.dumps({**self.doc, "cases": dict(self), "complete": False}, indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description="aotwheel benchmark suite (issue 6 targets).")
    ap.add_argument("--quick", action="store_true", help="tiny workload, one run, no download (smoke test)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)}")
    ap.add_argument("--kernels", type=int, default=48)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--work", default=None, help="build trees, caches and wheels (default benchmarks/.work[/quick])")
    ap.add_argument("--json", default=None, help="where to write the results JSON")
    ap.add_argument("--doc", default=None, help="markdown summary to write (full runs: docs/performance.md)")
    ap.add_argument("--max-load", type=float, default=1.5, help="wait for the 1-min load to drop to this first")
    ap.add_argument("--max-wait", type=float, default=600.0, help="seconds to wait for a quiet machine")
    ap.add_argument("--render", metavar="JSON", default=None, help="only re-render --doc (default docs/performance.md) from a results JSON")
    a = ap.parse_args(argv)
    if a.render:
        doc = Path(a.doc) if a.doc else REPO / "docs" / "performance.md"
        report.update_doc(doc, report.render(json.loads(Path(a.render).read_text())))
        return 0
    only = [c for c in a.only.split(",") if c]
    bad = sorted(set(only) - set(CASES))
    if bad:
        ap.error(f"unknown case(s) {', '.join(bad)}; choose from {', '.join(CASES)}")
    if a.quick:
        a.runs, a.kernels, a.files = 1, 6, 2
    json_path = Path(a.json) if a.json else (HERE / ".work" / "quick.json" if a.quick else HERE / "results" / "results.json")
    doc_path = Path(a.doc) if a.doc else (None if a.quick else REPO / "docs" / "performance.md")
    for tool in ("cmake", "ninja", "ocloc", CLANG, LLVM_SPIRV, LLVM_LINK, "ar"):
        if not shutil.which(tool):
            print(f"benchmarks: error: {tool} not found; install it (see ci/setup.sh)", file=sys.stderr)
            return 2
    sys.path.insert(0, str(REPO / "python"))

    def log(msg: str) -> None:
        print(f"[bench] {msg}", file=sys.stderr, flush=True)

    work = Path(a.work or (HERE / ".work" / ("quick" if a.quick else "full"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if not a.quick:
        wait_quiet(a.max_load, a.max_wait, log)
    started = dt.datetime.now(dt.timezone.utc)
    project = work / "project"
    write_project(project, kernels=a.kernels, files=a.files)
    ctx = build_cases.Context(project=project, work=work, runs=a.runs, jobs=os.cpu_count() or 1, log=log)
    res: dict = {
        "schema": 1, "machine": machine(), "command": " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])]),
        "started": started.strftime("%Y-%m-%d %H:%M"), "runs": a.runs, "quick": a.quick,
        "workload": {"kernels": a.kernels, "files": a.files}, "cases": {}, "json_name": _display(json_path),
    }
    res["workload"]["one_device_s"] = one_device_seconds(project, work / "one_device", 1 if a.quick else 2)
    log(f"one device compile of the workload: {res['workload']['one_device_s']:.2f} s")
    # Each case's figures reach <json>.partial.json as soon as it finishes: a run stopped late
    # (a missing download, Ctrl-C) keeps what it measured; the full JSON replaces it at the end.
    partial = json_path.with_name(json_path.stem + ".partial.json")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    cases = res["cases"] = _Saving(res, partial)
    n_reuse = 2 if a.quick else 4
    if "p1" in only:
        cases["p1"] = build_cases.p1_parallel(ctx, (2,) if a.quick else (2, 4, 6))
        if not a.quick:
            cases["p1"]["overhead"] = build_cases.p1_overhead(ctx)
    reuse_tree = None
    if "p2" in only or "p3" in only or "p6" in only or "p5" in only:
        p2, reuse_tree = build_cases.p2_reuse(ctx, n_reuse)
        if "p2" in only:
            cases["p2"] = p2
    if "p3" in only and reuse_tree is not None:
        cases["p3"] = build_cases.p3_incremental(ctx, reuse_tree, a.kernels, a.files)
    if "p4" in only:
        cache = HERE / ".cache"
        path = cache / "libmkl_sycl.so.3"
        if not a.quick:
            path = runtime_cases.fetch_sycl_binary(cache, log) or path
        cases["p4"] = (runtime_cases.p4_inspect(path, a.runs, log) if path.is_file()
                       else {"skipped": "no ≥300 MB SYCL binary (full runs download mkl-dpcpp 2023.2.0 from PyPI)"})
    if "p4n" in only:
        path = HERE / ".cache" / "libattn_kernels_xe_2.so"
        if not a.quick:
            path = inspect_cases.fetch_vllm_library(HERE / ".cache", log) or path
        cases["p4n"] = (inspect_cases.p4_native(path, a.runs, log) if path.is_file()
                        else {"skipped": "no library with ~1,000 native members (full runs download vllm-xpu-kernels 0.1.16.2)"})
    if "env" in only or "cold" in only:
        venv = None if a.quick else inspect_cases.ensure_xpu_env(HERE / ".cache", log)
        if "env" in only:
            cases["env"] = (inspect_cases.env_inspect(venv, a.runs, log) if venv
                            else {"skipped": "no XPU environment (full runs install dpnp, dpctl and onemkl-sycl-* from PyPI)"})
        if "cold" in only:
            libs = [venv / "lib" / name for name in inspect_cases.COLD_LIBRARIES] if venv else []
            libs = [p for p in libs if p.is_file()]
            cases["cold"] = (inspect_cases.cold_inspect(libs, a.runs, log) if libs
                             else {"skipped": "no onemkl-sycl libraries (full runs install them from PyPI)"})
    if "p5" in only:
        so = next(reuse_tree.build.glob("_bench*.so"), None) if reuse_tree else None
        cases["p5"] = {"import": runtime_cases.p5_import(a.runs if a.quick else 5 * a.runs),
                       **runtime_cases.p5_check(so, a.runs)}
    if "p6" in only and reuse_tree is not None:
        variants = ["none", "pvc"] if a.quick else ["none", "pvc", "pvc,acm-g10", ",".join(build_cases.DEVICES[:4]),
                                                     ",".join(build_cases.DEVICES)]
        cases["p6"] = build_cases.p6_size(ctx, reuse_tree.cache, variants)
    if "jit" in only:
        spvs = [project.parent / "one_device" / f"ops_{i}.spv" for i in range(a.files)]
        cases["jit"] = runtime_cases.jit_context(spvs, a.runs, log)
    res["finished"] = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
    res["load_end"] = load1()
    json_path.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    partial.unlink(missing_ok=True)
    log(f"wrote {json_path}")
    if doc_path is not None:
        report.update_doc(doc_path, report.render(res))
        log(f"wrote {doc_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
