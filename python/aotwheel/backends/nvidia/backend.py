"""The NVIDIA :class:`aotwheel.backends.Backend`: what the core asks of this vendor."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace

from aotwheel.backends.capabilities import Capabilities, ProbeSpec, ToolOption
from aotwheel.backends.nvidia import NVIDIA
from aotwheel.backends.nvidia.variables import NVCC

TYPE_CHECKING = False  # not typing's: `aotwheel resolve` imports this module, and no typing or results
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from aotwheel.backends.nvidia.devlist import NvidiaGrammar
    from aotwheel.backends.nvidia.nvcc import Nvcc
    from aotwheel.backends.protocol import Backend, DevlistPart
    from aotwheel.report import FileReport
    from aotwheel.results import Device, ProbedDevice, Verdict

PTX_PREFIX = "ptx "  # IR forms read "ptx compute_90"


def rebuild_tokens(file: FileReport, add: str | None = None) -> list[str]:
    """``USE_AOT_DEVLIST`` tokens that rebuild ``file``'s NVIDIA images (``add``, a device's
    ``sm_XY``, among the cubins): its cubins, then ``ptx`` when it keeps PTX beside them (the
    PTX of the newest cubin), else its ``compute_XY`` names."""
    from aotwheel.backends.nvidia.rules import file_of

    images = file_of(file, "").targets
    cubins = [t.name for t in images if t.kind == "cubin"] + ([add] if add else [])
    ptx = [t.name for t in images if t.kind == "ptx"]
    return list(dict.fromkeys(cubins + (["ptx"] if ptx and cubins else ptx)))


def _native_tokens(devices: Sequence[ProbedDevice]) -> list[str]:
    """``sm_XY`` of the GPUs the CUDA driver itself reports (asked directly, not through ``devices``)."""
    from aotwheel.backends.nvidia.devlist import native_tokens

    return native_tokens()


def _device_key(device: Any) -> str:
    """The CUDA target of the device the probe found at that index (two GPUs of one name can differ)."""
    return f"{getattr(device, 'backend', 'cuda')}:{getattr(device, 'index', 0)}:{getattr(device, 'catalog', '')}"


def _selftest(binary: str) -> list[Any]:
    from aotwheel.backends.nvidia.selftest import run_cuda

    return list(run_cuda(binary)[0])


class NvidiaToolchain:
    """The installed nvcc: ``aotwheel resolve --toolchain nvcc`` and ``aotwheel build toolchain``
    (the grammar itself knows nvcc 13.0's architectures; the installed nvcc may build others)."""

    tools: tuple[ToolOption, ...] = (ToolOption("nvcc", f"nvcc to check against (default: ${NVCC.name}, $CUDACXX, PATH, "
                                                        "$CUDA_HOME/bin, NVIDIA's PyPI nvcc, /usr/local/cuda/bin)"),)

    def table(self, text: str, tools: Mapping[str, str | None], *, installed: bool = False) -> object | None:
        return None

    def listing(self, tools: Mapping[str, str | None]) -> list[str]:
        from aotwheel.backends.nvidia.targets import NVCC13_ARCHS

        archs = " ".join(f"sm_{a}" for a in sorted(NVCC13_ARCHS))
        return [f"NVIDIA (nvcc 13.0): {archs}; compute_XY for PTX, ptx for the newest cubin's, sm_XYa / sm_XYf arch- and family-specific"]

    def check(self, part: DevlistPart, tool: str, path: str | None) -> None:
        from aotwheel.backends.nvidia.devlist import NvidiaPart
        from aotwheel.backends.nvidia.nvcc import find_nvcc

        assert isinstance(part, NvidiaPart), part  # the resolver hands each toolchain its own vendor's part
        if part.listed:
            _require_archs(find_nvcc(path), part.listed)

    def report(self, devices: Sequence[str], cache: Any) -> dict[str, object]:
        """nvcc's facts; with NVIDIA ``devices`` asked for, nvcc must build them (else one error
        line), without, a missing nvcc is a field."""
        from aotwheel.backends.nvidia.nvcc import find_nvcc
        from aotwheel.errors import ToolchainError

        try:
            nvcc = find_nvcc()
        except ToolchainError as exc:
            if devices:
                raise
            return {"nvcc_error": str(exc)}
        _require_archs(nvcc, devices)
        return {"nvcc": nvcc.path, "nvcc_version": nvcc.version, "nvcc_archs": [f"sm_{a}" for a in sorted(nvcc.real_archs)]}


def _require_archs(nvcc: Nvcc, names: Sequence[str]) -> None:
    """Raise :class:`ToolchainError` (one line) unless ``nvcc`` builds every target in ``names``."""
    from aotwheel.backends.nvidia.targets import parse_cuda_target
    from aotwheel.errors import DevlistError, ToolchainError

    for name in names:
        try:
            parse_cuda_target(name, supported=nvcc.real_archs)
        except DevlistError as exc:
            why = str(exc).removeprefix("USE_AOT_DEVLIST: ")
            raise ToolchainError(f"nvcc {nvcc.version} at {nvcc.path} cannot build {name}: {why}") from None


class NvidiaBackend:
    name = NVIDIA
    title = "NVIDIA"
    capabilities = Capabilities(
        probes=(ProbeSpec("cuda", "aotwheel.backends.nvidia.probe", native=True),),
        native_tokens=_native_tokens,
        device_key=_device_key,
        rebuild_tokens=rebuild_tokens,
        selftest=_selftest,
        toolchain=NvidiaToolchain(),
        variants="aotwheel.backends.nvidia.variants",  # wheel-variant vocabulary (aotwheel.variants)
    )

    def owns_token(self, token: str) -> bool:
        from aotwheel.backends.nvidia.targets import is_cuda_token

        return is_cuda_token(token)

    def devlist_grammar(self, table: object | None = None) -> NvidiaGrammar:
        from aotwheel.backends.nvidia.devlist import NvidiaGrammar

        return NvidiaGrammar()

    def owns_device(self, device: Device) -> bool:
        return str(getattr(device, "vendor", "")).lower() == NVIDIA and str(getattr(device, "catalog", "") or "").startswith("sm_")

    def code_in(self, file: FileReport) -> tuple[list[str], list[str]]:
        names = [t.name or "" for t in file.native_targets if t.vendor == NVIDIA]
        return list(dict.fromkeys(names)), [k for k in file.ir if k.startswith(PTX_PREFIX)]

    def decide(self, file: FileReport, device: Device, *, binary: str, compatibility: bool = True) -> Verdict:
        from aotwheel.backends.nvidia.rules import decide_cuda, device_of, file_of
        from aotwheel.results import NATIVE

        gpu = device_of(device)
        v = _with_modules(decide_cuda(file_of(file, binary), gpu), file, gpu.cc)
        if v.verdict == NATIVE:
            return v
        # The advice is the remedy alone (every vendor's targets kept), in the verdict and the
        # JITWarning alike: the rule's own "rebuild with sm_XY" tail would name NVIDIA's only.
        reason = v.reason.split("; rebuild with ")[0]
        return _with_remedy(replace(v, reason=reason), self._remedy(v, file))

    def _remedy(self, verdict: Verdict, file: FileReport) -> str:
        arch = _device_arch(verdict)
        if arch is None:
            return ""
        from aotwheel.backends import rebuild_devlist

        return f"rebuild with USE_AOT_DEVLIST={rebuild_devlist(file, NVIDIA, rebuild_tokens(file, arch))}"

    def remedy(self, verdict: Verdict) -> str:
        """From the verdict alone (no file at hand): its targets, the device's arch added."""
        arch = _device_arch(verdict)
        if arch is None:
            return ""
        names = [t for t in verdict.targets if not t.startswith("compute_")] + [arch]
        return f"rebuild with USE_AOT_DEVLIST={','.join(dict.fromkeys(names))}"

    def jit_message(self, verdict: Verdict, kernels: int | None = None) -> str:
        binary = os.path.basename((verdict.binary or "").split("!")[-1]) or "the binary"
        cubins = ", ".join(t for t in verdict.targets if t.startswith("sm_")) or "none (PTX only)"
        line = f"{binary}: {verdict.device} ({verdict.ip}) will JIT-compile its kernels from {verdict.image} PTX at first use (embedded cubins: {cubins})"
        arch = _device_arch(verdict)
        if verdict.remedy.startswith("rebuild with "):  # decide()'s, with every vendor's targets: the verdict's words
            line += f"; {verdict.remedy} to ship native code for it"
        elif arch is not None:
            names = [t for t in verdict.targets if t.startswith("sm_")] + [arch, "ptx"]
            line += f"; rebuild with USE_AOT_DEVLIST={','.join(dict.fromkeys(names))} to ship native code for it"
        return line

def _registered(module: Any) -> bool:
    """Whether a CudaModule's containers are ones the CUDA runtime registers (.nv_fatbin; in a
    static library's objects also __nv_relfatbin), not ones the library loads itself."""
    from aotwheel.backends.nvidia.fatbin import SECTIONS

    return all(part.rsplit(":", 1)[-1] in SECTIONS for part in module.section.split(", "))


def _with_modules(v: Verdict, file: FileReport, cc: tuple[int, int]) -> Verdict:
    """:func:`_with_registered_modules`, and how many of the containers the library loads itself
    (other data sections: cuDNN's .cask_resource, cuFFT's .ldata; it picks among them) carry code
    for the device: the verdict's counts cover every container inspect lists."""
    from aotwheel.backends.nvidia.report import cuda_fields
    from aotwheel.results import UNSUPPORTED

    v = _with_registered_modules(v, file, cc)
    loaded = [m for m in cuda_fields(file).modules if not _registered(m)]
    if not loaded:
        return v
    from aotwheel.backends.nvidia.targets import cuda_verdict, target_from_name

    total = sum(m.containers for m in loaded)
    fit = sum(m.containers for m in loaded
              if cuda_verdict([t for n in m.targets if (t := target_from_name(n)) is not None], cc).verdict != UNSUPPORTED)
    where = ", ".join(dict.fromkeys(part for m in loaded for part in m.section.split(", ")))
    registered = sum(m.containers for m in cuda_fields(file).modules if _registered(m))
    return replace(v, reason=f"{v.reason}; {registered} container{'s' if registered != 1 else ''} registered, and {total} more in {where} "
                             f"that the library loads itself, {fit} of them with code for compute capability {cc[0]}.{cc[1]}")


def _with_registered_modules(v: Verdict, file: FileReport, cc: tuple[int, int]) -> Verdict:
    """A loadable verdict that names the binary's modules that cannot load (per kernel set: one
    .nv_fatbin container is one module to the CUDA runtime; CudaFields.modules groups them)."""
    from aotwheel.backends.nvidia.report import cuda_fields
    from aotwheel.results import UNSUPPORTED

    registered = [m for m in cuda_fields(file).modules if _registered(m)]
    if v.verdict == UNSUPPORTED or len(registered) < 2:  # one kind of module: the file's verdict is its verdict
        return v
    from aotwheel.backends.nvidia.targets import cuda_verdict, target_from_name

    bad = []
    for m in registered:
        images = [t for n in m.targets if (t := target_from_name(n)) is not None]
        if cuda_verdict(images, cc).verdict == UNSUPPORTED:
            bad.append(m)
    if not bad:
        return v
    words = "; ".join(
        f"{m.label()} (cubins {', '.join(t for t in m.targets if t.startswith('sm_')) or 'none'}, "
        f"{'PTX ' + ', '.join(t for t in m.targets if t.startswith('compute_')) if any(t.startswith('compute_') for t in m.targets) else 'no PTX'})"
        for m in bad
    )
    n = len(bad)
    reason = f"{v.reason}; {n} module{'s' if n != 1 else ''} cannot load on compute capability {cc[0]}.{cc[1]}: {words}"
    return replace(v, reason=reason, unsupported_modules=tuple(m.label() for m in bad))


def _device_arch(verdict: Verdict) -> str | None:
    """``sm_80`` from the verdict's compute capability (``version``, ``(8, 0)``; rules.decide_cuda sets it)."""
    cc = verdict.version
    return f"sm_{cc[0]}{cc[1]}" if cc is not None and len(cc) == 2 else None


def _with_remedy(v: Verdict, remedy: str) -> Verdict:
    return replace(v, remedy=remedy)


BACKEND: Backend = NvidiaBackend()  # checked against the protocol by mypy
