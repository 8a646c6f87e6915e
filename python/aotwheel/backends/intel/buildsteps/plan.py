"""The open-toolchain build plan of one ``aotwheel_add_device_code()`` call (configure time).

The one place where a call's sources and devices become build edges, in the order ninja gets
them (per source: its SPIR-V edge, its ocloc edges, then its fat-binary edge when its devices are
split): which devices share an ocloc edge (:func:`.groups.plan_edges`, or this shard's slice,
:func:`.groups.slice_groups`), and every file name. Each edge carries what its step runs with
(:class:`SpirvJob`, :class:`OclocJob`, :class:`FatbinJob`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aotwheel.buildsteps.plan import Edge, Image, Plan, unique_stems


@dataclass(frozen=True)
class SpirvJob:
    """One kernel source -> SPIR-V (clang + llvm-spirv, through the SPIR-V cache)."""

    clang_args: tuple[str, ...] = ()  # CLANG_OPTIONS
    source_root: str = ""  # dependencies under it are cached by relative path
    build_root: str = ""  # likewise for generated files


@dataclass(frozen=True)
class Native:
    """One device's native binary: ``ocloc -device <device>`` output, keyed by its IP version."""

    device: str  # canonical name, e.g. "pvc"
    ip: str  # "12.60.7": the cache key's target
    output: str  # <stem>.<device>.bin
    member: str = ""  # its fat-binary member where the coverage plan names it (64.bmg); else 64.<ip>


@dataclass(frozen=True)
class OclocJob:
    """One ocloc edge: one SPIR-V, a group of the source's devices (one ocloc run for the misses)."""

    spirv: str
    natives: tuple[Native, ...]
    options: str = ""  # the ocloc -options string (field defaults, then OPTIONS)
    cost_id: str = ""  # where ocloc's CPU time is recorded for later shard plans (history.py)
    fatbin: str = ""  # the group is all the source's devices: also write its fat binary here
    info: str = ""  # and its member list for the manifest
    ir: bool = False  # and put the SPIR-V in it as generic_ir (JIT fallback)


@dataclass(frozen=True)
class FatbinJob:
    """The fat binary of a source whose devices are split over several ocloc edges."""

    natives: tuple[Native, ...]  # in devlist order
    output: str
    info: str
    spirv: str = ""  # the generic_ir member's SPIR-V ("" without JIT fallback)
    options: str = ""


def build_plan(*, name: str, work: Path, sources: list[str], devices: list[tuple[str, str]],
               groups: dict[str, list[list[str]]], toolchain: str, settings: str = "", ir: bool = False,
               options: str = "", clang_args: tuple[str, ...] = (), source_root: str = "", build_root: str = "",
               cost_prefix: str = "", note: str = "", members: dict[str, str] | None = None) -> Plan:
    """The edges of ``sources`` (absolute paths) for ``devices`` (``(name, ip)``, devlist order):
    ``groups`` holds per source stem its ocloc edges' devices (a source absent from it is another
    shard's: no edge at all; with no device every source gets its SPIR-V edge alone). ``devices``
    are the images to build (the coverage plan's, :mod:`..coverage`), ``members`` their member names."""
    stems = unique_stems(sources)
    ips = dict(devices)
    member_of = members or {}
    spirv_job = SpirvJob(clang_args=clang_args, source_root=source_root, build_root=build_root)
    common = tuple(p for p in (toolchain, settings) if p)
    edges: list[Edge] = []
    fatbins: list[str] = []
    images: list[Image] = []
    ir_images: list[Image] = []
    for src, stem in zip(sources, stems):
        if devices and stem not in groups:
            continue
        base = Path(src).name
        spv = str(work / f"{stem}.spv")
        edges.append(Edge(id=f"{stem}.spirv", step="spirv", source=src, outputs=(spv,), inputs=common, depfile=f"{spv}.d",
                          comment=f"{base} -> SPIR-V", data=spirv_job))
        mine = {d for g in groups.get(stem, []) for d in g}
        natives = {d: Native(d, ip, str(work / f"{stem}.{d}.bin"), member_of.get(d, "")) for d, ip in devices if d in mine}
        if natives:
            fatbin = str(work / f"{stem}.fatbin")
            split = len(groups[stem]) > 1
            for k, group in enumerate(groups[stem], 1):
                group_natives = tuple(natives[d] for d in group)
                job = OclocJob(spirv=spv, natives=group_natives, options=options, cost_id=f"{cost_prefix}/{stem}")
                outputs = tuple(n.output for n in group_natives)
                if not split:  # one process for the source: no separate fatbin step
                    job = OclocJob(spirv=spv, natives=group_natives, options=options, cost_id=job.cost_id,
                                   fatbin=fatbin, info=f"{fatbin}.json", ir=ir)
                    outputs += (fatbin, f"{fatbin}.json")
                edges.append(Edge(id=f"{stem}.ocloc{k}", step="ocloc", source=src, outputs=outputs, inputs=(spv, *common),
                                  comment=f"ocloc {base} -device {','.join(group)}", pool="ocloc", data=job))
            if split:
                fat = FatbinJob(natives=tuple(natives.values()), output=fatbin, info=f"{fatbin}.json",
                                spirv=spv if ir else "", options=options)
                edges.append(Edge(id=f"{stem}.fatbin", step="fatbin", source=src, outputs=(fatbin, f"{fatbin}.json"),
                                  inputs=(*(n.output for n in natives.values()), spv, toolchain),
                                  comment=f"fat binary for {base}", data=fat))
            fatbins.append(fatbin)
            images.append(Image("spir64_gen", base, fatbin))
        if ir:
            ir_images.append(Image("spir64", base, spv))
    return Plan(vendor="intel", name=name, toolchain=toolchain, targets=tuple(ips), outputs=tuple(fatbins),
                edges=tuple(edges), images=(*images, *ir_images), settings=settings, note=note)
