"""The nvcc build plan of one ``aotwheel_add_cuda_device_code()`` call (configure time).

The one place where the NVIDIA targets of a call become build edges: one ``compile`` edge per
(source, target), one ``fatbin`` edge per source, each carrying what its step runs with
(:class:`NvccImage`, :class:`NvccFatbin`), so neither CMake nor the edges parse ``sm_90`` again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aotwheel.backends.nvidia.targets import CudaTarget
from aotwheel.buildsteps.plan import Edge, Plan, unique_stems


@dataclass(frozen=True)
class NvccImage:
    """What one nvcc job builds: ``nvcc -cubin|-ptx -gencode=arch=<virtual>,code=<target>``."""

    target: str  # "sm_90a", "compute_90": the cache key's target and the manifest's name
    kind: str  # "cubin" | "ptx"
    arch: int  # 90: compute capability 9.0
    virtual: str  # "compute_90a": the PTX it compiles from
    options: tuple[str, ...] = ()  # NVCC_OPTIONS


@dataclass(frozen=True)
class FatbinMember:
    """One image of a fat binary: ``fatbinary --image3=kind=<kind>,sm=<sm>,file=<path>``."""

    kind: str  # "elf" (a cubin) | "ptx"
    sm: str  # "90a": arch number and suffix
    path: str


@dataclass(frozen=True)
class NvccFatbin:
    """What one ``fatbinary --create`` combines."""

    members: tuple[FatbinMember, ...]
    compress_mode: str = ""  # COMPRESS_MODE; "" for fatbinary's default


def _image_path(work: Path, stem: str, t: CudaTarget) -> str:
    return str(work / f"{stem}.{t.name}.{'cubin' if t.kind == 'cubin' else 'ptx'}")


def build_plan(*, name: str, work: Path, sources: list[str], targets: tuple[CudaTarget, ...], toolchain: str,
               header: str, settings: str = "", options: tuple[str, ...] = (), compress_mode: str = "") -> Plan:
    """The edges of ``sources`` x ``targets`` in ``work`` (source order, then target order)."""
    stems = unique_stems(sources)
    common = tuple(p for p in (toolchain, header, settings) if p)
    edges: list[Edge] = []
    fatbins: list[str] = []
    for src, stem in zip(sources, stems):
        base = Path(src).name
        members: list[FatbinMember] = []
        images: list[str] = []
        for t in targets:
            out = _image_path(work, stem, t)
            image = NvccImage(target=t.name, kind=t.kind, arch=t.arch, virtual=t.virtual, options=options)
            edges.append(Edge(id=f"{stem}.{t.name}", step="compile", source=src, outputs=(out,), inputs=common,
                              depfile=f"{out}.d", comment=f"nvcc {base} -> {t.name}", data=image))
            members.append(FatbinMember(kind="elf" if t.kind == "cubin" else "ptx", sm=f"{t.arch}{t.suffix}", path=out))
            images.append(out)
        fatbin = str(work / f"{stem}.fatbin")
        edges.append(Edge(id=f"{stem}.fatbin", step="fatbin", source=src, outputs=(fatbin,), inputs=(toolchain, *images),
                          comment=f"CUDA fat binary for {base}", data=NvccFatbin(tuple(members), compress_mode)))
        fatbins.append(fatbin)
    return Plan(vendor="nvidia", name=name, toolchain=toolchain, targets=tuple(t.name for t in targets),
                outputs=tuple(fatbins), edges=tuple(edges), record=str(work / "images.json"), settings=settings)


def image_record(plan: Plan) -> dict[str, object]:
    """The manifest's record of the plan's images (``buildsteps.manifest.read_records``):
    per source its fat binary and the cubins/PTX in it."""
    images = []
    for fatbin in (e for e in plan.edges if e.step == "fatbin"):
        members = [{"target": e.data.target, "kind": e.data.kind, "path": e.outputs[0]}  # type: ignore[attr-defined]
                   for e in plan.edges if e.step == "compile" and e.source == fatbin.source]
        images.append({"source": Path(fatbin.source).name, "fatbin": fatbin.outputs[0], "members": members})
    return {"images": images}
