"""The NVIDIA share of ``USE_AOT_DEVLIST``: ``sm_XY``, ``compute_XY``, ``nvidia_gpu_sm_XY`` and
``ptx`` (:mod:`aotwheel.backends.nvidia.targets`), as the resolver (:mod:`aotwheel.devlist`) asks
for them through :class:`aotwheel.backends.protocol.DevlistGrammar` / ``DevlistPart``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aotwheel.backends.nvidia import NVIDIA
from aotwheel.errors import DevlistError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotwheel.backends.nvidia import targets as cuda
    from aotwheel.results import ProbedDevice


@dataclass(frozen=True)
class NvidiaPart:
    """The NVIDIA half of a resolved list: what nvcc builds (``None``: no NVIDIA token)."""

    cuda: cuda.CudaPlan | None
    vendor: str = NVIDIA

    @property
    def listed(self) -> tuple[str, ...]:
        return self.cuda.names if self.cuda else ()

    @property
    def builds(self) -> bool:
        return self.cuda is not None

    @property
    def native(self) -> bool:
        return bool(self.cuda and self.cuda.cubins)

    @property
    def sycl_targets(self) -> tuple[str, ...]:
        """Cubins as SYCL names them (``nvidia_gpu_sm_90``)."""
        return tuple(f"nvidia_gpu_{t.name}" for t in self.cuda.cubins) if self.cuda else ()

    @property
    def sycl_fallback(self) -> str:
        return ""

    @property
    def jit_phrase(self) -> str:
        return f"PTX {', '.join(t.name for t in self.cuda.ptx)} for NVIDIA GPUs" if self.cuda and self.cuda.ptx else ""

    @property
    def jit_hint(self) -> str:
        return "add 'ptx' to keep NVIDIA PTX" if self.cuda else ""

    def fields(self) -> list[tuple[str, str, object]]:
        return [("expansions", "cuda", self.cuda.to_dict() if self.cuda else None)]

    def cmake_variables(self, field_defaults: bool) -> dict[str, object]:
        return {"CUDA": list(self.listed), "CUDA_ARCHITECTURES": self.cuda.cmake_architectures() if self.cuda else ""}

    def describe(self, section: str) -> list[str]:
        if section != "images" or not self.cuda:
            return []
        lines = []
        for image in self.cuda.targets:
            what = "cubin (native)" if image.kind == "cubin" else "PTX (JIT on newer GPUs)"
            lines.append(f"  {image.name:<10} NVIDIA {what}")
        lines.append(f"nvcc {' '.join(self.cuda.gencode_flags())}")
        return lines

    def note(self, token: str, kind: str, names: Sequence[str]) -> str | None:
        return None

    def formats(self) -> dict[str, str]:
        return {}

    def report(self, field_defaults: bool) -> tuple[dict[str, object], list[str]]:
        return {}, []


class NvidiaGrammar:
    """Cubin and PTX targets for one devlist value; ``ptx`` keeps PTX of the newest cubin."""

    detects_native = True
    examples = None

    def __init__(self) -> None:
        self._targets: list[cuda.CudaTarget] = []
        self._keep_newest_ptx = False

    def expand(self, token: str, raw: str, rest: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
        from aotwheel.backends.nvidia import targets as cuda

        if token == cuda.PTX_TOKEN:
            self._keep_newest_ptx = True
            return None
        target = cuda.parse_cuda_target(token)
        self._targets.append(target)
        return "nvidia", (target.name,)

    def add_native(self, idents: Sequence[str]) -> tuple[tuple[str, ...], str]:
        """GPUs as ``sm_XY`` of their compute capability."""
        from aotwheel.backends.nvidia import targets as cuda

        found: list[cuda.CudaTarget] = []
        for ident in idents:
            target = cuda.parse_cuda_target(ident)
            if target not in found:
                found.append(target)
        self._targets.extend(found)
        return tuple(t.name for t in found), ""

    def suggest(self, token: str) -> tuple[str, ...]:
        from aotwheel.backends.nvidia import targets as cuda

        try:
            return (cuda.parse_cuda_target(token).name,)
        except DevlistError as exc:
            return tuple(exc.suggestions)

    def devices(self, token: str, raw: str, source: str) -> list[ProbedDevice]:
        """A GPU by its cubin target (``sm_90``; ``compute_XY`` and ``ptx`` name no device)."""
        from aotwheel.backends.nvidia import targets as cuda
        from aotwheel.results import ProbedDevice

        if not token.startswith(("sm_", "nvidia_gpu_sm_")):
            raise DevlistError(f"{source}: '{raw}' is not a GPU; name an NVIDIA GPU by its cubin target, e.g. AOTWHEEL_DEVICE=sm_90", raw)
        target = cuda.parse_cuda_target(token, supported=cuda.DEVICE_ARCHS)
        return [ProbedDevice(name=f"NVIDIA {target.name}", backend="override", kind="gpu", vendor=NVIDIA, catalog=target.name)]

    def finish(self, *, jit_fallback: bool, alone: bool) -> NvidiaPart:
        if not self._targets and not self._keep_newest_ptx:
            return NvidiaPart(None)  # no NVIDIA token: its targets module stays unimported (aotwheel resolve pvc)
        from aotwheel.backends.nvidia import targets as cuda

        return NvidiaPart(cuda.plan(self._targets, keep_newest_ptx=self._keep_newest_ptx, jit_fallback=jit_fallback))


def native_tokens() -> list[str]:
    """``sm_XY`` of the GPUs the CUDA driver reports (none without one)."""
    try:
        from aotwheel.backends.nvidia.probe import probe_cuda
    except ImportError:
        return []
    from aotwheel.backends.nvidia import targets as cuda

    return [f"sm_{cuda.cc_to_arch(d.cc)}" for d in probe_cuda().devices]
