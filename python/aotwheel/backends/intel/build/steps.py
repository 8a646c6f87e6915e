"""The open toolchain's build steps: ``python -m aotwheel.buildsteps intel <step> ...``, which
``cmake/aotwheel-intel.cmake`` runs (``aotwheel.buildsteps.__main__`` dispatches them here).

configure  find clang/llvm-spirv/ocloc, check the devices, write the toolchain JSON and the build
           plan (:mod:`.plan`: every edge below, which devices of which source each ocloc edge
           builds, AOTWHEEL_SHARD's slice)
spirv      one kernel source -> SPIR-V (with a ninja depfile), through the SPIR-V cache
ocloc      one SPIR-V -> native binaries for a group of devices, through the device-code cache
           (and, when the group is all the source's devices, its fat binary too)
fatbin     native binaries + SPIR-V -> ocloc-compatible ar (+ a sidecar JSON for the manifest),
           for sources whose devices are split over several ocloc edges
tgtsym     SPIR-V modules -> the .tgtsym names file
embed      write the C file + header that embed the images and .tgtsym icpx's way (configure
           time; :mod:`.embed`)
shard      AOTWHEEL_SHARD's slice of a job list file, by hand (configure plans it itself)

CMake runs spirv, ocloc and fatbin as ``--plan <plan.json> --edge <id>``: the edge's entry holds
its arguments; by hand they can be given on the command line instead.

Each edge is a process of its own that mostly finds its result in a cache: this module imports
the standard library's argparse, json and pathlib and the build steps' light modules only; the
rest is imported where a step needs it. Errors print ``aotwheel: error: <one line>`` and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from aotwheel.buildsteps.edge import edge_arguments, run_step, step_parser, write_if_changed
from aotwheel.errors import AotwheelError


def _load_toolchain(path: str) -> dict:
    return json.loads(Path(path).read_text())


def cmd_configure(a: argparse.Namespace) -> int:
    """Find the tools and check the devices; write the toolchain JSON and, with ``--plan``, the
    build plan of the call's sources (:mod:`aotwheel.backends.intel.build.plan`)."""
    from aotwheel.backends.intel.build.toolchain import discover

    devices, members = _images(_devices(a), a)
    names = [d for d, _ in devices]
    groups: dict[str, list[list[str]]] = {}
    note = ""
    if a.plan and names:  # a bad AOTWHEEL_OCLOC_GROUPS fails configure before the tools are probed
        groups, note = _ocloc_groups(a, names)
    from aotwheel.buildsteps.manifest import mark_events

    mark_events(Path(a.out).parent)
    from aotwheel.backends.intel.ocloc import image_format
    from aotwheel.backends.intel.variables import IMAGE_FORMAT

    tc = discover(names, build_dir=Path(a.out).parent, image_format=image_format(a.image_format, IMAGE_FORMAT.name))
    write_if_changed(a.out, json.dumps(tc.to_dict(), indent=2, sort_keys=True) + "\n")
    if a.plan:
        from aotwheel.backends.intel.build.plan import build_plan

        build_plan(name=a.name, work=Path(a.plan).parent, sources=a.source or [], devices=devices, groups=groups,
                   toolchain=a.out, settings=a.settings or "", ir=a.ir, options=a.options, clang_args=tuple(a.clang_arg or ()),
                   source_root=a.source_root or "", build_root=a.build_root or "", cost_prefix=a.cost_prefix or "",
                   note=note, members=members).write(a.plan)
    return 0


def _devices(a: argparse.Namespace) -> list[tuple[str, str]]:
    """``(name, ip)`` of the devices to build, in devlist order: the resolver's JSON (``--devlist``),
    else ``--devices`` (names; IPs from the catalog where a plan needs them)."""
    if a.devlist:
        doc = json.loads(Path(a.devlist).read_text())
        return [(t["name"], t["ip"]) for t in doc.get("targets", [])]
    return [(d, "") for d in (a.devices or "").split(",") if d]


