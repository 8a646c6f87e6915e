"""Build options carried in SYCL images (the descriptor's CompileOptions / LinkOptions) that only
Intel's GPU compiler takes.

The SYCL runtime passes an image's options to the device's compiler. Intel's CPU OpenCL compiler
rejects every option below with CL_INVALID_BUILD_OPTIONS ("Unrecognized build options"): measured
with intel-opencl-rt 2026.2 through pyopencl on the options bitsandbytes 0.50.2's spir64 images
carry (tests/test_cpu_images.py repeats it for each option the real image holds).
"""

from __future__ import annotations

import shlex

# Option spellings (prefixes) of the GPU toolchain: ocloc's -device/-options, IGC's -ze-* and
# -cl-intel-*, clang's register-allocation mode, and the fp64 emulation switch.
GPU_ONLY_PREFIXES = ("-device", "-options", "-ze-", "-cl-intel-", "-ftarget-register-alloc-mode",
                     "-cl-poison-unsupported-fp64-kernels")


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
