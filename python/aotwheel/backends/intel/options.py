"""Build options carried in SYCL images (the descriptor's CompileOptions / LinkOptions) that only
Intel's GPU compiler takes.

Intel's CPU OpenCL compiler rejects every option below with CL_INVALID_BUILD_OPTIONS
("Unrecognized build options"): measured with intel-opencl-rt 2026.2 through pyopencl on the
options bitsandbytes 0.50.2's spir64 images carry (tests/test_cpu_images.py repeats it for each
option the real image holds). What reaches that compiler depends on the loader:
:func:`passed_options` models each one.
"""

from __future__ import annotations

import shlex

# Option spellings (prefixes) of the GPU toolchain: ocloc's -device/-options, IGC's -ze-* and
# -cl-intel-*, clang's register-allocation mode, and the fp64 emulation switch.
GPU_ONLY_PREFIXES = ("-device", "-options", "-ze-", "-cl-intel-", "-ftarget-register-alloc-mode",
                     "-cl-poison-unsupported-fp64-kernels")


# Loaders of a device image. SYCL: the SYCL runtime, for images of a host binary's .tgtimg table.
# OPENCL: a loader that hands the image's options to clBuildProgram as they are.
SYCL, OPENCL = "sycl", "opencl"
# What the SYCL runtime (intel-sycl-rt 2026.2, OpenCL adapter) removes from an image's
# CompileOptions before urProgramBuild on a device that is not an Intel GPU. Measured on Intel's CPU
# OpenCL runtime by rewriting dpnp 0.20's descriptor string (tests/test_sycl_runtime_cpu.py):
# `-ftarget-register-alloc-mode=pvc:auto -cl-fast-relaxed-math` reaches the compiler as
# ` -cl-fast-relaxed-math`; `-device pvc` and `-cl-intel-enable-auto-large-GRF-mode` reach it as
# they are and the build fails (UR_RESULT_ERROR_INVALID_VALUE).
SYCL_DROPS_OFF_GPU = ("-ftarget-register-alloc-mode=",)


def passed_options(text: str | None, loader: str = SYCL) -> str:
    """The part of an image's build options that ``loader`` hands a CPU device's compiler."""
    if loader != SYCL:
        return text or ""
    return " ".join(w for w in split_options(text) if not w.startswith(SYCL_DROPS_OFF_GPU))


def split_options(text: str | None) -> list[str]:
    """Options as the compiler sees them (quotes honoured; an unbalanced quote splits on spaces)."""
    if not text:
        return []
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def gpu_only_options(text: str | None) -> list[str]:
    """The options in ``text`` a CPU OpenCL compiler refuses (with ``-device``'s value kept)."""
    words = split_options(text)
    out: list[str] = []
    for i, word in enumerate(words):
        if word.startswith(GPU_ONLY_PREFIXES):
            out.append(f"{word} {words[i + 1]}" if word == "-device" and i + 1 < len(words) else word)
    return out
