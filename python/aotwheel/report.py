"""The inspection report: what device code each binary carries, for every vendor (schema 2).

:func:`aotwheel.inspector.inspect` fills it from the bytes; ``aotwheel inspect --json`` prints
:meth:`Report.to_dict`, documented in docs/report-schema.md.
"""

from __future__ import annotations

from aotwheel.model import Image, ImageKind, Target, ir_labels
from aotwheel.records import asdict, record

TYPE_CHECKING = False  # not typing's: inspecting a library imports this module (aotwheel.records says why)
if TYPE_CHECKING:
    from typing import Any

SCHEMA = 2


@record
class CudaModule:
    """NVIDIA images that load together: ``.nv_fatbin`` containers (the CUDA runtime registers each
    as one module) that carry the same targets. Listed only when a file's modules differ, so that
    a verdict can name the module that cannot load (xgboost 1.7.6: its statically linked NCCL
    kernels have no PTX, its own do)."""

    section: str
    containers: int
    targets: list[str]  # sm_XY[a|f] cubins and compute_XY PTX
    sources: list[str]  # source files nvcc named in the entries (up to 3)
    size: int  # stored bytes of the images
    kernels: int | None  # entry kernels, from one cubin per container (inspect --deep reads them)
    kernel_sample: list[str]  # up to 3 of their (mangled) names

    def __init__(self, section: str, containers: int, targets: list[str], sources: list[str], size: int, kernels: int | None = None,
                 kernel_sample: list[str] | None = None) -> None:
        self.section = section
        self.containers = containers
        self.targets = targets
        self.sources = sources
        self.size = size
        self.kernels = kernels
        self.kernel_sample = [] if kernel_sample is None else kernel_sample

    def label(self) -> str:
        """``../src/gbm/gbtree.cu and 40 more`` / ``ncclKernel_* (129 kernels)`` / ``cubins sm_50, sm_60``."""
        if self.sources:
            more = self.containers - len(self.sources)
            return ", ".join(self.sources) + (f" and {more} more" if more > 0 else "")
        if self.kernel_sample:
            return f"{self.kernels} kernels such as {self.kernel_sample[0]}"
        return f"an unnamed module of {self.containers} container{'s' if self.containers != 1 else ''} ({self.size / (1 << 20):.1f} MiB)"

@record
class FileReport:
    """What one binary carries."""

    path: str
    native_targets: list[Target]
    ir: list[str]  # JIT-able forms: "spirv", "llvmbc", "ptx compute_90"
    images: list[Image]
    kernels: int | None  # distinct kernel names when known
    kind: str  # an ImageKind (ELF: a host binary), or "error" (unreadable)
    kernels_by_triple: dict[str, int]
    warnings: list[str]
    # loadable NVIDIA images: "sm_90", "sm_90a", "compute_80"; read by the _aot.py of wheels already published (keep)
    cuda: list[str]
    ir_kernels_missing_from: dict[str, int]  # {"spir64_gen": 5}: kernels only SPIR-V serves there
    cuda_modules: list[CudaModule]  # only when the fat binary containers (every section's) carry different targets
    error: str | None  # one-line reason this file could not be read (wheels/directories go on past it)
    # Standalone device images in the binary's data sections that no runtime registers: the library
    # loads them itself (cuModuleLoadData, zeModuleCreate). A report of its own (kind "carried"),
    # so that a backend decides on them as on any file; None: none found (or not a host ELF).
    carried: FileReport | None

    def __init__(self, path: str, native_targets: list[Target], ir: list[str], images: list[Image], kernels: int | None, kind: str = ImageKind.UNKNOWN,
                 kernels_by_triple: dict[str, int] | None = None, warnings: list[str] | None = None, cuda: list[str] | None = None,
                 ir_kernels_missing_from: dict[str, int] | None = None, cuda_modules: list[CudaModule] | None = None,
                 error: str | None = None, carried: FileReport | None = None) -> None:
        self.path = path
        self.native_targets = native_targets
        self.ir = ir
        self.images = images
        self.kernels = kernels
        self.kind = kind
        self.kernels_by_triple = {} if kernels_by_triple is None else kernels_by_triple
        self.warnings = [] if warnings is None else warnings
        self.cuda = [] if cuda is None else cuda
        self.ir_kernels_missing_from = {} if ir_kernels_missing_from is None else ir_kernels_missing_from
        self.cuda_modules = [] if cuda_modules is None else cuda_modules
        self.error = error
        self.carried = carried

    def target_names(self) -> list[str]:
        """Distinct native targets in order, every vendor: catalog names (else IP versions, else
        generic names) and CUDA archs (``sm_90a``)."""
        seen: dict[str, None] = {}
        for t in self.native_targets:
            seen.setdefault(t.name or t.ip or t.generic or t.core or "unknown")
        return list(seen)


