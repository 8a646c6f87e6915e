"""Build-side measurements: P1 parallel AOT, P2 reuse, P3 incremental, P6 size and aliases.

Every ratio is computed inside one run from measurements taken side by side (alternating which
side goes first), then summarised as median and min-max over the runs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.project import BuildTree, tool_env
from benchmarks.timing import Samples, run_timed
from benchmarks.tools import LLVM_LINK, LLVM_SPIRV
from benchmarks.workload import write_workload

# Devices Debian's ocloc 22.43 builds; the first N form the devlist for N targets.
DEVICES = ["pvc", "acm-g10", "tgllp", "dg1", "acm-g11", "adl-p"]
ALIASES = "ats-m150,acm-g10,dg2-g10"  # one IP (12.55.8): must compile and ship once


@dataclass
class Context:
    """Where the suite works and how hard it measures."""

    project: Path  # the generated CMake project
    work: Path  # build trees, caches, wheels
    runs: int
    jobs: int  # ninja -j (the core count)
    log: Callable[[str], None]

    def tree(self, name: str, devlist: str, cache: Path | None) -> BuildTree:
        return BuildTree(self.project, self.work / name, devlist, cache, self.jobs)

    def fresh_dir(self, name: str) -> Path:
        path = self.work / name
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path


def link_spirv(spvs: list[Path], out: Path) -> Path:
    """One SPIR-V module holding all the build's kernels (what icpx hands ocloc): the same
    SPIR-V, translated back to bitcode, linked with llvm-link and translated again."""
    tmp = out.parent
    bcs = []
    for spv in spvs:
        bc = tmp / (spv.stem + ".rev.bc")
        subprocess.run([LLVM_SPIRV, "-r", str(spv), "-o", str(bc)], check=True, capture_output=True)
        bcs.append(str(bc))
    linked = tmp / "all.bc"
    subprocess.run([LLVM_LINK, *bcs, "-o", str(linked)], check=True, capture_output=True)
    subprocess.run([LLVM_SPIRV, str(linked), "-o", str(out)], check=True, capture_output=True)
    return out


def serial_ocloc(spv: Path, devices: list[str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``ocloc compile -device a,b,...`` (one process, devices in series)."""
    for p in cwd.glob("fat*"):
        p.unlink()
    return run_timed(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", ",".join(devices),
                      "-output", "fat", "-q"], cwd=cwd)


def parallel_capacity(spv: Path, device: str, scratch: Path) -> float:
    """How much faster two identical, independent ocloc runs finish side by side than one after
    the other, right now (2.0 on two idle cores): what other people's load leaves for parallelism."""
    def cmd(tag: str) -> list[str]:
        return ["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", tag,
                "-out_dir", str(scratch / "capacity"), "-output_no_suffix", "-q"]
    seq = run_timed(cmd("a"))[0] + run_timed(cmd("b"))[0]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(cmd(t), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for t in ("a", "b")]
    if any(p.wait() != 0 for p in procs):
        raise RuntimeError("ocloc failed in the parallel-capacity probe")
    return seq / (time.perf_counter() - t0)


def raw_edges_ninja(tree: BuildTree, scratch: Path) -> Path:
    """A build.ninja of the same ocloc edges as our build's plan (``plan.json``), each a bare
    ``ocloc -device <group>`` with the flags our edges pass and no aotwheel process around it: the
    control. What ``ninja -j<cores>`` of it takes is what per-source parallelism reaches on this
    machine at all; ours minus that is what our edges add."""
    from aotwheel.backends.intel.buildsteps.ocloc_job import ocloc_command  # the argument list our edges run

    toolchain = json.loads((tree.work / "toolchain.json").read_text())
    names = toolchain.get("ocloc_names", {})
    out = scratch / "raw_edges"
    out.mkdir(parents=True, exist_ok=True)
    lines = ["rule ocloc", "  command = $cmd", "  description = raw ocloc $out", ""]
    plan = json.loads((tree.work / "plan.json").read_text())
    for k, edge in enumerate(e for e in plan["edges"] if e["step"] == "ocloc"):
        stem = Path(edge["data"]["spirv"]).stem
        devices = ",".join(names.get(n["device"], n["device"]) for n in edge["data"]["natives"])
        cmd = ocloc_command("ocloc", str((tree.work / f"{stem}.spv").resolve()), devices, f"edge{k}", str(out.resolve()), "")
        quoted = " ".join(_ninja_escape(shlex.quote(c)) for c in cmd)  # ninja runs it through /bin/sh
        lines += [f"build {_ninja_escape(str(out / f'edge{k}'), path=True)}: ocloc", f"  cmd = {quoted}", ""]
    (out / "build.ninja").write_text("\n".join(lines))
    return out


