"""The NVIDIA wheel-variant vocabulary: NVIDIA's own provider's (github.com/wheelnext/nvidia-variant-provider),
``nvidia :: sm_arch :: 90_real`` for an ``sm_90`` cubin, ``90_virtual`` for ``compute_90`` PTX,
so that NVIDIA's plugin ranks the wheels (the module :mod:`aotwheel.variants` asks; the backend
names it). aotwheel ships no plugin for it.
"""

from __future__ import annotations

import re
from typing import Any

from aotwheel.backends.nvidia import NVIDIA

NAMESPACE = "nvidia"
FEATURE = "sm_arch"
PROVIDER_REQUIRES = "nvidia-variant-provider"
PLUGIN_API = "nvidia_variant_provider.plugin:NvidiaVariantPlugin"
ALWAYS = False  # in the provider table only of releases that carry NVIDIA code

_PTX = "ptx "  # IR forms read "ptx compute_90"


def value(arch: str, virtual: bool) -> str | None:
    """``90_real`` / ``90_virtual`` for ``sm_90`` / ``compute_90``; None for arch-specific targets
    (``sm_90a``, ``sm_100f``), which NVIDIA's ``sm_arch`` vocabulary has no value for."""
    m = re.fullmatch(r"(?:sm|compute)_(\d+)", arch)
    if m is None:
        return None
    return f"{m[1]}_{'virtual' if virtual else 'real'}"


def target_property(target: Any) -> tuple[str | None, str] | None:
    """``(property, "")`` for a cubin, ``(None, why none)`` for one outside the vocabulary; ``None``
    for another vendor's image."""
    if target.vendor != NVIDIA:
        return None
    v = value(target.arch or target.name or "", virtual=False)
    if v is None:
        return None, "not in NVIDIA's sm_arch vocabulary; no property"
    return f"{NAMESPACE} :: {FEATURE} :: {v}", ""


def ir_property(kind: str) -> str | None:
    """The property of PTX (``ptx compute_80`` -> ``80_virtual``); None for other IR."""
    if not kind.startswith(_PTX):
        return None
    v = value(kind.split(" ", 1)[1], virtual=True)
    return None if v is None else f"{NAMESPACE} :: {FEATURE} :: {v}"
