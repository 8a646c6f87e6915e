"""What checking and probing answer, for every vendor: verdicts, probed devices, probe results
(the self-test's are :mod:`aotwheel.outcomes`).

Apart from :mod:`aotwheel.model` (what a binary carries) because inspecting a binary needs none
of these (``aotwheel inspect``'s start-up).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Protocol  # Device, below, is imported at run time by the backends' rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class VerdictKind(str, Enum):
    """What happens to a binary's device code on a device. A ``str``: compares, hashes, formats,
    prints (``repr`` too: ``[v.verdict for v in check()]`` shows ``['native']``) and serialises as
    its value, so JSON and messages read as they did when verdicts were plain strings."""

    NATIVE = "native"  # a native image is loaded as is
    JIT = "jit"  # an IR image (SPIR-V, PTX) is compiled at first use
    UNSUPPORTED = "unsupported"  # nothing the driver can load
    UNKNOWN = "unknown"  # depends on what no one reported (the device's IP, a feature setting)

    def __str__(self) -> str:  # as enum.StrEnum (3.11+): "native", not "VerdictKind.NATIVE"
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)

    def __repr__(self) -> str:
        return str.__repr__(self)

NATIVE, JIT, UNSUPPORTED, UNKNOWN = VerdictKind.NATIVE, VerdictKind.JIT, VerdictKind.UNSUPPORTED, VerdictKind.UNKNOWN



class Device(Protocol):
    """What the rules need to know about a device (``aotwheel.probe.ProbedDevice`` is one)."""

    name: str
    kind: str  # "gpu" | "cpu"
    vendor: str  # "intel" | "nvidia" | "any" (the CPU override) | ...
    ip: str | None  # Intel IP version ("12.60.7")
    catalog: str | None  # catalog name ("pvc") or CUDA arch ("sm_90")


@dataclass(frozen=True)
class Verdict:
    """What happens when ``binary`` runs on ``device``.

    ``verdict`` is a :class:`VerdictKind` (``native`` | ``jit`` | ``unsupported`` | ``unknown``); ``image`` names the archive
    member, ``generic_ir``/``spirv`` or bare image used; ``rule`` is one of the backend's rule keys (Intel's: ``aotwheel.backends.intel.rules.RULES``)
    (``compat:<product>`` for a compatibility fallback); ``vendor`` names the backend
    that owns the device and ``remedy`` its advice; ``reason`` is one readable sentence.
    """

    device: str
    ip: str | None  # the device's identity as text: Intel's IP "12.60.7", NVIDIA's "cc 9.0"
    verdict: VerdictKind
    image: str | None
    reason: str
    rule: str
    binary: str | None = None
    kind: str = "gpu"
    targets: tuple[str, ...] = ()  # native targets embedded in the binary (catalog names or IPs)
    vendor: str = ""  # the backend whose rules decided (the device's vendor): "intel", "nvidia"
    remedy: str = ""  # what to rebuild with so the device runs native code, from that backend
    jit_kernels: int = 0  # a native verdict's kernels that only SPIR-V images carry: JIT-compiled all the same
    unsupported_modules: tuple[str, ...] = ()  # modules of the binary that cannot load here (the rest can)
    # The numbers ``ip`` was written from, for the backend's own reading (NVIDIA: the compute
    # capability (9, 0)); None when the backend sets none. Not in :meth:`to_dict`: the JSON keeps ``ip``.
    version: tuple[int, ...] | None = None
    # The images the binary keeps as data and loads itself (FileReport.carried), decided by the
    # same backend for the same device: "native" | "jit" | "unsupported" | "unknown", None when
    # it keeps none; the image that verdict picked. Apart from ``verdict``, which (and the exit
    # status) covers the images a runtime registers only.
    carried: str | None = None
    carried_image: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.verdict, VerdictKind):  # a caller's plain "native"
            object.__setattr__(self, "verdict", VerdictKind(self.verdict))

    @property
    def summary(self) -> str:
        """``native``, ``native, 5 kernels JIT``, ``jit``, ``jit, 1 module unsupported``, ..."""
        if self.verdict == NATIVE and self.jit_kernels:
            return f"native, {self.jit_kernels} kernel{'s' if self.jit_kernels != 1 else ''} JIT"
        if self.unsupported_modules:
            n = len(self.unsupported_modules)
            return f"{self.verdict}, {n} module{'s' if n != 1 else ''} unsupported"
        return self.verdict.value

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verdict"] = self.verdict.value
        data["targets"] = list(self.targets)
        data["unsupported_modules"] = list(self.unsupported_modules)
        del data["version"]
        return data


@dataclass(frozen=True)
class ProbedDevice:
    """One device as a runtime reports it.

    ``kind`` is ``"gpu"``, ``"cpu"`` or ``"other"``; ``ip`` is ``"maj.min.rev"`` when the runtime
    can tell it (Level Zero, OpenCL with ``cl_intel_device_attribute_query``, torch.xpu), else
    ``None``; ``catalog`` is the aotwheel catalog name for that IP.
    """

    name: str
    backend: str  # the probe's name ("levelzero", "opencl", "cuda", ...) or "override"
    kind: str = "gpu"
    vendor: str = ""  # the backend whose driver runs it (its probe names it); "" for none
    ip: str | None = None
    catalog: str | None = None
    pci_id: int | None = None
    platform: str | None = None
    index: int = 0
    spirv: bool | None = None  # accepts SPIR-V input (OpenCL il_version), when known
    driver: str | None = None

    @property
    def label(self) -> str:
        """Short human name: catalog name (or device name) plus the backend."""
        base = self.catalog or self.name
        return f"{base} [{self.backend}]" if self.backend != "override" else base

    @property
    def key(self) -> str:
        """Identity used to warn once per device: kind + IP, else kind + name."""
        return f"{self.kind}:{self.ip or self.name}"

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["pci_id"] = None if self.pci_id is None else "0x%04x" % self.pci_id
        return data


@dataclass
class ProbeResult:
    """What one backend found; ``reason`` says why it found nothing (or is empty)."""

    backend: str
    devices: list[ProbedDevice] = field(default_factory=list)
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"backend": self.backend, "devices": [d.to_dict() for d in self.devices], "reason": self.reason}
