"""NVIDIA's own fields of a file report (:class:`aotwheel.report.FileReport`): the loadable
targets and the fat binary containers grouped into modules, filled by the reader and read by the
verdicts. The report JSON keeps them where schema 1 put them: ``cuda`` after ``warnings``,
``cuda_modules`` after ``ir_kernels_missing_from`` (docs/report-schema.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from aotwheel.backends.nvidia import NVIDIA
from aotwheel.report import FileReport, declare_fields


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
class CudaFields:
    """A file report's NVIDIA fields (:func:`cuda_fields`)."""

    loadable: list[str] = field(default_factory=list)  # "sm_90", "sm_90a", "compute_80": JSON "cuda"
    modules: list[CudaModule] = field(default_factory=list)  # only when the containers (every section's) carry different targets

    def json_fields(self) -> list[tuple[str, str, object]]:
        return [("warnings", "cuda", self.loadable), ("ir_kernels_missing_from", "cuda_modules", self.modules)]

    def add_member(self, other: CudaFields, member: str) -> None:
        self.loadable += [k for k in other.loadable if k not in self.loadable]
        for module in other.modules:
            module.section = f"{member}:{module.section}"
        self.modules += other.modules

    def mark(self) -> object:
        return len(self.loadable), len(self.modules)

    def undo(self, mark: object) -> None:
        assert isinstance(mark, tuple)  # mark()'s pair
        del self.loadable[mark[0]:], self.modules[mark[1]:]


def cuda_fields(report: FileReport) -> CudaFields:
    """``report``'s NVIDIA fields (empty ones made on first use)."""
    found: CudaFields = report.fields(NVIDIA)
    return found


# The reader declares these fields (making them through this module, imported at the first CUDA
# file) and ``FileReport.cuda`` when it is imported; a caller that makes reports itself and
# imports only this module gets the same declaration.
declare_fields(NVIDIA, CudaFields)
