"""Render the suite's JSON as ``docs/performance.md`` (keeping sections other people append)."""

from __future__ import annotations

import statistics
from pathlib import Path

# Sections appended below ours by others (e.g. the CUDA engineer's H100 numbers) are kept.
_FOREIGN_MARKERS = (
    "## CLI start-up",
    "## Native code outside CMake",
    "## NVIDIA (H100)",
    "## Scale-out",
)  # benchmarks/cli_startup.py, native_code.py, cuda_h100.py, scaleout.py

# Why a target is missed, from profiling on the dev machine; printed only when it is missed.
_WHY = {
    "P1": (
        "Two causes, both measured in the same runs. (1) The machine: {machine} "
        "{idle}"
        "(2) CPU: our build uses {cpu}× the serial call's CPU. The serial call gains nothing from sharing "
        "work between devices: one `ocloc -device pvc,acm-g10,tgllp,dg1,acm-g11,adl-p` on the linked module "
        "took 11.45 s CPU, the six single-device calls 11.36 s in sum (pvc 2.54 s, the others ≈1.76 s each; "
        "measured once with `/usr/bin/time ocloc compile -file all.spv -spirv_input -device <d>` on a quiet "
        "machine). Ours: {edges} ocloc edges as configure planned them (`backends/intel/buildsteps/groups.py`: one edge per "
        "source with all its devices when the sources are at least the cores and of similar size, and that edge "
        "also writes the source's fat binary; before, min(N, cores) groups per source plus one `fatbin` step per "
        "source, 3·S Python processes at N = cores), each a `python …/buildsteps/__main__.py ocloc` process "
        "(interpreter start and imports ≈0.075 s CPU: the remote stores, the shard plan and `typing` are imported "
        "only when needed) around one `ocloc -device <the group's cache misses> -exclude_ir` (≈0.1 s of ocloc "
        "start-up) split into per-device members. One after the other (`ninja -j1`) these edges used about the "
        "serial call's CPU (N=2: 6.31 s vs 6.41 s, measured once at load 1.8: ocloc compiles the four per-source "
        "modules for less than the linked one, which pays for the processes), so what is left of the CPU ratio is "
        "the inflation of two compiles sharing the two cores (`-j2` ≈7% more CPU than `-j1`), the same effect that "
        "keeps the capacity probe below 2.0 on idle cores."
    ),
    "P4": (
        "The time goal: one C pass (`aotwheel._fastscan.table_leaves`) goes from the `.tgtimg` table to the report's "
        "Image objects: each entry's address (RELATIVE addends read once into per-slot records), file offset and "
        "bundle section, its head read with pread on the mapped file (not a page fault), one Image made per image and "
        "no intermediate record (until 2026-11-23 each image was first a HostImage made in C and then an Image made "
        "from it). Python keeps the ELF headers, `.tgtsym`'s kernel count (C) and the report. The ratio goal "
        "(inspect <= 0.05 x `cat`, about 3-4 ms here) is below what listing 13,991 images costs at all: one pread "
        "(~0.8 µs here) and one Image object (~0.7 µs) per image. Reaching it would take a report that does not "
        "list every image (a contract change), so it is left missed."
    ),
    "P4n": (
        "The per-member step runs in C (aotwheel._fastscan: one call per fat binary reads the ar headers, each "
        "zebin's section table and its `.note.intelgt.compat` notes and generic_ir's payload head, with pread on the "
        "mapped file so that no page is mapped; Python only makes the 1,004 Target records from memoised values). "
        "What is left per member is about 2.5 pread calls (strace: 2,525 for the file's 1,004 members) copying the "
        "section table and the 16 kB before it, where the notes are (a read-behind of 0, 4 or 16 kB measured the "
        "same, 2026-11-23: fewer bytes cost more calls), one tuple of note values and one Target. Both this figure "
        "and the pure-Python one move with the machine's load and memory speed."
    ),
    "env": (
        "The environment is mostly onemkl's ~19k zstd-compressed 2 kB SPIR-V images and ~23k plain ones. Compressed "
        "images in `spir64` sections are no longer decompressed in the default report (content from the triple, frame "
        "size from the zstd headers: ~2.6 µs per image in Python); plain SPIR-V images go through the C scanner. What "
        "is left: the Python loop over compressed images, the host ELF of every file, and walking the folder."
    ),
    "cold": (
        "I/O is below `cat` (MADV_WILLNEED over .tgtimg/.tgtsym and over runs of densely packed images; header "
        "bytes read with pread); what is left is the warm CPU time of the same per-image loop as in the environment row."
    ),
    "P5-check": (
        "`check()` inspects the binary on every call (no memo) — an ELF parse per call. Fix (owner of "
        "`aotwheel/runtime.py`): memoize the inspected files by (realpath, st_size, st_mtime_ns)."
    ),
}