def _images(devices: list[tuple[str, str]], a: argparse.Namespace) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The devices whose images the build makes and each one's fat-binary member: the resolver's
    native-coverage plan (``coverage.images``: one image may serve several listed devices), else
    one image per listed device."""
    if not a.devlist:
        return devices, {}
    images = (json.loads(Path(a.devlist).read_text()).get("coverage") or {}).get("images")
    if not images:
        return devices, {}
    return [(i["device"], i["ip"]) for i in images], {i["device"]: i["member"] for i in images}


def _ocloc_groups(a: argparse.Namespace, devices: list[str]) -> tuple[dict[str, list[list[str]]], str]:
    """Per source stem, its ocloc edges' devices: planned for this machine's cores
    (``groups.plan_edges``), or this shard's slice (``AOTWHEEL_SHARD``: ``groups.slice_groups``,
    weighed by the costs earlier builds recorded where the remote stores hold them); and the
    configure line of a shard build."""
    from aotwheel.backends.intel.build.groups import group_count, plan_edges, slice_groups, source_jobs, usable_cores
    from aotwheel.buildsteps.plan import unique_stems
    from aotwheel.buildsteps.shard import parse_shard

    group_count(a.groups, len(devices))
    sources = list(zip(unique_stems(a.source or []), a.source or []))
    jobs = source_jobs(sources, devices)
    shard = parse_shard(a.shard) if a.shard else None
    if shard is None:
        groups: dict[str, list[list[str]]] = {}
        for stem, group in plan_edges(jobs, usable_cores(), a.groups):
            groups.setdefault(stem, []).append(group)
        return groups, ""
    if a.cost_prefix:  # what earlier builds measured, from the remote stores (history.py)
        jobs = _measured(jobs, dict(sources), a.cost_prefix, a.settings)
    groups = slice_groups(jobs, shard, a.groups)
    stems = list(groups)
    note = (f"aotwheel: {a.name}: AOTWHEEL_SHARD={a.shard.strip()} builds {len(stems)} of {len(sources)} kernel sources "
            f"({', '.join(stems)})")
    return groups, note


def _measured(jobs: list, sources: dict[str, str], cost_prefix: str, settings_file: str | None) -> list:
    """``jobs`` (``shard.Job``) weighed by the ocloc costs earlier builds recorded under
    ``<cost_prefix>/<stem>`` in the remote stores (``history.py``); as given without a remote."""
    from aotwheel.buildsteps.tiers import load_settings, remote_configured

    settings = load_settings(settings_file)
    if not remote_configured(os.environ, settings):
        return jobs
    from aotwheel.backends.intel.build import history
    from aotwheel.buildsteps.remote import config_from

    cfg = config_from(os.environ, settings)
    return history.with_measured(jobs, history.measured_costs(sources, cost_prefix, cfg.stores(), cfg.secret))


def _from_plan(a: argparse.Namespace, step: str) -> None:
    """Fill ``a`` from its edge of the build plan (``--plan``/``--edge``, as CMake runs the step):
    the arguments a by-hand run gives on the command line."""
    from aotwheel.buildsteps.edge import load_edge, plan_data

    plan, edge = load_edge(a.plan, a.edge, a.digest)
    if edge.get("step") != step:
        raise AotwheelError(f"edge '{a.edge}' of {a.plan} is a {edge.get('step')} edge, not {step}; re-run CMake configure")
    plan_data(edge, a.plan, lambda job: _fill(a, step, plan, edge, job))


def _text(value: object) -> str:
    """A plan's string field: one line, as a device name or a path is (a newline is damage)."""
    if not isinstance(value, str) or "\n" in value or "\r" in value:
        raise ValueError(f"{value!r} is not one line of text")
    return value


def _str(value: object) -> str:
    """A plan's free text (options: the user's, newlines and all)."""
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value


