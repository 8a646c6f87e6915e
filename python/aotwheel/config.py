"""Every ``USE_AOT_*`` / ``AOTWHEEL_*`` variable aotwheel reads, with its default, defined once.

Callers read a :class:`Config` from a mapping they pass in (``os.environ`` by default) and hand
it down; nothing here or downstream writes to ``os.environ``. Standard library only: build steps
import it inside pip's isolated build environment.

CMake reads ``USE_AOT_DEVLIST`` / ``TORCH_XPU_ARCH_LIST`` / ``USE_AOT_JIT_FALLBACK`` /
``USE_AOT_FIELD_DEFAULTS`` as CMake variables at configure time and passes them to the Python
resolver (``USE_AOT_COMPRESS`` too: the resolver passes its word, else this default, to CMake as
``compress`` in its JSON); the names and
defaults here are the ones it must agree with.

The device list comes from the first of these that is set and not empty (:func:`devlist_choice`):
``USE_AOT_DEVLIST`` (CMake variable, then environment), ``TORCH_XPU_ARCH_LIST`` (PyTorch's
variable, read by torch-xpu-ops, IPEX and SyclExtension; CMake variable, then environment), then
:data:`DEFAULT_DEVLIST`. An empty value counts as unset everywhere, as torch-xpu-ops and IPEX
treat an empty ``TORCH_XPU_ARCH_LIST``; ``none`` is the way to ask for JIT only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from aotwheel.errors import AotwheelError, DevlistError


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, its default (``None``: unset) and what it does."""

    name: str
    default: str | None
    help: str


DEVLIST = Variable("USE_AOT_DEVLIST", "pvc,ats-m150", "devices to compile native code for (aotwheel resolve --list)")
TORCH_ARCH_LIST = Variable("TORCH_XPU_ARCH_LIST", None,
                           "PyTorch's device list: used when USE_AOT_DEVLIST is unset or empty")
FIELD_DEFAULTS = Variable("USE_AOT_FIELD_DEFAULTS", "ON",
                          "pass the ocloc/icpx options IPEX and torch-xpu-ops pass (fp64 poisoning, auto large GRF, > 4 GB buffers; ON/OFF)")
JIT_FALLBACK = Variable("USE_AOT_JIT_FALLBACK", "ON", "keep SPIR-V / PTX for devices without native code (ON/OFF)")
COMPRESS = Variable("USE_AOT_COMPRESS", "ON",
                    "embed device images zstd-compressed: the open toolchain's, one frame per image, and icpx's "
                    "--offload-compress (ON/OFF; CMake variable, then environment; a call's COMPRESS wins)")
JIT = Variable("AOTWHEEL_JIT", "warn", "what a coming JIT compilation does at run time: warn, error or ignore")
DEVICE = Variable("AOTWHEEL_DEVICE", None, "devices to assume instead of probing: pvc, 12.60.7, sm_90, cpu")
CACHE_DIR = Variable("AOTWHEEL_CACHE_DIR", None, "build cache folder ('off' disables it)")
OCLOC = Variable("AOTWHEEL_OCLOC", None, "the ocloc to build with")
CLANG = Variable("AOTWHEEL_CLANG", None, "the clang that compiles kernels to SPIR-V")
LLVM_SPIRV = Variable("AOTWHEEL_LLVM_SPIRV", None, "the llvm-spirv translator")
NVCC = Variable("AOTWHEEL_NVCC", None, "the nvcc to build with")
ZE_LOADER = Variable("AOTWHEEL_ZE_LOADER", None, "the Level Zero loader library the probe opens")
OCLOC_JOBS = Variable("AOTWHEEL_OCLOC_JOBS", None, "at most this many ocloc jobs at once (read by CMake and aotwheel compile)")
OCLOC_GROUPS = Variable("AOTWHEEL_OCLOC_GROUPS", None,
                        "ocloc edges per kernel source in a CMake build (default: planned for the cores; read at configure time)")
JIT_CACHE_DIR = Variable("AOTWHEEL_JIT_CACHE_DIR", None,
                         "per-user cache of JIT results for aotwheel.opencl ('off' disables it; default ~/.cache/aotwheel/jit)")
NO_FASTSCAN = Variable("AOTWHEEL_NO_FASTSCAN", None,
                       "1: inspect with the pure-Python readers only, not the C scanner aotwheel._fastscan (same answers)")