def _ninja_escape(text: str, path: bool = False) -> str:
    """``text`` as one word of a build.ninja line (a path in a build statement escapes ':' too)."""
    text = text.replace("$", "$$").replace(" ", "$ ")
    return text.replace(":", "$:") if path else text


def run_raw_edges(build: Path, jobs: int) -> tuple[float, float]:
    """(wall, CPU) of ``ninja -j<jobs>`` over the control's edges, every output removed first (its
    .ninja_log kept, as our build keeps its own)."""
    for p in build.glob("edge*"):
        p.unlink()
    return run_timed(["ninja", "-C", str(build), f"-j{jobs}", "-k", "1"])


def ar_members(path: Path) -> list[str]:
    """Member names as binutils' ``ar t`` lists them (an independent reader)."""
    out = subprocess.run(["ar", "t", str(path)], check=True, capture_output=True, text=True).stdout
    return [m.rstrip("/") for m in out.split()]


def p1_parallel(ctx: Context, ns: tuple[int, ...]) -> dict:
    """P1: serial ``ocloc -device <N>`` on all kernels vs our ninja -j<cores> edges as configure
    planned them (``buildsteps.groups.plan_edges``: one per source unless splitting a source's
    devices shortens the build), each one ``ocloc -device <group>``."""
    cores = os.cpu_count() or 1
    result: dict = {"cores": cores, "jobs": ctx.jobs, "target": "ours <= 1.15 * serial / min(N, cores)", "by_n": {}}
    for n in ns:
        devs = DEVICES[:n]
        tree = ctx.tree(f"p1_n{n}", ",".join(devs), None)  # cache off: every edge runs ocloc
        tree.configure()
        tree.ninja(tree.outputs(".spv"))
        scratch = ctx.fresh_dir(f"p1_n{n}_serial")
        spvs = [tree.build / p for p in tree.outputs(".spv")]
        all_spv = link_spirv(spvs, scratch / "all.spv")
        raw_build = raw_edges_ninja(tree, scratch)
        serial, ours, ratio, eff, cpu_ratio = Samples(), Samples(), Samples(), Samples(), Samples()
        capacity, ratio_cap = Samples(), Samples()
        control, control_ratio, over_control, control_cpu = Samples(), Samples(), Samples(), Samples()
        edges = runs = 0
        for r in range(ctx.runs):
            def run_ours() -> tuple[float, float]:
                nonlocal edges, runs
                tree.remove_device_outputs()
                nr = tree.ninja(tree.outputs(".fatbin"), cache=None)
                edges, runs = nr.ocloc_edge_count, nr.ocloc_runs
                return nr.seconds, nr.cpu
            # Ours always in the middle; the serial call and the control take turns at the ends.
            if r % 2 == 0:
                s, s_cpu = serial_ocloc(all_spv, devs, scratch)
                o, o_cpu = run_ours()
                c, c_cpu = run_raw_edges(raw_build, cores)
            else:
                c, c_cpu = run_raw_edges(raw_build, cores)
                o, o_cpu = run_ours()
                s, s_cpu = serial_ocloc(all_spv, devs, scratch)
            cap = parallel_capacity(spvs[0], devs[0], scratch)
            capacity.add(cap)
            ratio_cap.add(o / (s / min(n, cap)))
            ideal = s / min(n, cores)
            serial.add(s)
            ours.add(o)
            ratio.add(o / ideal)
            eff.add(ideal / o)
            cpu_ratio.add(o_cpu / s_cpu)
            control.add(c)
            control_ratio.add(c / ideal)
            over_control.add(o / c)
            control_cpu.add(c_cpu / s_cpu)
            ctx.log(f"P1 N={n} run {r + 1}: serial {s:.2f}s ours {o:.2f}s ratio {o / ideal:.3f} CPU ours/serial {o_cpu / s_cpu:.3f} "
                    f"control {c:.2f}s ratio {c / ideal:.3f} ours/control {o / c:.3f} capacity {cap:.2f}")
        result["by_n"][str(n)] = {
            "devices": devs,
            "serial_ocloc_s": serial.to_dict(),
            "ours_ninja_s": ours.to_dict(),
            "ratio_to_ideal": ratio.to_dict(),
            "efficiency": eff.to_dict(),
            "cpu_ours_over_serial": cpu_ratio.to_dict(),
            "parallel_capacity": capacity.to_dict(),
            "ratio_to_achievable": ratio_cap.to_dict(),
            # The control: the same edges as bare ocloc processes under ninja (raw_edges_ninja).
            "control_raw_edges_s": control.to_dict(),
            "control_ratio_to_ideal": control_ratio.to_dict(),
            "control_cpu_over_serial": control_cpu.to_dict(),
            "ours_over_control": over_control.to_dict(),
            "ocloc_edges": edges,
            "ocloc_runs": runs,
            "serial_members": ar_members(scratch / "fat"),
            "ours_members_ops_0": ar_members(tree.work / "ops_0.fatbin"),
            "met": ratio.median <= 1.15,
        }
    return result