def _fill(a: argparse.Namespace, step: str, plan: dict, edge: dict, job: dict) -> None:
    a.toolchain, a.settings, a.source = _str(plan["toolchain"]), _str(plan["settings"]), _text(edge["source"])
    natives = [(_text(n["device"]), _text(n["ip"]), _text(n["output"])) for n in job.get("natives", ())]
    if step == "spirv":
        a.output, a.depfile = edge["outputs"][0], edge["depfile"]
        a.clang_arg = [_str(x) for x in job["clang_args"]]
        a.source_root, a.build_root = _text(job["source_root"]), _text(job["build_root"])
    elif step == "ocloc":
        a.spirv, a.options, a.cost_id, a.fatbin, a.info = (_text(job["spirv"]), _str(job["options"]),
                                                           _text(job["cost_id"]), _text(job["fatbin"]), _text(job["info"]))
        a.ir, a.specs = bool(job["ir"]), natives
    else:
        a.output, a.info, a.spirv, a.options = (_text(job["output"]), _text(job["info"]), _text(job["spirv"]),
                                                _str(job["options"]))
        a.natives = natives
    if step != "spirv":
        a.members = {_text(n["device"]): _text(n["member"]) for n in job["natives"] if n.get("member")}


def cmd_spirv(a: argparse.Namespace) -> int:
    """Compile one kernel source to SPIR-V, through the SPIR-V cache (local, then the remote stores)."""
    from aotwheel.backends.intel.build.spirv import SpirvToolchain
    from aotwheel.backends.intel.build.spvcache import build_spirv

    if a.plan:
        _from_plan(a, "spirv")
    elif not (a.toolchain and a.source and a.output):
        raise AotwheelError("give --plan and --edge, or --toolchain, --source and --output")
    t = _load_toolchain(a.toolchain)
    tc = SpirvToolchain(t["clang"], t["clang_version"], t["llvm_spirv"], t["llvm_spirv_version"])
    size, provenance = build_spirv(tc, a.source, a.output, depfile=a.depfile, extra=a.clang_arg or [],
                                   settings=a.settings, source_root=a.source_root, build_root=a.build_root)
    print(f"aotwheel: {Path(a.source).name} -> SPIR-V: {provenance} ({size} bytes)")
    return 0


def cmd_ocloc(a: argparse.Namespace) -> int:
    """Build one SPIR-V's binaries for one device or a group (``--job``): per device the local
    cache, the remote stores, else one ocloc run for all the misses. In a shard build the plan
    holds only this shard's edges (``configure --shard``), so every job here is ours.
    With ``--fatbin``/``--info`` (the edge holds all the source's devices) also its fat binary."""
    # Imports that only some builds need (the remote stores, the device catalog) stay inside
    # their branches: this step starts once per edge, and its start is P1's overhead.
    from aotwheel.buildsteps.tiers import load_settings

    if a.plan:
        _from_plan(a, "ocloc")
    elif not (a.toolchain and a.spirv):
        raise AotwheelError("give --plan and --edge, or --toolchain and --spirv with the jobs")
    specs = getattr(a, "specs", None) or [tuple(j.split("=", 2)) for j in a.job or []]
    if a.device:
        specs.append((a.device, a.ip or "", a.output or ""))
    if not specs or any(len(s) != 3 or not s[0] or not s[2] for s in specs):
        raise AotwheelError("give --device and --output, or --job DEVICE=IP=OUTPUT (repeatable)")
    if bool(a.fatbin) != bool(a.info):
        raise AotwheelError("give --fatbin and --info together")
    settings = load_settings(a.settings)
    built = _build_jobs(a, specs, settings)  # device -> (ip, binary, provenance)
    if a.fatbin:
        natives = [(d, *built[d]) for d, _, _ in specs]  # the devlist's order
        version = _load_toolchain(a.toolchain).get("ocloc_version")
        _write_fatbin(a.fatbin, a.info, natives, Path(a.spirv).read_bytes() if a.ir else None, version, a.options,
                      getattr(a, "members", None))
    return 0


