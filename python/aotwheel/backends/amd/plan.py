"""The hipcc build plan of one ``aotwheel_add_hip_device_code()`` call (configure time).

The one place where the AMD targets of a call become build edges: one ``compile`` edge per
(source, target) -- ``hipcc --offload-arch=<target> --genco --no-gpu-bundle-output``, one code
object -- and one ``bundle`` edge per source (``clang-offload-bundler``, as hipcc itself bundles),
each carrying what its step runs with (:class:`HipImage`, :class:`HipBundle`), so neither CMake
nor the edges parse ``gfx90a`` again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aotwheel.buildsteps.plan import Edge, Plan, unique_stems

# hipcc's own choices for HIP code objects in a bundle (clang's HIP tool chain).
BUNDLE_KIND = "hipv4"
DEVICE_TRIPLE = "amdgcn-amd-amdhsa"
BUNDLE_ALIGN = 4096  # code objects start on a page in the bundle, as hipcc lays them out


@dataclass(frozen=True)
class HipImage:
    """What one hipcc job builds: the code object of ``target`` (a target id, ``gfx90a:xnack-``)."""

    target: str
    options: tuple[str, ...] = ()  # HIPCC_OPTIONS


@dataclass(frozen=True)
class BundleMember:
    """One entry of an offload bundle: its id (``hipv4-amdgcn-amd-amdhsa--gfx90a``) and file."""

    id: str
    target: str
    path: str


@dataclass(frozen=True)
class HipBundle:
    """What one ``clang-offload-bundler -type=o`` combines (after the empty host entry)."""

    members: tuple[BundleMember, ...]
    align: int = BUNDLE_ALIGN


def bundle_id(target: str) -> str:
    """The bundle entry id of a code object for ``target``: what the HIP runtime matches a GPU's ISA against."""
    return f"{BUNDLE_KIND}-{DEVICE_TRIPLE}--{target}"


def _image_path(work: Path, stem: str, target: str) -> str:
    # ':' (gfx90a:xnack-) is no character for a file name that ninja and Make both take
    return str(work / f"{stem}.{target.replace(':', '_')}.co")


def build_plan(*, name: str, work: Path, sources: list[str], targets: tuple[str, ...], toolchain: str,
               settings: str = "", options: tuple[str, ...] = ()) -> Plan:
    """The edges of ``sources`` x ``targets`` in ``work`` (source order, then target order)."""
    stems = unique_stems(sources)
    common = tuple(p for p in (toolchain, settings) if p)
    edges: list[Edge] = []
    bundles: list[str] = []
    for src, stem in zip(sources, stems):
        base = Path(src).name
        members: list[BundleMember] = []
        for t in targets:
            out = _image_path(work, stem, t)
            edges.append(Edge(id=f"{stem}.{t}", step="compile", source=src, outputs=(out,), inputs=common,
                              depfile=f"{out}.d", comment=f"hipcc {base} -> {t}", data=HipImage(target=t, options=options)))
            members.append(BundleMember(id=bundle_id(t), target=t, path=out))
        bundle = str(work / f"{stem}.hipfb")
        edges.append(Edge(id=f"{stem}.hipfb", step="bundle", source=src, outputs=(bundle,),
                          inputs=(toolchain, *(m.path for m in members)), comment=f"HIP offload bundle for {base}",
                          data=HipBundle(tuple(members))))
        bundles.append(bundle)
    return Plan(vendor="amd", name=name, toolchain=toolchain, targets=targets, outputs=tuple(bundles), edges=tuple(edges),
                record=str(work / "images.json"), settings=settings)


def image_record(plan: Plan) -> dict[str, object]:
    """The manifest's record of the plan's images (``buildsteps.manifest.read_records``): per
    source its bundle and the code objects in it."""
    images = []
    for edge in (e for e in plan.edges if e.step == "bundle"):
        spec: HipBundle = edge.data  # type: ignore[assignment]
        images.append({"source": Path(edge.source).name, "bundle": edge.outputs[0],
                       "members": [{"target": m.target, "id": m.id, "path": m.path} for m in spec.members]})
    return {"images": images}