def _mm(d: dict, unit: str = "s", fmt: str = "{:.2f}") -> str:
    return f"{fmt.format(d['median'])} {unit} ({fmt.format(d['min'])}–{fmt.format(d['max'])})"


def _cap(d: dict, key: str, fmt: str) -> str:
    if key not in d:
        return "—"
    v = d[key]
    return f"{fmt.format(v['median'])} ({fmt.format(v['min'])}–{fmt.format(v['max'])})"


def _ok(met: bool | None, value: float | None = None, goal: float | None = None) -> str:
    if met is None:
        return "—"
    if met:
        return "**met**"
    if value is not None and goal:
        return f"**missed** ({value / goal:.2f}× the goal)"
    return "**missed**"


def render(res: dict) -> str:
    """The markdown summary of one suite run."""
    m = res["machine"]
    lines = [
        "# Performance",
        "",
        "Measured figures, each with the command that produced it; sections are added per area. Everything "
        "above the NVIDIA section is generated by `python -m benchmarks` (benchmarks/run.py) from "
        f"`{res.get('json_name', 'benchmarks/results/results.json')}`: do not edit it by hand, rerun the suite.",
        "",
        "## Machine and method",
        "",
        f"- Machine: {m['cpu']} — {m['cores']} cores, {m['mem_gib']:.0f} GiB RAM, {m['os']}; Python {m['python']}; "
        f"ocloc {m['ocloc']}; {m['cmake']}; ninja {m['ninja']}.",
        f"- Command: `{res['command']}` ({res['started']} → {res['finished']} UTC).",
        f"- Load average (1 min) at start {m['load_start']:.2f}, at end {res['load_end']:.2f} on {m['cores']} cores; "
        "ratios are computed within one run from measurements taken side by side "
        "(alternating which goes first), then summarised as median (min–max) over the runs.",
        f"- Workload: `benchmarks/workload.py`, {res['workload']['kernels']} kernels (GEMM / softmax / reduction "
        f"variants) in {res['workload']['files']} OpenCL C files; one device compile of the whole set "
        f"takes {res['workload'].get('one_device_s', float('nan')):.2f} s with this ocloc.",
        f"- Runs per measurement: {res['runs']}.",
        "",
        "## Targets",
        "",
        "| target | measured (median, min–max) | goal | result |",
        "|---|---|---|---|",
    ]
    c = res["cases"]
    why: list[tuple[str, str]] = []
    if "p1" in c:
        for n, d in c["p1"]["by_n"].items():
            r = d["ratio_to_ideal"]
            lines.append(
                f"| P1 parallel AOT, N={n} on {c['p1']['cores']} cores | ours/(serial/min(N,C)) = "
                f"{r['median']:.3f} ({r['min']:.3f}–{r['max']:.3f}); efficiency {d['efficiency']['median']:.0%} | ≤ 1.15 | {_ok(d['met'], r['median'], 1.15)} |"
            )
        if not all(d["met"] for d in c["p1"]["by_n"].values()):
            worst = max(c["p1"]["by_n"].values(), key=lambda d: d["ratio_to_ideal"]["median"])
            idle = []
            for d in c["p1"]["by_n"].values():
                caps = d.get("parallel_capacity", {}).get("values", [])
                idle += [(r, cr) for cap, r, cr in zip(caps, d["ratio_to_ideal"]["values"], d["cpu_ours_over_serial"]["values"])
                         if cap >= 1.9]
            idle_text = ""
            if idle:
                rs, crs = [r for r, _ in idle], [cr for _, cr in idle]
                idle_text = (f"In the {len(idle)} runs whose capacity probe found the full 2 cores (≥ 1.9), "
                             f"ours/(serial/min(N,C)) had a median of {statistics.median(rs):.3f} ({min(rs):.3f}–{max(rs):.3f}; "
                             "the probe runs between the builds, so a build can still meet a busy moment) against a "
                             f"median CPU ratio of {statistics.median(crs):.3f}: on free cores what is left is mostly the CPU ratio. ")
            cap_med = worst.get("parallel_capacity", {}).get("median")
            if cap_med is not None and cap_med < 1.9:
                machine = (f"two identical, independent ocloc processes finished only {_cap(worst, 'parallel_capacity', '{:.2f}')}× "
                           "faster side by side than one after the other (\"capacity\", 2.0 on idle cores) because other "
                           "engineers' jobs held part of the two cores; the single-process baseline does not need the second "
                           f"core, our build does. Against serial/min(N, capacity) our ratio is {_cap(worst, 'ratio_to_achievable', '{:.3f}')}.")
            elif cap_med is not None:
                machine = (f"mostly free during this run (capacity {_cap(worst, 'parallel_capacity', '{:.2f}')}: two identical "
                           "ocloc processes side by side finished about twice as fast as one after the other), so other "
                           "people's load explains little of the gap.")
            else:
                machine = "load not separated from ours (capacity not measured in this run)."
            why.append(("P1", _WHY["P1"].format(machine=machine, idle=idle_text,
                cpu=f"{worst['cpu_ours_over_serial']['median']:.2f}",
                edges=worst["ocloc_edges"],
            )))
    if "p2" in c:
        d = c["p2"]
        lines.append(
            f"| P2 reuse (second build, fresh dir, warm cache) | second/first device compile = {d['ratio']['median']:.3f} "
            f"({d['ratio']['min']:.3f}–{d['ratio']['max']:.3f}); ocloc runs {d['ocloc_runs_second']} | ≤ 0.15, 0 ocloc | "
            f"{_ok(d['met'], d['ratio']['median'], 0.15)} |"
        )
    if "p3" in c:
        d = c["p3"]
        lines.append(f"| P3 no-op rebuild | {_mm(d['noop_s'], 's', '{:.3f}')} | ≤ 1 s | {_ok(d['noop_s']['median'] <= 1.0)} |")
        lines.append(f"| P3 edit one file | {d.get('edit_ocloc_edge_count', len(d['edit_ocloc_edges']))} ocloc edges, {d['edit_ocloc_runs']} ocloc runs "
                     f"({len(d['devices'])} devices) | only that file's images | {_ok(d['met'])} |")
    if "p4" in c and "skipped" not in c["p4"]:
        d = c["p4"]
        lines.append(
            f"| P4 inspect {d['bytes'] / 1e6:.0f} MB `{d['file']}` | {_mm(d['inspect_ms'], 'ms', '{:.1f}')}; "
            f"inspect/cat = {d['ratio']['median']:.2f} ({d['ratio']['min']:.2f}–{d['ratio']['max']:.2f}) | ≤ 50 ms and ≤ 0.05 | "
            f"{_ok(d['inspect_ms']['median'] <= 50, d['inspect_ms']['median'], 50)} (time), "
            f"{_ok(d['ratio']['median'] <= 0.05, d['ratio']['median'], 0.05)} (ratio) |"
        )
        if not d["met"]:
            text = _WHY["P4"]
            if d["inspect_ms"]["median"] > 50:
                text += (f" The time goal was missed in this run, with `cat` of the same file at {_mm(d['cat_ms'], 'ms', '{:.1f}')} "
                         f"and inspect/cat {d['ratio']['median']:.2f}: inspect moves with the machine as `cat` does.")
            why.append(("P4", text))
    elif "p4" in c:
        lines.append(f"| P4 inspect | skipped: {c['p4']['skipped']} | ≤ 50 ms | — |")
    if "p4n" in c and "skipped" not in c["p4n"]:
        d = c["p4n"]
        lines.append(f"| P4n inspect {d['bytes'] / 1e6:.0f} MB `{d['file']}` ({d['native_targets']} native members) | "
                     f"{_mm(d['inspect_ms'], 'ms', '{:.1f}')}; per native member {_mm(d['per_member_us'], 'µs', '{:.1f}')} | ≤ 50 ms, ≤ 10 µs | "
                     f"{_ok(d['inspect_ms']['median'] <= 50, d['inspect_ms']['median'], 50)} (time), "
                     f"{_ok(d['per_member_us']['median'] <= 10, d['per_member_us']['median'], 10)} (per member) |")
        if not d["met"]:
            why.append(("P4n", _WHY["P4n"] + f" This run: {d['per_member_us']['median']:.1f} µs per member in C, "
                               f"{d['per_member_python_us']['median']:.1f} µs through the pure-Python readers."))
    elif "p4n" in c:
        lines.append(f"| P4n inspect, many native members | skipped: {c['p4n']['skipped']} | ≤ 50 ms | — |")
    if "env" in c and "skipped" not in c["env"]:
        d = c["env"]
        lines.append(f"| Inspect an environment ({d['files']} files, {d['bytes'] / 1e9:.2f} GB) | {_mm(d['seconds'], 's', '{:.2f}')}; "
                     f"{d['gb_per_s']:.1f} GB/s | ≥ 5 GB/s | {_ok(d['met'], d['gb_per_s'], 5)} |")
        if not d["met"]:
            why.append(("Inspect an environment", _WHY["env"]))
    elif "env" in c:
        lines.append(f"| Inspect an environment | skipped: {c['env']['skipped']} | ≥ 5 GB/s | — |")
    if "cold" in c and "skipped" not in c["cold"]:
        d = c["cold"]
        ratios = "; ".join(f"`{n}` {f['ratio']['median']:.2f}" for n, f in d["files"].items())
        lines.append(f"| Cold page cache: inspect/cat | {ratios} | ≤ 1.5 | {_ok(d['met'], d['worst_ratio'], 1.5)} |")
        if not d["met"]:
            why.append(("Cold page cache", _WHY["cold"]))
    elif "cold" in c:
        lines.append(f"| Cold page cache | skipped: {c['cold']['skipped']} | ≤ 1.5 × cat | — |")
    if "p5" in c:
        d = c["p5"]["import"]
        lines.append(
            f"| P5 `import aotwheel` − `pass` | {_mm(d['difference_ms'], 'ms', '{:.1f}')} | ≤ 20 ms | {_ok(d['met'], d['difference_ms']['median'], 20)} |"
        )
        if d.get("importtime_cumulative_us") is not None:
            us = d["importtime_cumulative_us"]
            lines.append(f"| P5 `-X importtime` cumulative, `import aotwheel` | {us / 1e3:.2f} ms | ≤ 5 ms | {_ok(us <= 5000, us / 1e3, 5)} |")
        hook_us = d.get("hook_importtime_cumulative_us")
        if hook_us is not None:
            lines.append(
                f"| P5 `-X importtime` cumulative, a generated `_aot.py` | {hook_us / 1e3:.2f} ms | ≤ 5 ms | {_ok(hook_us <= 5000, hook_us / 1e3, 5)} |"
            )
        ch = c["p5"].get("check")
        if ch:
            lines.append(
                f"| P5 `check()` with probes cached | {_mm(ch['cached_check_ms'], 'ms', '{:.3f}')} | ≤ 1 ms | "
                f"{_ok(ch['met'], ch['cached_check_ms']['median'], 1)} |"
            )
            if not ch["met"]:
                why.append(("P5 check()", _WHY["P5-check"]))
    if "p6" in c:
        d = c["p6"]
        a = d["aliases"]
        lines.append(f"| P6 aliases `{a['devlist']}` | {len(a['native_members'])} native member per fat binary, "
                     f"{a['ocloc_edges']} ocloc edges for {a['sources']} sources | one image | {_ok(d['met'])} |")
    lines += ["", "Where a target is missed, why and the fix:", ""] if why else []
    for name, text in why:
        lines += [f"- **{name}**: {text}"]
    lines += ["", *_details(res)]
    return "\n".join(lines).rstrip() + "\n"