@record
class Report:
    """``inspect()``'s answer: the input and one :class:`FileReport` per binary inside it."""

    path: str
    files: list[FileReport]

    def __init__(self, path: str, files: list[FileReport]) -> None:
        self.path = path
        self.files = files

    @property
    def errors(self) -> list[FileReport]:
        """Files that could not be read (their ``error`` says why)."""
        return [f for f in self.files if f.error]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the ``aotwheel inspect --json`` contract, schema 2 (docs/report-schema.md)."""
        return {"schema": SCHEMA, "path": self.path, "files": [asdict(f) for f in self.files]}


# IR kind -> what the summary adds after its name when a binary carries that IR only inside
# another format's container (no image of its own): declared by the reader whose container it is.
_CONTAINED_IR_NOTES: dict[str, str] = {}


def note_contained_ir(kind: str, note: str) -> None:
    """Declare what IR of ``kind`` found only inside a reader's containers serves: the summary line
    writes ``SPIR-V (note)`` for a binary with no ``kind`` image of its own (Intel's reader: the
    SPIR-V of a GPU fat binary's ``generic_ir`` member, which the runtime never hands to a CPU)."""
    _CONTAINED_IR_NOTES[kind] = note


def ir_name(form: str) -> str:
    """How people write an IR form (``SPIR-V``, ``PTX compute_90``): the label its kind was
    declared with (:meth:`aotwheel.model.ImageKind.declare`), then the target if any."""
    kind, _, arch = form.partition(" ")
    label = ir_labels().get(kind)
    if label is None:
        return form
    return f"{label} {arch}" if arch else label if form == kind else form


def summary(fr: FileReport) -> str:
    """One true line for every vendor: ``native: pvc, sm_90 · JIT fallback: SPIR-V, PTX compute_90 · 37 distinct kernel functions``."""
    parts = [f"native: {', '.join(fr.target_names()) or 'none'}"]
    names = [ir_name(k) for k in fr.ir]
    for at, form in enumerate(fr.ir):
        note = _CONTAINED_IR_NOTES.get(form)
        if note is not None and not any(form in (i.kind, i.content) for i in fr.images):
            names[at] += f" ({note})"  # e.g. only in a GPU fat binary: the runtime never hands it to a CPU (issue 14)
    parts.append(f"JIT fallback: {', '.join(names) or 'none'}")
    if fr.kernels is not None:
        parts.append(f"{fr.kernels} distinct kernel function{'s' if fr.kernels != 1 else ''}")
    return " · ".join(parts)


CARRIED = "carried"  # FileReport.kind of the report of the images a library loads itself
CARRIED_LABEL = "carried, loaded by the library itself"


def carried_summary(fr: FileReport) -> str | None:
    """``carried, loaded by the library itself: 114 images · native: sm_70, sm_75 · JIT fallback: none``,
    or ``None`` when the binary keeps no such image."""
    c = fr.carried
    if c is None or not c.images:
        return None
    n = len(c.images)
    return f"{CARRIED_LABEL}: {n} image{'s' if n != 1 else ''} · {summary(c)}"
