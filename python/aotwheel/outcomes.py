"""What self-testing answers, for every vendor: each device's selftest (:class:`DeviceResult`,
:class:`KernelResult`).

Apart from :mod:`aotwheel.results` (verdicts, probed devices, probe results), which ``aotwheel
check`` imports: it makes none of these records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass
class KernelResult:
    """One kernel's run on one device against its NumPy reference."""

    name: str
    max_error: float | None  # relative to the reference's largest magnitude
    tolerance: float
    ok: bool
    note: str = ""


@dataclass
class DeviceResult:
    """One device's selftest: its verdict, program creation time and each kernel's result."""

    device: str
    kind: str
    verdict: str
    reason: str
    build_ms: float = 0.0
    kernels: list[KernelResult] = field(default_factory=list)
    error: str = ""
    program_from: str = ""  # aotwheel.opencl's source(s): "native", "jit", "jit-cache"

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.kernels) and all(k.ok for k in self.kernels)

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "kind": self.kind, "verdict": self.verdict, "reason": self.reason,
                "build_ms": round(self.build_ms, 1), "program_from": self.program_from, "error": self.error, "ok": self.ok,
                "kernels": [k.__dict__ for k in self.kernels]}