def _build_jobs(a: argparse.Namespace, specs: list[tuple[str, ...]], settings: dict[str, str]
                ) -> dict[str, tuple[str, bytes, str]]:
    """Run one ocloc step's jobs (``(device, ip, output)``) through the caches; per device
    ``(ip, binary, provenance)``."""
    from aotwheel.backends.intel.build.ocloc_job import GroupJob, run_group
    from aotwheel.buildsteps.tiers import Tiers

    t = _load_toolchain(a.toolchain)
    if not t.get("ocloc"):
        raise AotwheelError("no ocloc in the toolchain file; re-run CMake configure")
    names = t.get("ocloc_names", {})
    jobs = []
    for device, ip, output in specs:
        if not ip:
            from aotwheel.backends.intel.catalog import load_catalog

            dev = load_catalog().by_name(device)
            ip = dev.ip if dev else device
        jobs.append(GroupJob(device=device, ocloc_name=names.get(device, device), ip=ip, output=Path(output)))
    tiers = Tiers.for_build(jobs[0].output.parent, settings)
    on_compiled = None
    if a.cost_id and a.source and tiers.stores and not tiers.readonly:
        def on_compiled(devices: list[str], cpu_s: float) -> None:  # for the next shard plans
            from aotwheel.backends.intel.build import history
            from aotwheel.buildsteps.cache import file_sha256

            try:
                sha = file_sha256(a.source)
            except OSError:  # a hint only: a source gone since CMake ran records nothing
                return
            history.record(tiers.stores, a.cost_id, sha, history.split_cpu(cpu_s, devices), tiers.secret)
    import time

    began = time.monotonic()
    results = run_group(spirv=a.spirv, jobs=jobs, ocloc=t["ocloc"], ocloc_version=t["ocloc_version"],
                        options=a.options, tiers=tiers, on_compiled=on_compiled,
                        format_args=tuple(t.get("ocloc_format_args", ())))
    took = time.monotonic() - began
    out = {}
    # pip shows this only with -v or on failure; `aotwheel build warm` reads it as each edge
    # finishes (its progress lines); the cache's events.log is the record.
    for job, res in zip(jobs, results):
        print(f"aotwheel: {Path(a.spirv).name} -device {job.ocloc_name}: {res.provenance} ({res.size} bytes) in {took:.1f} s")
        out[job.device] = (job.ip, res.data, res.provenance)
    return out


def cmd_shard(a: argparse.Namespace) -> int:
    """Write this shard's slice of a job list file (``<stem>\\t<device>\\t<path>`` lines) as
    ``<stem>\\t<group>|<group>...`` lines, each group comma-separated devices; sources with no job
    in this shard are absent. The same slice as ``configure --shard`` plans into the build plan."""
    from aotwheel.backends.intel.build.costs import read_job_list
    from aotwheel.backends.intel.build.groups import slice_groups
    from aotwheel.buildsteps.shard import parse_shard

    shard = parse_shard(a.shard)
    if shard is None:
        raise AotwheelError("the shard step needs --shard i/n; e.g. --shard 1/4")
    jobs, sources = read_job_list(Path(a.jobs))  # read once: the plan's jobs and the sources' paths
    if a.cost_prefix:  # what earlier builds measured, from the remote stores (history.py)
        jobs = _measured(jobs, sources, a.cost_prefix, a.settings)
    groups = slice_groups(jobs, shard, a.groups)
    write_if_changed(a.out, "".join(f"{stem}\t{'|'.join(','.join(g) for g in gs)}\n" for stem, gs in groups.items()))
    return 0


def _write_fatbin(output: str, info_path: str, natives: list[tuple[str, str, bytes, str]], spirv: bytes | None,
                  ocloc_version: str | None = None, options: str = "", members: dict[str, str] | None = None) -> None:
    """One source's fat binary from ``(device, ip, binary, provenance)`` in devlist order (+ the
    SPIR-V as generic_ir, laid out as this ocloc lays it out), and its member list for the manifest.
    ``members``: a device's member name where the coverage plan names it (``64.bmg``), else ``64.<ip>``."""
    from aotwheel.backends.intel.build.fatbin import build_fatbin, ir_options, member_name, spirv_ir_elf
    from aotwheel.buildsteps.cache import atomic_write
    from aotwheel.buildsteps.manifest import fatbin_info

    build_options = ir_options(ocloc_version, options)
    named = [((members or {}).get(device) or member_name(ip), device, data) for device, ip, data, _ in natives]
    atomic_write(Path(output), build_fatbin([(m.partition(".")[2], data) for m, _, data in named], spirv, build_options))
    info = [(device, m, len(data)) for m, device, data in named]
    ir_size = len(spirv_ir_elf(spirv, build_options)) if spirv is not None else None
    write_if_changed(info_path, json.dumps(fatbin_info(info, ir_size, [how for *_, how in natives]), indent=2) + "\n")