def p1_overhead(ctx: Context) -> dict:
    """Where P1's extra CPU goes, for one device (pvc): the linked module in one ocloc vs one raw
    ocloc per source vs our edge command per source, with and without ``python -S``."""
    tree = ctx.tree("p1_n2", ",".join(DEVICES[:2]), None)
    if not (tree.build / "build.ninja").is_file():
        tree.configure()
    tree.ninja(tree.outputs(".spv"))
    scratch = ctx.fresh_dir("p1_overhead")
    spvs = [tree.build / p for p in tree.outputs(".spv")]
    all_spv = link_spirv(spvs, scratch / "all.spv")
    env = tool_env(None)
    toolchain = tree.work / "toolchain.json"

    def edge(python_flags: list[str]) -> tuple[float, float]:
        wall = cpu = 0.0
        for spv in spvs:
            w, c = run_timed([sys.executable, *python_flags, "-m", "aotwheel.buildsteps", "intel", "ocloc", "--toolchain", str(toolchain),
                              "--spirv", str(spv), "--device", "pvc", "--output", str(scratch / f"{spv.stem}.bin"),
                              "--options="], env=env)
            wall, cpu = wall + w, cpu + c
        return wall, cpu

    def raw() -> tuple[float, float]:
        wall = cpu = 0.0
        for spv in spvs:
            w, c = run_timed(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc", "-output", spv.stem,
                              "-out_dir", str(scratch), "-output_no_suffix", "-exclude_ir", "-q"])
            wall, cpu = wall + w, cpu + c
        return wall, cpu

    keys = ("linked_one_ocloc", "raw_ocloc_per_source", "edge_per_source", "edge_per_source_python_S")
    cpu = {k: Samples() for k in keys}
    for r in range(ctx.runs):
        got = {"linked_one_ocloc": serial_ocloc(all_spv, ["pvc"], scratch), "raw_ocloc_per_source": raw(),
               "edge_per_source": edge([]), "edge_per_source_python_S": edge(["-S"])}
        for k, (_, c) in got.items():
            cpu[k].add(c)
        ctx.log("P1 overhead run {}: CPU {}".format(r + 1, ", ".join(f"{k} {c:.2f}s" for k, (_, c) in got.items())))
    return {"device": "pvc", "sources": len(spvs), "cpu_s": {k: v.to_dict() for k, v in cpu.items()}}


