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
    0xC09: "XE2_HPG_CORE",  # vllm-xpu-kernels 64.bmg / 64.20.1.0 zebin note; ocloc 26.27 bmg-g21/g31, lnl-m
    0x1E00: "XE3_CORE",  # ocloc 26.27 (Debian sid) -device ptl-h, ptl-u, wcl, nvl-s, nvl-h
    0x2300: "XE3P_CORE",  # ocloc 26.27 -device nvl-p, cri
}

# Names as in IGC's igfxfmid.h (IGFX_<name>); values from the zebin product-family notes.
PRODUCT_FAMILIES: dict[int, str] = {
    29: "TIGERLAKE_LP",  # ocloc 26.27 -device tgllp; ocloc 22.43 --format zebin -device tgllp
    30: "ROCKETLAKE",  # ocloc 22.43 --format zebin -device rkl
    31: "ALDERLAKE_S",  # ocloc 22.43 --format zebin -device adl-s
    32: "ALDERLAKE_P",  # ocloc 22.43 --format zebin -device adl-p
    33: "ALDERLAKE_N",  # ocloc 22.43 --format zebin -device adl-n
    1210: "DG1",  # ocloc 26.27 -device dg1; ocloc 22.43 --format zebin -device dg1
    1270: "DG2",  # ocloc 26.27 -device acm-g10
    1271: "PVC",  # vllm-xpu-kernels 64.12.60.7 zebin note
    1272: "METEORLAKE",  # ocloc 26.27 -device mtl-u, mtl-h
    1273: "ARROWLAKE",  # ocloc 26.27 -device arl-h
    1274: "BMG",  # vllm-xpu-kernels 64.20.1.0 zebin note; ocloc 26.27 bmg-g21, bmg-g31
    1275: "LUNARLAKE",  # ocloc 26.27 -device lnl-m
    1300: "PTL",  # ocloc 26.27 -device ptl-h, ptl-u, wcl
    1340: "NVL_XE3G",  # ocloc 26.27 -device nvl-s, nvl-h
    1360: "NVL",  # ocloc 26.27 -device nvl-p
    1380: "CRI",  # ocloc 26.27 -device cri
}

# Product family -> its GPU core family: what a zebin that declares only its product family
# (ocloc 22.43's --format zebin output: core note 0, no product-config note) was built for. The
# pairs are compute-runtime's hw_info_<product>.cpp (ocloc 26.27 writes both notes and they agree).
PRODUCT_CORE: dict[str, str] = {
    **dict.fromkeys(("TIGERLAKE_LP", "ROCKETLAKE", "ALDERLAKE_S", "ALDERLAKE_P", "ALDERLAKE_N", "DG1"), "GEN12LP_CORE"),
    "DG2": "XE_HPG_CORE", "PVC": "XE_HPC_CORE", "METEORLAKE": "XE_HPG_CORE", "ARROWLAKE": "XE_HPG_CORE",
    "BMG": "XE2_HPG_CORE", "LUNARLAKE": "XE2_HPG_CORE", "PTL": "XE3_CORE", "NVL_XE3G": "XE3_CORE",
    "NVL": "XE3P_CORE", "CRI": "XE3P_CORE",
}

# compute-runtime's product abbreviation (rules._ABBREVIATION) -> the product family its devices
# report: what a zebin's product-family note is checked against when it declares no product config.
ABBREVIATION_PRODUCT: dict[str, str] = {
    "tgllp": "TIGERLAKE_LP", "rkl": "ROCKETLAKE", "adls": "ALDERLAKE_S", "adlp": "ALDERLAKE_P", "adln": "ALDERLAKE_N",
    "dg1": "DG1", "dg2": "DG2", "pvc": "PVC", "mtl": "METEORLAKE", "arl": "ARROWLAKE", "bmg": "BMG", "lnl": "LUNARLAKE",
    "ptl": "PTL", "nvls": "NVL_XE3G", "nvlp": "NVL", "cri": "CRI",
}

# Product family -> the devlist word for the group it serves (a device name, or ocloc's generic name
# where the family has several products): how a zebin that declares only its family is named.
PRODUCT_TOKEN: dict[str, str] = {
    "TIGERLAKE_LP": "tgllp", "ROCKETLAKE": "rkl", "ALDERLAKE_S": "adl-s", "ALDERLAKE_P": "adl-p", "ALDERLAKE_N": "adl-n",
    "DG1": "dg1", "DG2": "dg2", "PVC": "pvc", "METEORLAKE": "mtl", "BMG": "bmg", "PTL": "ptl",
}

# Catalog release name -> the core family its binaries must declare (cross-check of ar members).
RELEASE_CORE: dict[str, str] = {
    "gen12lp": "GEN12LP_CORE",
    "xe-hpg": "XE_HPG_CORE",
    "xe-hpc": "XE_HPC_CORE",
    "xe2-hpg": "XE2_HPG_CORE",
    "xe-lpg": "XE_HPG_CORE",  # ocloc 26.27 mtl-u, mtl-h notes
    "xe-lpgplus": "XE_HPG_CORE",  # ocloc 26.27 arl-h note
    "xe2-lpg": "XE2_HPG_CORE",  # IGFX_XE2_HPG_CORE = IGFX_XE2_LPG_CORE (igfxfmid.h)
    "xe3-lpg": "XE3_CORE",
    "xe3p-lpg": "XE3P_CORE",
    "xe3p-xpc": "XE3P_CORE",
}


def core_name(value: int | None) -> str | None:
    """``0xC08`` -> ``"XE_HPC_CORE"``; unknown values become ``"core 0x…"``; 0 (IGFX_UNKNOWN_CORE,
    what ocloc 22.43's zebins declare) is no core: None."""
    if not value:
        return None
    return CORE_FAMILIES.get(value, f"core {value:#x}")


def product_name(value: int | None) -> str | None:
    if value is None:
        return None
    return PRODUCT_FAMILIES.get(value, f"product {value}")