def cmd_fatbin(a: argparse.Namespace) -> int:
    """Assemble one source's fat binary and its member list (sources split over several edges)."""
    if a.plan:
        _from_plan(a, "fatbin")
    elif not (a.output and a.info):
        raise AotwheelError("give --plan and --edge, or --output and --info with the natives")
    natives: list[tuple[str, str, bytes, str]] = []
    for device, ip, path in getattr(a, "natives", None) or [spec.split("=", 2) for spec in a.native or []]:
        prov = Path(path + ".provenance")
        how = prov.read_text().strip() if prov.is_file() else "compiled"
        natives.append((device, ip, Path(path).read_bytes(), how))
    version = _load_toolchain(a.toolchain).get("ocloc_version") if a.toolchain else None
    _write_fatbin(a.output, a.info, natives, Path(a.spirv).read_bytes() if a.spirv else None, version, a.options,
                  getattr(a, "members", None))
    return 0


def cmd_tgtsym(a: argparse.Namespace) -> int:
    """Write the .tgtsym names of all SPIR-V modules."""
    from aotwheel.backends.intel.build.embed import tgtsym
    from aotwheel.backends.intel.build.spirv import entry_points
    from aotwheel.buildsteps.cache import atomic_write

    triples = [t for t in a.triples.split(",") if t]
    entries = []
    for triple in triples:
        for spv in a.spirv:
            entries.append((triple, entry_points(Path(spv).read_bytes())))
    atomic_write(Path(a.output), tgtsym(entries))
    return 0


def cmd_embed(a: argparse.Namespace) -> int:
    """Write the embedding C/C++ file and its header (configure time)."""
    from aotwheel.backends.intel.build.embed import EmbeddedImage, render_c, render_header

    images = []
    for spec in a.image or []:
        triple, source, path = spec.split("=", 2)
        images.append(EmbeddedImage(triple=triple, source=source, path=path))
    write_if_changed(a.out_c, render_c(a.name, images, a.tgtsym))
    write_if_changed(a.out_h, render_header(a.name))
    return 0


def _configure_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--devlist", help="the resolver's JSON (aotwheel resolve --json): the devices and their IPs")
    s.add_argument("--devices", default="", help="or: comma-separated canonical device names")
    s.add_argument("--out", required=True, help="the toolchain JSON")
    s.add_argument("--plan", help="write the build plan here (its folder holds the outputs)")
    s.add_argument("--name", default="", help="the image set's name (NAME)")
    s.add_argument("--source", action="append", metavar="PATH",
                   help="a kernel source, absolute (repeatable, in SOURCES order): the edges are planned over them")
    s.add_argument("--groups", help="AOTWHEEL_OCLOC_GROUPS: groups per source (default: planned, groups.plan_edges)")
    s.add_argument("--shard", help="AOTWHEEL_SHARD, i/n: plan this shard's slice only")
    s.add_argument("--cost-prefix", help="with --shard: weigh by the ocloc costs recorded under <prefix>/<stem> "
                   "(history.py); the ocloc edges record theirs there")
    s.add_argument("--settings", help="remote-cache settings CMake wrote (NAME=value lines)")
    s.add_argument("--ir", action="store_true", help="keep SPIR-V for JIT: embedded, and generic_ir in the fat binaries")
    s.add_argument("--options", default="", help="the ocloc -options string")
    s.add_argument("--image-format", default="", help="USE_AOT_IMAGE_FORMAT: zebin (default, also when empty) or legacy")
    s.add_argument("--clang-arg", action="append", help="extra clang argument (repeatable)")
    s.add_argument("--source-root", help="the top source tree (the SPIR-V cache's relative paths)")
    s.add_argument("--build-root", help="the top build tree (likewise)")


