"""The inspection report: what device code each binary carries, for every vendor (schema 2).

:func:`aotwheel.inspector.inspect` fills it from the bytes; ``aotwheel inspect --json`` prints
:meth:`Report.to_dict`, documented in docs/report-schema.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from aotwheel.model import Image, ImageKind, Target

SCHEMA = 2


@dataclass
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
    kernels: int | None = None  # entry kernels, from one cubin per container (inspect --deep reads them)
    kernel_sample: list[str] = field(default_factory=list)  # up to 3 of their (mangled) names

    def label(self) -> str:
        """``../src/gbm/gbtree.cu and 40 more`` / ``ncclKernel_* (129 kernels)`` / ``cubins sm_50, sm_60``."""
        if self.sources:
            more = self.containers - len(self.sources)
            return ", ".join(self.sources) + (f" and {more} more" if more > 0 else "")
        if self.kernel_sample:
            return f"{self.kernels} kernels such as {self.kernel_sample[0]}"
        return f"an unnamed module of {self.containers} container{'s' if self.containers != 1 else ''} ({self.size / (1 << 20):.1f} MiB)"

@dataclass
class FileReport:
    """What one binary carries."""

    path: str
    native_targets: list[Target]
    ir: list[str]  # JIT-able forms: "spirv", "llvmbc", "ptx compute_90"
    images: list[Image]
    kernels: int | None  # distinct kernel names when known
    kind: str = ImageKind.UNKNOWN  # an ImageKind (ELF: a host binary), or "error" (unreadable)
    kernels_by_triple: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # loadable NVIDIA images: "sm_90", "sm_90a", "compute_80"; read by the _aot.py of wheels already published (keep)
    cuda: list[str] = field(default_factory=list)
    ir_kernels_missing_from: dict[str, int] = field(default_factory=dict)  # {"spir64_gen": 5}: kernels only SPIR-V serves there
    cuda_modules: list[CudaModule] = field(default_factory=list)  # only when .nv_fatbin's modules carry different targets
    error: str | None = None  # one-line reason this file could not be read (wheels/directories go on past it)

    def target_names(self) -> list[str]:
        """Distinct native targets in order, every vendor: catalog names (else IP versions, else
        generic names) and CUDA archs (``sm_90a``)."""
        seen: dict[str, None] = {}
        for t in self.native_targets:
            seen.setdefault(t.name or t.ip or t.generic or t.core or "unknown")
        return list(seen)


@dataclass
class Report:
    """``inspect()``'s answer: the input and one :class:`FileReport` per binary inside it."""

    path: str
    files: list[FileReport]

    @property
    def errors(self) -> list[FileReport]:
        """Files that could not be read (their ``error`` says why)."""
        return [f for f in self.files if f.error]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the ``aotwheel inspect --json`` contract, schema 2 (docs/report-schema.md)."""
        return {"schema": SCHEMA, "path": self.path, "files": [_plain(f) for f in self.files]}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """What ``dataclasses.asdict`` gives for the report's types (dataclasses, lists, dicts and
    immutable leaves), without its deep copy of every leaf: 11k images of cuFFT took 1 s that way."""
    cls = type(value)
    if cls is list:
        return [_plain(v) for v in value]
    if cls is dict:
        return {k: _plain(v) for k, v in value.items()}
    if cls is tuple:
        return tuple(_plain(v) for v in value)
    if is_dataclass(value):
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(value))
        return {n: _plain(getattr(value, n)) for n in names}
    return value


IR_NAMES = {"spirv": "SPIR-V", "llvmbc": "LLVM bitcode"}


def ir_name(form: str) -> str:
    """How people write an IR form: ``SPIR-V``, ``PTX compute_90``."""
    kind, _, arch = form.partition(" ")
    return IR_NAMES.get(form) or (f"PTX {arch}" if kind == "ptx" and arch else form)


def summary(fr: FileReport) -> str:
    """One true line for every vendor: ``native: pvc, sm_90 · JIT fallback: SPIR-V, PTX compute_90 · 37 distinct kernel functions``."""
    parts = [f"native: {', '.join(fr.target_names()) or 'none'}"]
    names = [ir_name(k) for k in fr.ir]
    if "spirv" in fr.ir and not any(ImageKind.SPIRV in (i.kind, i.content) for i in fr.images):
        # Only a GPU fat binary's generic_ir: the runtime never hands it to a CPU (issue 14).
        names[fr.ir.index("spirv")] += " (generic_ir: Intel GPUs only)"
    parts.append(f"JIT fallback: {', '.join(names) or 'none'}")
    if fr.kernels is not None:
        parts.append(f"{fr.kernels} distinct kernel function{'s' if fr.kernels != 1 else ''}")
    return " · ".join(parts)
