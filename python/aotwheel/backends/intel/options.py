"""Build options carried in SYCL images (the descriptor's CompileOptions / LinkOptions) that only
Intel's GPU compiler takes.

Intel's CPU OpenCL compiler rejects every option below with CL_INVALID_BUILD_OPTIONS
("Unrecognized build options"): measured with intel-opencl-rt 2026.2 through pyopencl on the
options bitsandbytes 0.50.2's spir64 images carry (tests/test_cpu_images.py repeats it for each
option the real image holds). What reaches that compiler depends on the loader:
:func:`passed_options` models each one.
"""

from __future__ import annotations

from collections.abc import Iterable

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
        import shlex  # here: most option lists are already lists (aotwheel resolve splits none)

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


# --- the field's defaults: the options IPEX and torch-xpu-ops pass on every AOT build -----------
# IPEX cmake/gpu/SYCL.cmake (one `-options '...'`, this order) and torch-xpu-ops
# cmake/BuildFlags.cmake (three `-options X`); docs/formats.md quotes the lines. aotwheel passes
# them as ONE -options string: ocloc 22.43 keeps only the last of several -options (measured:
# `-options <poison> -options <grf>` still fails on a double for acm-g10), ocloc 26 joins them.
FP64_POISON_OPTION = "-cl-poison-unsupported-fp64-kernels"
FIELD_OCLOC_OPTIONS = ("-cl-intel-enable-auto-large-GRF-mode", FP64_POISON_OPTION,
                       "-cl-intel-greater-than-4GB-buffer-required")
FP64_CONV_EMU = "-fsycl-fp64-conv-emu"  # icpx compile and link, when a listed device has no fp64
HUGE_DEVICE_CODE = "-flink-huge-device-code"  # icpx link of an AOT build (IPEX)


def with_field_options(user: str, enabled: bool = True) -> str:
    """The ocloc ``-options`` text: the field defaults (when ``enabled``) then the user's own
    options, each default left out when the user already gave it (user options add to them)."""
    words = split_options(user)
    defaults = [o for o in FIELD_OCLOC_OPTIONS if o not in words] if enabled else []
    return " ".join([*defaults, user.strip()]).strip()


def field_defaults(names: Iterable[str], *, no_fp64: Iterable[str], emulated: Iterable[str],
                   enabled: bool = True) -> dict[str, object]:
    """What the field passes for these devices (catalog names), as the resolver's JSON reports it:
    the ocloc options, icpx's extra compile and link options, and the devices without fp64.
    ``enabled`` (USE_AOT_FIELD_DEFAULTS) says whether aotwheel applies them; the lists are the
    same either way, so that a build step's own FIELD_DEFAULTS ON can still use them."""
    names = list(names)
    lacking = [n for n in names if n in set(no_fp64)]
    emulate = [FP64_CONV_EMU] if any(n in set(emulated) for n in names) else []
    return {"enabled": enabled, "ocloc_options": list(FIELD_OCLOC_OPTIONS) if names else [],
            "sycl_compile_options": emulate, "sycl_link_options": emulate + ([HUGE_DEVICE_CODE] if names else []),
            "no_fp64": lacking}
