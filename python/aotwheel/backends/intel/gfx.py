"""Intel graphics enums that device binaries carry (GFXCORE_FAMILY, PRODUCT_FAMILY).

Only values seen in real binaries are named (each line says where it was verified); anything else
is reported as its number, never guessed.
"""

from __future__ import annotations

CORE_FAMILIES: dict[int, str] = {
    11: "GEN8_CORE",  # Debian ocloc 22.43 -device bdw (legacy header)
    12: "GEN9_CORE",  # ocloc -device skl
    15: "GEN11_CORE",  # ocloc -device icllp
    18: "GEN12LP_CORE",  # ocloc -device tgllp, dg1, adl-p
    0xC07: "XE_HPG_CORE",  # ocloc -device acm-g10/g11/g12
    0xC08: "XE_HPC_CORE",  # ocloc -device pvc, pvc-sdv; vllm-xpu-kernels 64.12.60.7 zebin note
    0xC09: "XE2_HPG_CORE",  # vllm-xpu-kernels 64.bmg / 64.20.1.0 zebin note
}

PRODUCT_FAMILIES: dict[int, str] = {
    1271: "PVC",  # vllm-xpu-kernels 64.12.60.7 zebin note
    1274: "BMG",  # vllm-xpu-kernels 64.20.1.0 zebin note
}

# Catalog release name -> the core family its binaries must declare (cross-check of ar members).
RELEASE_CORE: dict[str, str] = {
    "gen12lp": "GEN12LP_CORE",
    "xe-hpg": "XE_HPG_CORE",
    "xe-hpc": "XE_HPC_CORE",
    "xe2-hpg": "XE2_HPG_CORE",
}


def core_name(value: int | None) -> str | None:
    """``0xC08`` -> ``"XE_HPC_CORE"``; unknown values become ``"core 0x…"``."""
    if value is None:
        return None
    return CORE_FAMILIES.get(value, f"core {value:#x}")


def product_name(value: int | None) -> str | None:
    if value is None:
        return None
    return PRODUCT_FAMILIES.get(value, f"product {value}")