def p2_reuse(ctx: Context, n: int) -> tuple[dict, BuildTree]:
    """P2: first build (cold cache) vs a second build of the same kernels in a fresh build dir."""
    devs = ",".join(DEVICES[:n])
    first, second, ratio, full = Samples(), Samples(), Samples(), Samples()
    misses_first = misses_second = 0
    tree_b = None
    for r in range(ctx.runs):
        cache = ctx.fresh_dir("p2_cache")
        tree_a = ctx.tree("p2_first", devs, cache)
        tree_a.configure()
        tree_a.ninja(tree_a.outputs(".spv"))
        fa = tree_a.ninja(tree_a.outputs(".fatbin"))
        tree_a.ninja()
        tree_b = ctx.tree("p2_second", devs, cache)
        cfg = tree_b.configure()
        sb = tree_b.ninja(tree_b.outputs(".spv"))
        fb = tree_b.ninja(tree_b.outputs(".fatbin"))
        rest = tree_b.ninja()
        first.add(fa.seconds)
        second.add(fb.seconds)
        ratio.add(fb.seconds / fa.seconds)
        full.add(cfg + sb.seconds + fb.seconds + rest.seconds)
        misses_first, misses_second = fa.ocloc_runs, fb.ocloc_runs
        ctx.log(f"P2 run {r + 1}: first {fa.seconds:.2f}s ({fa.ocloc_runs} ocloc) second {fb.seconds:.2f}s ({fb.ocloc_runs} ocloc)")
    assert tree_b is not None
    return {
        "devices": DEVICES[:n],
        "first_device_compile_s": first.to_dict(),
        "second_device_compile_s": second.to_dict(),
        "ratio": ratio.to_dict(),
        "second_full_build_s": full.to_dict(),
        "ocloc_runs_first": misses_first,
        "ocloc_runs_second": misses_second,
        "target": "second <= 0.15 * first",
        "met": ratio.median <= 0.15 and misses_second == 0,
    }, tree_b


def p3_incremental(ctx: Context, tree: BuildTree, kernels: int, files: int) -> dict:
    """P3: no-op ninja, and touching / editing one kernel source (which edges and ocloc runs)."""
    tree.ninja()
    src = ctx.project / "kernels" / "ops_0.cl"
    noop, touch, edit = Samples(), Samples(), Samples()
    noop_edges: set[int] = set()
    touch_edges: list[tuple[str, str]] = []
    edit_edges: list[tuple[str, str]] = []
    touch_runs = edit_runs = touch_count = edit_count = 0
    for r in range(ctx.runs):
        nr = tree.ninja()
        noop.add(nr.seconds)
        noop_edges.add(len(nr.ocloc_edges))
        os.utime(src)  # mtime only: same SPIR-V, so the cache answers
        nr = tree.ninja()
        touch.add(nr.seconds)
        touch_edges, touch_runs, touch_count = nr.ocloc_edges, nr.ocloc_runs, nr.ocloc_edge_count
        original = src.read_text()
        src.write_text(original + f"\n__kernel void bench_edit_{os.getpid()}_{r}(__global float *x) "
                                  f"{{ x[get_global_id(0)] += {r + 1}.0f; }}\n")
        try:
            nr = tree.ninja()
        finally:
            src.write_text(original)
        edit.add(nr.seconds)
        edit_edges, edit_runs, edit_count = nr.ocloc_edges, nr.ocloc_runs, nr.ocloc_edge_count
        tree.ninja()  # back to the original (cache hits)
        ctx.log(f"P3 run {r + 1}: no-op {noop.values[-1]:.3f}s touch {touch.values[-1]:.2f}s edit {edit.values[-1]:.2f}s")
    write_workload(ctx.project / "kernels", kernels=kernels, files=files)
    n_dev = len(tree.devlist.split(","))
    only_that_file = {e[0] for e in edit_edges} == {"ops_0.cl"} and len(edit_edges) == n_dev
    return {
        "devices": tree.devlist.split(","),
        "noop_s": noop.to_dict(),
        "noop_ocloc_edges": sorted(noop_edges),
        "touch_s": touch.to_dict(),
        "touch_ocloc_edges": [list(e) for e in touch_edges],
        "touch_ocloc_runs": touch_runs,
        "touch_ocloc_edge_count": touch_count,  # ninja edges; *_ocloc_edges lists the (source, device) pairs
        "edit_s": edit.to_dict(),
        "edit_ocloc_edges": [list(e) for e in edit_edges],
        "edit_ocloc_runs": edit_runs,
        "edit_ocloc_edge_count": edit_count,
        "target": "no-op <= 1 s; one edited file recompiles only its images",
        "met": noop.median <= 1.0 and noop_edges == {0} and only_that_file and edit_runs == n_dev,
    }