def _details(res: dict) -> list[str]:
    c = res["cases"]
    out: list[str] = []
    if "p1" in c:
        out += [
            "## P1 — parallel AOT",
            "",
            "(a) one `ocloc compile -file all.spv -spirv_input -device a,b,…` over all kernels linked into one "
            "SPIR-V module (what icpx/ocloc do: one serial process), vs (b) `ninja -j<cores>` of our edges, one per "
            "(source, group of devices) as configure planned them (one per source, writing its fat binary too, unless "
            "splitting a source's devices shortens the build on the cores), each one `ocloc -device <group>`, with the device-code cache off, "
            "from the same SPIR-V (our build's modules, linked for (a)). "
            'Both produce ocloc fat binaries with the same members. "CPU ours/serial" is user+system CPU '
            "(getrusage of the children): the per-process overhead of our edges, which other people's load "
            "does not move; the wall ratio can reach 1.0 only if it is ~1.",
            "",
            '"Capacity" is measured in the same run: two identical, independent `ocloc` processes (first source, first '
            "device) one after the other vs side by side; 2.0 on two idle cores, less when other people's jobs hold "
            'part of a core. "ours/achievable" divides by serial/min(N, capacity) instead of serial/min(N, C).',
            "",
            "The control, in the same runs: the same edges as configure planned them, each a bare `ocloc compile "
            "-device <group> -exclude_ir` (the command our edge runs) under `ninja -j<cores>`, with no aotwheel "
            'process: what per-source parallelism reaches on this machine at all. "ours/control" is what our '
            "edges add to it (their Python processes, the fat binaries); each run times ours between the serial call "
            "and the control, which take turns at the ends.",
            "",
            "| N | devices | serial ocloc | ours (ninja) | ours/(serial/min(N,C)) | efficiency | CPU ours/serial | capacity | ours/achievable "
            "| control (bare ocloc edges) | control/(serial/min(N,C)) | ours/control | ocloc runs (ours) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for n, d in c["p1"]["by_n"].items():
            control = (f"{_mm(d['control_raw_edges_s'])} | {_cap(d, 'control_ratio_to_ideal', '{:.3f}')} | "
                       f"{_cap(d, 'ours_over_control', '{:.3f}')}" if "control_raw_edges_s" in d else "— | — | —")
            out.append(f"| {n} | {','.join(d['devices'])} | {_mm(d['serial_ocloc_s'])} | {_mm(d['ours_ninja_s'])} | "
                       f"{d['ratio_to_ideal']['median']:.3f} ({d['ratio_to_ideal']['min']:.3f}–{d['ratio_to_ideal']['max']:.3f}) | "
                       f"{d['efficiency']['median']:.0%} | {d['cpu_ours_over_serial']['median']:.3f} | "
                       f"{_cap(d, 'parallel_capacity', '{:.2f}')} | {_cap(d, 'ratio_to_achievable', '{:.3f}')} | {control} | {d['ocloc_runs']} |")
        out.append("")
        ov = c["p1"].get("overhead")
        if ov:
            cs = ov["cpu_s"]
            out += [f"Where the extra CPU goes (device {ov['device']}, {ov['sources']} sources, CPU seconds, median (min–max)):", "",
                    "| how | CPU |", "|---|---|",
                    f"| one ocloc on the linked module | {_mm(cs['linked_one_ocloc'])} |",
                    f"| one raw ocloc per source | {_mm(cs['raw_ocloc_per_source'])} |",
                    f"| our edge per source (`python -m aotwheel.buildsteps intel ocloc`) | {_mm(cs['edge_per_source'])} |",
                    f"| our edge per source with `python -S` | {_mm(cs['edge_per_source_python_S'])} |", ""]
    if "p2" in c:
        d = c["p2"]
        out += ["## P2 — reuse across builds", "",
                f"Devices {','.join(d['devices'])}. First build: fresh build dir, empty cache. Second build: another fresh "
                "build dir (as in a wheel matrix), same cache. Device-compile phase = `ninja <fat binaries>` after SPIR-V.", "",
                f"- first device compile: {_mm(d['first_device_compile_s'])}, {d['ocloc_runs_first']} ocloc runs",
                f"- second device compile: {_mm(d['second_device_compile_s'], 's', '{:.3f}')}, {d['ocloc_runs_second']} ocloc runs",
                f"- ratio: {d['ratio']['median']:.3f} ({d['ratio']['min']:.3f}–{d['ratio']['max']:.3f})",
                f"- second build end to end (configure + SPIR-V + device code + C compile/link): {_mm(d['second_full_build_s'])}", ""]
    if "p3" in c:
        d = c["p3"]
        out += [
            "## P3 — incremental",
            "",
            f"- no-op `ninja`: {_mm(d['noop_s'], 's', '{:.3f}')}, ocloc edges run: {d['noop_ocloc_edges']}",
            f"- `touch kernels/ops_0.cl` (same content): {_mm(d['touch_s'])}; ocloc edges re-run "
            f"{d.get('touch_ocloc_edge_count', len(d['touch_ocloc_edges']))} (all for ops_0.cl: {all(e[0] == 'ops_0.cl' for e in d['touch_ocloc_edges'])}), "
            f"ocloc processes {d['touch_ocloc_runs']} (the SPIR-V is unchanged, so the cache answers)",
            f"- edit ops_0.cl (one kernel appended): {_mm(d['edit_s'])}; ocloc edges {d.get('edit_ocloc_edge_count', len(d['edit_ocloc_edges']))} "
            f"({', '.join(sorted({e[0] for e in d['edit_ocloc_edges']}))}), ocloc processes {d['edit_ocloc_runs']}",
            "",
        ]
    if "p4" in c and "skipped" not in c["p4"]:
        d = c["p4"]
        out += ["## P4 — inspecting a large third-party SYCL binary", "",
                f"`{d['file']}` from {d['source']} ({d['bytes']:,} bytes, {d['images']} SYCL images, {d['kernels']} kernels, "
                f"IR {d['ir']}, {d['native_targets']} native targets). Page cache warm for both; `cat` to /dev/null in a subprocess, "
                "`aotwheel.inspect()` in-process after one warm-up call.", "",
                f"- inspect: {_mm(d['inspect_ms'], 'ms', '{:.1f}')}",
                f"- cat: {_mm(d['cat_ms'], 'ms', '{:.1f}')}",
                f"- inspect/cat: {d['ratio']['median']:.2f} ({d['ratio']['min']:.2f}–{d['ratio']['max']:.2f})"]
        if "floor_header_only_ms" in d:
            out += [f"- floor, a header-only pure-Python reader (`python -m benchmarks.inspect_floor FILE`: struct/memoryview "
                    f"headers, bisect over `.rela.dyn`, first 4 bytes of each image): {_mm(d['floor_header_only_ms'], 'ms', '{:.1f}')} "
                    f"with the distinct-kernel count from `.tgtsym`, {_mm(d['floor_header_only_no_kernel_count_ms'], 'ms', '{:.1f}')} without"]
        out.append("")
    if "p4n" in c and "skipped" not in c["p4n"]:
        d = c["p4n"]
        out += ["## P4n — inspecting a library with a thousand native members", "",
                f"`{d['file']}` from {d['source']} ({d['bytes']:,} bytes, {d['images']} fat binaries, {d['native_targets']} zebin members). "
                "Page cache warm; `aotwheel.inspect()` in-process after one warm-up call. \"Per native member\" times the whole "
                "fat-binary step of the default walk (`_walk_fat_binary` of every image: ar headers, each zebin's section table and "
                "its one `.note.intelgt.compat` section, the generic_ir member, catalog lookup, cross-checks, the targets) over the "
                "file, divided by its native members" + (" (C scanner aotwheel._fastscan; the pure-Python readers for reference)"
                                                         if d.get("fastscan") else " (pure-Python readers: aotwheel._fastscan not built)") + ".", "",
                f"- inspect: {_mm(d['inspect_ms'], 'ms', '{:.1f}')}",
                f"- per native member: {_mm(d['per_member_us'], 'µs', '{:.2f}')}"]
        if "per_member_python_us" in d:
            out.append(f"- per native member, `AOTWHEEL_NO_FASTSCAN=1`: {_mm(d['per_member_python_us'], 'µs', '{:.2f}')}")
        out.append("")
    if "env" in c and "skipped" not in c["env"]:
        d = c["env"]
        out += ["## Inspecting an environment", "",
                f"`aotwheel.inspect(\"{d['folder']}\")` (site-packages and the libraries onemkl installs beside it) of a venv made with "
                f"`pip install {' '.join(d['packages'])}`: {d['files']} candidate files, {d['bytes']:,} bytes, {d['binaries_reported']} binaries "
                f"reported ({d['unreadable']} unreadable). Page cache warm (every file read once before). "
                "Most of the environment is onemkl's ~19k zstd-compressed SPIR-V images: the default report reads each one's "
                "size from its zstd frame and block headers and takes its content from its `spir64` bundle triple (SPIR-V) "
                "instead of decompressing it (~10 µs of zstd per image; `--deep` still decompresses and reads it, "
                "docs/report-schema.md); report JSON identical to the decompressing code on this whole folder.", "",
                f"- time: {_mm(d['seconds'], 's', '{:.2f}')}; throughput {d['gb_per_s']:.2f} GB/s", ""]
    if "cold" in c and "skipped" not in c["cold"]:
        d = c["cold"]
        out += ["## Cold page cache", "",
                "Each run drops the file's pages (`posix_fadvise(POSIX_FADV_DONTNEED)`), times `cat FILE > /dev/null`, drops them "
                "again and times `aotwheel.inspect(FILE)` (imports warm).", "",
                "| file | images | cold inspect | cold cat | ratio | warm inspect |", "|---|---|---|---|---|---|"]
        for name, f in d["files"].items():
            out.append(f"| `{name}` | {f['images']} | {_mm(f['cold_inspect_ms'], 'ms', '{:.0f}')} | {_mm(f['cold_cat_ms'], 'ms', '{:.0f}')} | "
                       f"{f['ratio']['median']:.2f} ({f['ratio']['min']:.2f}–{f['ratio']['max']:.2f}) | {_mm(f['warm_inspect_ms'], 'ms', '{:.0f}')} |")
        out.append("")
    if "p5" in c:
        d = c["p5"]
        imp = d["import"]
        out += ["## P5 — run-time overhead", "",
                f"- `python -c pass`: {_mm(imp['pass_ms'], 'ms', '{:.1f}')}; `python -c \"import aotwheel\"`: "
                f"{_mm(imp['import_ms'], 'ms', '{:.1f}')}; difference (paired): {_mm(imp['difference_ms'], 'ms', '{:.1f}')}; "
                f"`-X importtime` cumulative for aotwheel: {imp['importtime_cumulative_us']} µs"]
        ch = d.get("check")
        if ch:
            out.append(f"- `check({ch['binary']})`: first call (probes + inspect) {ch['first_check_ms']:.1f} ms; with probes cached "
                       f"{_mm(ch['cached_check_ms'], 'ms', '{:.3f}')} per call (timeit, 200 calls × 5); devices seen: {', '.join(ch['devices']) or 'none'}")
        out += ["", "First probe per backend (fresh interpreter, import of the probe included):", "",
                "| backend | time | devices | note |", "|---|---|---|---|"]
        for name, p in d["probes"].items():
            out.append(f"| {name} | {_mm(p['first_probe_ms'], 'ms', '{:.1f}')} | {p['devices']} | {p['reason'] or ''} |")
        out.append("")
    if "p6" in c:
        d = c["p6"]
        out += ["## P6 — size", "",
                "Wheels built with `pip wheel` (scikit-build-core, JIT fallback on, warm cache) per `USE_AOT_DEVLIST`; "
                "\"per target\" is relative to the `none` (SPIR-V only) wheel, \"per extra target\" relative to the "
                "one-target wheel. The first target costs more: it also brings the fat binaries' `generic_ir` member "
                "(the SPIR-V a second time, what lets the driver JIT from the spir64_gen image).", "",
                "| devlist | targets | wheel | .so | .so per target | wheel per target | .so per extra target | wheel per extra target |",
                "|---|---|---|---|---|---|---|---|"]
        one = next((r for r in d["variants"] if r["targets_named"] == 1), None)
        for r in d["variants"]:
            extra = ("—", "—")
            if one is not None and r["targets_named"] > 1:
                k = r["targets_named"] - 1
                extra = (f"{(r['so_bytes'] - one['so_bytes']) / k:,.0f}", f"{(r['wheel_bytes'] - one['wheel_bytes']) / k:,.0f}")
            out.append(f"| `{r['devlist']}` | {r['targets_named']} | {r['wheel_bytes']:,} | {r['so_bytes']:,} | "
                       f"{r.get('so_bytes_per_target', 0):,.0f} | {r.get('wheel_bytes_per_target', 0):,.0f} | {extra[0]} | {extra[1]} |")
        if d.get("member_bytes"):
            out += ["", f"Bytes per target inside the fat binaries of `{d['compression']['devlist']}` (all sources, from `ar tv`):", "",
                    "| member | bytes |", "|---|---|"]
            out += [f"| `{k}` | {v:,} |" for k, v in d["member_bytes"].items()]
        a, cp = d["aliases"], d["compression"]
        out += ["", f"Aliases `{a['devlist']}`: {a['ocloc_edges']} ocloc edges for {a['sources']} sources; `ar t ops_0.fatbin` = "
                f"{', '.join(a['members_ops_0'])}.", "",
                f"Compression of the `{cp['devlist']}` fat binaries ({cp['raw_bytes']:,} bytes raw): deflate-6 (what the wheel's zip does) "
                f"{cp['deflate6_bytes']:,} ({cp['deflate6_bytes'] / cp['raw_bytes']:.0%}), zstd-3 {cp['zstd3_bytes']:,} "
                f"({cp['zstd3_bytes'] / cp['raw_bytes']:.0%}), zstd-19 {cp['zstd19_bytes']:,} ({cp['zstd19_bytes'] / cp['raw_bytes']:.0%}). "
                "The open-toolchain backend embeds images uncompressed (the installed .so is larger, the wheel is not); "
                "icpx's `--offload-compress` is the zstd column.", ""]
    if "jit" in c:
        d = c["jit"]
        if "skipped" in d:
            out += ["## Context — JIT vs cached binary", "", f"Skipped: {d['skipped']}", ""]
        else:
            out += ["## Context — what AOT saves (JIT vs cached binary)", "",
                    f"Intel CPU OpenCL runtime ({d['device']}, driver {d['driver']}), {d['kernels']} kernels of the workload: "
                    f"building from SPIR-V (clCreateProgramWithIL + clBuildProgram, what a first call without a native image costs) "
                    f"{_mm(d['jit_s'])} vs loading the binary that build produced (clCreateProgramWithBinary + build) "
                    f"{_mm(d['binary_load_ms'], 'ms', '{:.1f}')}: {d['jit_over_load']['median']:.0f}× "
                    f"({d['jit_over_load']['min']:.0f}–{d['jit_over_load']['max']:.0f}×). A GPU driver's JIT of the same SPIR-V runs the "
                    "same IGC that ocloc runs, so expect at least the per-device ocloc time of P1 on first use.", ""]
    return out


def update_doc(path: Path, text: str) -> None:
    """Write ``text`` as the top of ``path``, keeping any foreign section found below ours."""
    tail = ""
    if path.is_file():
        old = path.read_text()
        starts = [old.find(m) for m in _FOREIGN_MARKERS if old.find(m) >= 0]
        if starts:
            tail = old[min(starts):]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + ("\n" + tail if tail else ""))
