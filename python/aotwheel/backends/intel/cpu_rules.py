"""Verdicts for CPU devices: what the SYCL runtime's OpenCL adapter gives Intel's CPU runtime.

For a CPU device the runtime takes a ``spir64_x86_64`` image (compiled x86-64 code: native), else
a ``spir64`` SPIR-V image (built at first use: JIT); a GPU fat binary's ``generic_ir`` member is
the GPU driver's fallback and never reaches a CPU, and ``spir64_gen`` images are GPU-only. A
SPIR-V image whose build options, as its loader passes them, hold GPU-only ones (``-device``,
``-cl-intel-*``...) is refused by the CPU compiler (``CL_INVALID_BUILD_OPTIONS``, measured:
tests/test_cpu_images.py). The SYCL runtime, which loads .tgtimg images, first drops
``-ftarget-register-alloc-mode=`` off an Intel GPU (measured: tests/test_sycl_runtime_cpu.py), so
dpnp's images, which carry only that one, JIT on a CPU.
"""

from __future__ import annotations

from typing import Any

from aotwheel.acceptable import Acceptable, Offered, first_acceptable
from aotwheel.backends.intel import INTEL
from aotwheel.backends.intel.kinds import CPU_AOT
from aotwheel.backends.intel.options import SYCL, gpu_only_options, passed_options
from aotwheel.model import IR_KINDS
from aotwheel.results import JIT, NATIVE, UNSUPPORTED, Verdict, VerdictKind

CPU_FORMAT = CPU_AOT
SPIRV = "spirv"  # the image kind offered to the lookup for a spir64 SPIR-V (or LLVM IR) image
RULES = {
    "cpu-aot": "a spir64_x86_64 image: compiled x86-64 code the CPU runtime loads as is",
    "cpu-ir": "a spir64 SPIR-V image, compiled for the CPU at first use",
    "cpu-options": "the only SPIR-V images carry build options that their loader passes and the CPU compiler refuses",
    "cpu-no-image": "only GPU images (spir64_gen, generic_ir): none is given to a CPU",
}


def spirv_images(file: Any) -> list[Any]:
    """Images a CPU can JIT: SPIR-V (or LLVM IR) images themselves, not members of a GPU archive."""
    return [i for i in file.images if (i.kind in IR_KINDS or i.content in IR_KINDS) and (i.triple or "spir64") != "spir64_gen"]


def acceptable(spirv: bool = True) -> list[Acceptable]:
    """What the runtime gives a CPU, best first: a spir64_x86_64 image (native), then a spir64
    SPIR-V image its compiler takes (JIT; only when the device accepts SPIR-V)."""
    order = [Acceptable(CPU_FORMAT, ("",), NATIVE, "cpu-aot", prefix=True)]
    return order + [Acceptable(SPIRV, ("spir64",), JIT, "cpu-ir")] if spirv else order


def decide_cpu(file: Any, device: Any, *, binary: str | None = None, loader: str = SYCL) -> Verdict:
    """The verdict for a CPU device. ``loader``: ``"sycl"`` (the SYCL runtime, which loads the images
    of a .tgtimg table: the default) or ``"opencl"`` (hands each image's options to OpenCL as they are)."""
    label = str(getattr(device, "label", None) or getattr(device, "name", "cpu"))
    aot = [t for t in file.native_targets if t.vendor == INTEL and t.format == CPU_FORMAT]
    gpu = tuple(dict.fromkeys(t.name or t.ip or t.generic or "unknown" for t in file.native_targets if t.vendor == INTEL and t.format != CPU_FORMAT))
    names = tuple(dict.fromkeys([*(t.name or "spir64_x86_64" for t in aot), *gpu]))

    def make(verdict: VerdictKind, image: str | None, rule: str, reason: str) -> Verdict:
        return Verdict(label, None, verdict, image, reason, rule, binary, "cpu", names, INTEL)

    images = spirv_images(file)
    offered = [Offered(CPU_FORMAT, t.name or "spir64_x86_64", t) for t in aot] + [Offered(SPIRV, "spir64", i) for i in images]
    refused: dict[int, list[str]] = {}

    def validate(rank: Acceptable, image: Offered) -> tuple[bool, str]:
        if rank.verdict != JIT:
            return True, ""
        opts = refused[image.item.index] = gpu_only_options(passed_options(image.item.compile_options, loader))
        return not opts, ", ".join(opts)

    picked = first_acceptable(acceptable(getattr(device, "spirv", None) is not False), offered, validate)
    if picked.acceptable is not None and picked.image is not None:
        if picked.verdict == NATIVE:
            return make(NATIVE, f"image {picked.image.item.image} (spir64_x86_64)", "cpu-aot", f"native: {RULES['cpu-aot']}")
        return make(JIT, "spirv", "cpu-ir", f"JIT: {label} builds the spir64 SPIR-V image at first use (no spir64_x86_64 image)")
    if refused:
        opts = sorted({o for v in refused.values() for o in v})
        who = "the SYCL runtime passes" if loader == SYCL else "the loader passes"
        return make(UNSUPPORTED, None, "cpu-options",
                    f"unsupported: the spir64 image{'s' if len(images) > 1 else ''} carr{'y' if len(images) > 1 else 'ies'} GPU-only build options "
                    f"({', '.join(opts)}) that {who} and Intel's CPU OpenCL compiler refuses (CL_INVALID_BUILD_OPTIONS)")
    if images:
        return make(UNSUPPORTED, None, "cpu-ir", f"unsupported: {label} does not accept SPIR-V")
    what = ", ".join(gpu) or "no device image for a CPU"
    return make(UNSUPPORTED, None, "cpu-no-image",
                f"unsupported: the binary carries only GPU code ({what}); the runtime gives a CPU only spir64_x86_64 or spir64 "
                "images, and a GPU fat binary's generic_ir is for the GPU driver")