def _wheel(ctx: Context, devlist: str, cache: Path, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()
    env = tool_env(cache, USE_AOT_DEVLIST=devlist)
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ctx.project), "--no-build-isolation", "--no-deps",
                    "-q", "-w", str(out)], check=True, capture_output=True, env=env)
    return next(out.glob("*.whl"))


def p6_size(ctx: Context, cache: Path, variants: list[str]) -> dict:
    """P6: wheel size per devlist variant, bytes per target, aliases, compression."""
    import zlib

    rows = []
    for devlist in variants:
        whl = _wheel(ctx, devlist, cache, ctx.work / "wheels" / devlist.replace(",", "_"))
        with zipfile.ZipFile(whl) as z:
            so = next(i for i in z.infolist() if i.filename.endswith(".so"))
        n = 0 if devlist == "none" else len(devlist.split(","))
        rows.append({"devlist": devlist, "targets_named": n, "wheel_bytes": whl.stat().st_size,
                     "so_bytes": so.file_size, "so_deflated_bytes": so.compress_size})
        ctx.log(f"P6 {devlist}: wheel {whl.stat().st_size} B, .so {so.file_size} B")
    base = next(r for r in rows if r["devlist"] == "none")
    for r in rows:
        if r["targets_named"]:
            r["so_bytes_per_target"] = (r["so_bytes"] - base["so_bytes"]) / r["targets_named"]
            r["wheel_bytes_per_target"] = (r["wheel_bytes"] - base["wheel_bytes"]) / r["targets_named"]

    # Aliases: three names of one IP -> one ocloc edge per source, one member per fat binary.
    tree = ctx.tree("p6_alias", ALIASES, cache)
    tree.configure()
    nr = tree.ninja(tree.outputs(".fatbin"))
    members = ar_members(tree.work / "ops_0.fatbin")
    natives = [m for m in members if not m.startswith("pad_") and m != "generic_ir"]
    alias = {"devlist": ALIASES, "ocloc_edges": len(nr.ocloc_edges), "sources": len(tree.outputs(".spv")),
             "members_ops_0": members, "native_members": natives, "met": len(natives) == 1}

    # Compression: the fat binaries of the largest devlist, raw vs deflate (what a wheel's zip
    # does) vs zstd (what icpx --offload-compress embeds).
    import zstandard

    big = ctx.tree("p6_compress", variants[-1], cache)
    big.configure()
    big.ninja(big.outputs(".fatbin"))
    blobs = [(big.build / p).read_bytes() for p in big.outputs(".fatbin")]
    per_target: dict[str, int] = {}  # ar member -> bytes over all sources, from binutils' `ar tv`
    for p in big.outputs(".fatbin"):
        listing = subprocess.run(["ar", "tv", str(big.build / p)], check=True, capture_output=True, text=True).stdout
        for line in listing.splitlines():
            fields = line.split()
            name = fields[-1].rstrip("/")
            if not name.startswith("pad_"):
                per_target[name] = per_target.get(name, 0) + int(fields[2])
    raw = sum(len(b) for b in blobs)
    comp = {
        "devlist": variants[-1],
        "raw_bytes": raw,
        "deflate6_bytes": sum(len(zlib.compress(b, 6)) for b in blobs),
        "zstd3_bytes": sum(len(zstandard.ZstdCompressor(level=3).compress(b)) for b in blobs),
        "zstd19_bytes": sum(len(zstandard.ZstdCompressor(level=19).compress(b)) for b in blobs),
    }
    return {"variants": rows, "aliases": alias, "compression": comp, "member_bytes": per_target,
            "met": alias["met"] and alias["ocloc_edges"] == alias["sources"]}
