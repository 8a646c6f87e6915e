"""NVIDIA backend: CUDA GPUs.

Modules: ``targets`` (the ``sm_XY`` / ``compute_XY`` / ``ptx`` grammar, the build plan and the
driver's loading rules), ``fatbin`` (the ``.nv_fatbin`` reader), ``nvcc`` (the toolchain),
``rules`` (verdicts for files and devices), ``selftest`` (run the kernels through the CUDA driver).
This module is the :class:`aotwheel.backends.Backend` the core calls.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aotwheel.model import NATIVE, NVIDIA, Verdict

if TYPE_CHECKING:
    from aotwheel.model import Device
    from aotwheel.report import FileReport

PTX_PREFIX = "ptx "  # IR forms read "ptx compute_90"


class NvidiaBackend:
    name = NVIDIA
    title = "NVIDIA"

    def owns_token(self, token: str) -> bool:
        from aotwheel.backends.nvidia.targets import is_cuda_token

        return is_cuda_token(token)

    def owns_device(self, device: Device) -> bool:
        return str(getattr(device, "vendor", "")).lower() == NVIDIA and str(getattr(device, "catalog", "") or "").startswith("sm_")

    def code_in(self, file: FileReport) -> tuple[list[str], list[str]]:
        names = [t.name or "" for t in file.native_targets if t.vendor == NVIDIA]
        return list(dict.fromkeys(names)), [k for k in file.ir if k.startswith(PTX_PREFIX)]

    def decide(self, file: FileReport, device: Device, *, binary: str, compatibility: bool = True) -> Verdict:
        from aotwheel.backends.nvidia.rules import decide_cuda, device_of, file_of

        v = decide_cuda(file_of(file, binary), device_of(device))
        return v if v.verdict == NATIVE else _with_remedy(v, self.remedy(v))

    def remedy(self, verdict: Verdict) -> str:
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
        if arch is not None:
            names = [t for t in verdict.targets if t.startswith("sm_")] + [arch, "ptx"]
            line += f"; rebuild with USE_AOT_DEVLIST={','.join(dict.fromkeys(names))} to ship native code for it"
        return line

    def selftest(self, binary: str) -> list[Any]:
        from aotwheel.backends.nvidia.selftest import run_cuda

        return list(run_cuda(binary)[0])


def _device_arch(verdict: Verdict) -> str | None:
    """``sm_80`` from the verdict's ``ip`` (``cc 8.0``)."""
    cc = (verdict.ip or "").removeprefix("cc ").split(".")
    return f"sm_{cc[0]}{cc[1]}" if len(cc) == 2 and all(p.isdigit() for p in cc) else None


def _with_remedy(v: Verdict, remedy: str) -> Verdict:
    from dataclasses import replace

    return replace(v, remedy=remedy)


BACKEND = NvidiaBackend()
