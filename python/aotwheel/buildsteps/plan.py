"""The build plan: what a vendor's configure step decided, written once as JSON for CMake and the edges.

A configure step (``python -m aotwheel.buildsteps <vendor> configure``) parses the device list's
tokens once and writes a :class:`Plan`. CMake reads it with ``string(JSON ...)``
(``_aotwheel_plan_edges`` in cmake/aotwheel-config.cmake) and adds one ninja edge per
:class:`Edge` as it stands (outputs, inputs, depfile, comment, pool): it parses no token and makes
no file name itself. Each edge runs ``<vendor> <step> --plan <file> --edge <id> --digest <digest>``
and finds everything it needs in its entry (:func:`aotwheel.buildsteps.edge.load_edge`, standard
library only: an edge is a process of its own and must not pay for dataclasses). The digest of
the entry on the command line makes ninja rerun exactly the edges whose entry changed (ninja
reruns an edge whose command changed), and lets the step refuse a plan rewritten since.

Layout (schema 1)::

    {"schema": 1, "vendor": "nvidia", "name": "kernels", "toolchain": "<work>/cuda.json",
     "targets": ["sm_90", "compute_90"],        # what the plan builds, canonical names
     "outputs": ["<work>/k.fatbin", ...],       # one per source: the fat binaries to embed
     "images": [{"triple", "source", "path"}],  # what gets embedded, in order (Intel's .tgtimg)
     "record": "<work>/images.json",            # the manifest's record of the images ("" if none)
     "settings": "<work>/remote-settings",      # the remote-cache settings CMake wrote ("" if none)
     "note": "",                                # one line for configure to print ("" for none)
     "edges": [{"id", "step", "source", "outputs", "inputs", "depfile", "comment", "pool",
                "data", "digest"}, ...]}

``data`` is the vendor's own frozen dataclass: what its step needs (for NVIDIA the target, its
kind, arch number and ``-gencode``; for Intel the devices, IPs and outputs of an ocloc run).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from aotwheel.buildsteps.edge import edge_digest, write_if_changed

SCHEMA = 1


@dataclass(frozen=True)
class Edge:
    """One ninja edge: one process that runs one vendor step."""

    id: str  # unique in the plan, e.g. "elementwise.sm_90"
    step: str  # the vendor step that runs it ("compile", "fatbin", "ocloc")
    source: str  # the kernel source (absolute path)
    outputs: tuple[str, ...]  # what it writes (ninja's OUTPUT), absolute paths
    inputs: tuple[str, ...] = ()  # what it reads besides the source (ninja's DEPENDS)
    depfile: str = ""  # the ninja depfile it writes, "" for none
    comment: str = ""  # what ninja prints for it
    pool: str = ""  # a job pool CMake may define (`aotwheel_<pool>`): "ocloc"; "" for none
    data: object = None  # the vendor's frozen dataclass: everything its step needs


@dataclass(frozen=True)
class Image:
    """One embedded image: its SYCL triple (``spir64_gen``, ``spir64``), kernel source and file."""

    triple: str
    source: str  # the kernel source's file name
    path: str


@dataclass(frozen=True)
class Plan:
    """One device-code call's build: its edges, what it builds, and what gets embedded."""

    vendor: str  # the backend whose steps run the edges
    name: str  # the image set's name (NAME)
    toolchain: str  # the toolchain JSON the configure step wrote
    targets: tuple[str, ...]  # canonical target names, in list order
    outputs: tuple[str, ...]  # the fat binaries, one per source
    edges: tuple[Edge, ...]
    images: tuple[Image, ...] = ()  # what gets embedded, in embedding order
    record: str = ""  # the images' record for the manifest
    settings: str = ""  # the remote-cache settings file CMake wrote (NAME=value lines), "" for none
    note: str = ""  # one line for configure to print
    schema: int = SCHEMA

    def to_json(self) -> str:
        doc = asdict(self)
        for edge in doc["edges"]:
            edge["digest"] = edge_digest(edge)
        return json.dumps({"schema": doc.pop("schema"), **doc}, indent=1) + "\n"

    def write(self, path: str | Path) -> None:
        """Write the plan; an unchanged file is left alone."""
        write_if_changed(path, self.to_json())


def unique_stems(sources: list[str]) -> list[str]:
    """The file-name stems of ``sources`` (the prefix of every output); a shared stem is an error."""
    from aotwheel.errors import AotwheelError

    stems: list[str] = []
    for src in sources:
        stem = Path(src).name.split(".", 1)[0]
        if stem in stems:
            raise AotwheelError(f"two SOURCES share the name '{stem}'; their outputs would collide. Rename one of them.")
        stems.append(stem)
    return stems