VARIABLES: tuple[Variable, ...] = (DEVLIST, TORCH_ARCH_LIST, FIELD_DEFAULTS, JIT_FALLBACK, COMPRESS, JIT, DEVICE, CACHE_DIR, OCLOC, CLANG, LLVM_SPIRV, NVCC, ZE_LOADER,
                                   OCLOC_JOBS, OCLOC_GROUPS, JIT_CACHE_DIR, NO_FASTSCAN)

DEFAULT_DEVLIST = str(DEVLIST.default)
JIT_POLICIES = ("warn", "error", "ignore")
_TRUE = ("1", "on", "yes", "true", "y")
_FALSE = ("0", "off", "no", "false", "n")


def flag(value: str | None, default: bool = True, *, name: str = JIT_FALLBACK.name) -> bool:
    """A CMake-style boolean (ON/OFF, 1/0, yes/no, true/false); empty or unset gives ``default``."""
    text = (value or "").strip().lower()
    if not text:
        return default
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise DevlistError(f"{name}={value!r} is not a boolean; use ON or OFF")


def off(value: str | None) -> bool:
    """Unset, empty or a false word (0/off/no/false/n); never raises (for switches read while
    inspecting, where a typo must not turn into an error)."""
    return (value or "").strip().lower() in ("", *_FALSE)


def jit_policy(value: str | None) -> str:
    """A JIT policy; empty or unset gives ``warn``."""
    text = (value or "").strip().lower() or str(JIT.default)
    if text not in JIT_POLICIES:
        raise AotwheelError(f"{JIT.name}={text!r} is not a policy; use one of warn, error, ignore")
    return text


def devlist_choice(env: Mapping[str, str], devlist: str | None = None,
                   torch_arch_list: str | None = None) -> tuple[str, str]:
    """``(device list, where it came from)``: ``devlist`` (an explicit value, e.g. CMake's
    ``USE_AOT_DEVLIST`` variable), ``$USE_AOT_DEVLIST``, ``torch_arch_list`` (CMake's
    ``TORCH_XPU_ARCH_LIST`` variable), ``$TORCH_XPU_ARCH_LIST``, then the default; the first that
    is not empty or blank wins."""
    for value, where in ((devlist, DEVLIST.name), (env.get(DEVLIST.name), f"{DEVLIST.name} (environment)"),
                         (torch_arch_list, TORCH_ARCH_LIST.name),
                         (env.get(TORCH_ARCH_LIST.name), f"{TORCH_ARCH_LIST.name} (environment)")):
        if value is not None and value.strip():
            return value, where
    return DEFAULT_DEVLIST, "the default"


@dataclass(frozen=True)
class Config:
    """The values of :data:`VARIABLES`; empty strings count as unset (``USE_AOT_DEVLIST= cmd``)."""

    devlist: str = DEFAULT_DEVLIST
    devlist_given: bool = False  # USE_AOT_DEVLIST was set (not the default)
    devlist_source: str = "the default"
    field_defaults: bool = True
    jit_fallback: bool = True
    jit: str = "warn"
    device: str | None = None
    cache_dir: str | None = None
    ocloc: str | None = None
    clang: str | None = None
    llvm_spirv: str | None = None
    nvcc: str | None = None
    ze_loader: str | None = None

    @classmethod
    def from_mapping(cls, env: Mapping[str, str]) -> Config:
        """Read every variable from ``env`` (validated: a bad value raises one clear error)."""

        def get(var: Variable) -> str | None:
            value = env.get(var.name, "").strip()
            return value or var.default

        devlist, source = devlist_choice(env)
        return cls(
            devlist=devlist,
            devlist_source=source,
            devlist_given=source != "the default",
            field_defaults=flag(get(FIELD_DEFAULTS), name=FIELD_DEFAULTS.name),
            jit_fallback=flag(get(JIT_FALLBACK)),
            jit=jit_policy(get(JIT)),
            device=get(DEVICE),
            cache_dir=get(CACHE_DIR),
            ocloc=get(OCLOC),
            clang=get(CLANG),
            llvm_spirv=get(LLVM_SPIRV),
            nvcc=get(NVCC),
            ze_loader=get(ZE_LOADER),
        )


def read(env: Mapping[str, str] | None = None) -> Config:
    """The configuration from ``env``, else from this process's environment (read, never written)."""
    return Config.from_mapping(os.environ if env is None else env)