def _spirv_arguments(s: argparse.ArgumentParser) -> None:
    edge_arguments(s, required=False)
    s.add_argument("--toolchain")
    s.add_argument("--source")
    s.add_argument("--output")
    s.add_argument("--depfile")
    s.add_argument("--clang-arg", action="append", help="extra clang argument (repeatable)")
    s.add_argument("--settings", help="remote-cache settings CMake wrote (NAME=value lines)")
    s.add_argument("--source-root", help="dependencies under it are cached by relative path (default: the source's folder)")
    s.add_argument("--build-root", help="likewise for generated files (default: the output's folder)")


def _ocloc_arguments(s: argparse.ArgumentParser) -> None:
    edge_arguments(s, required=False)
    s.add_argument("--toolchain")
    s.add_argument("--spirv")
    s.add_argument("--job", action="append", metavar="DEVICE=IP=OUTPUT",
                   help="one device of this edge's group (repeatable; IP may be empty: from the catalog)")
    s.add_argument("--device", help="one device (with --output, --ip): the same as one --job")
    s.add_argument("--output")
    s.add_argument("--options", default="")
    s.add_argument("--ip", help="the device's IP version (the cache key's target; default: from the catalog)")
    s.add_argument("--settings", help="remote-cache settings CMake wrote (NAME=value lines)")
    s.add_argument("--fatbin", help="also write the source's fat binary (the jobs are all its devices, in devlist order)")
    s.add_argument("--info", help="with --fatbin: its member list (for the manifest)")
    s.add_argument("--ir", action="store_true", help="with --fatbin: add the SPIR-V as generic_ir (JIT fallback)")
    s.add_argument("--cost-id", help="record ocloc's CPU time in the remote stores under this id (history.py)")
    s.add_argument("--source", help="with --cost-id: the kernel source (its sha256 tells the records' generations apart)")


def _shard_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--jobs", required=True, help="the target's job list CMake wrote (stem, device, source path)")
    s.add_argument("--shard", required=True, help="AOTWHEEL_SHARD, i/n")
    s.add_argument("--groups", default="", help="AOTWHEEL_OCLOC_GROUPS (empty: the edges are planned for this machine's cores)")
    s.add_argument("--out", required=True, help="write the slice here")
    s.add_argument("--cost-prefix", help="plan with the ocloc costs earlier builds recorded under <prefix>/<stem> (history.py)")
    s.add_argument("--settings", help="remote-cache settings CMake wrote (NAME=value lines)")


def _fatbin_arguments(s: argparse.ArgumentParser) -> None:
    edge_arguments(s, required=False)
    s.add_argument("--output")
    s.add_argument("--info")
    s.add_argument("--spirv", help="SPIR-V for the generic_ir member (JIT fallback)")
    s.add_argument("--native", action="append", metavar="DEVICE=IP=PATH")
    s.add_argument("--toolchain", help="toolchain JSON: generic_ir is laid out as its ocloc does")
    s.add_argument("--options", default="", help="the ocloc options (newer oclocs keep them in generic_ir)")


def _tgtsym_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--output", required=True)
    s.add_argument("--triples", required=True, help="e.g. spir64_gen,spir64")
    s.add_argument("spirv", nargs="*")


def _embed_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--name", required=True)
    s.add_argument("--out-c", required=True)
    s.add_argument("--out-h", required=True)
    s.add_argument("--tgtsym", required=True)
    s.add_argument("--image", action="append", metavar="TRIPLE=SOURCE=PATH")


_STEPS = {
    "configure": (_configure_arguments, cmd_configure),
    "spirv": (_spirv_arguments, cmd_spirv),
    "ocloc": (_ocloc_arguments, cmd_ocloc),
    "shard": (_shard_arguments, cmd_shard),
    "fatbin": (_fatbin_arguments, cmd_fatbin),
    "tgtsym": (_tgtsym_arguments, cmd_tgtsym),
    "embed": (_embed_arguments, cmd_embed),
}


_PROG = "python -m aotwheel.buildsteps intel"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of these steps, one subcommand each; ``only``: that step's alone (each build
    edge is a process of its own: it builds the one parser it needs)."""
    return step_parser(_PROG, __doc__, _STEPS, only)


def main(argv: list[str] | None = None) -> int:
    """Run one step; errors print one line and return 2."""
    return run_step(_PROG, __doc__, _STEPS, sys.argv[1:] if argv is None else argv)
