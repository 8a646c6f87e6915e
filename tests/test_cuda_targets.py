"""NVIDIA devlist grammar, nvcc flags and the driver's loading rules (aotwheel.backends.nvidia.targets).

The verdict tables are written by hand from NVIDIA's documented rules (CUDA C++ Programming
Guide, "Binary Compatibility" / "PTX Compatibility"; docs/formats.md §5). The -gencode flags are
checked by running nvcc with them and listing the result with cuobjdump.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.backends.nvidia.targets import CudaTarget, cuda_verdict, is_cuda_token, parse_cuda_target, plan
from aotwheel.errors import DevlistError

from _cuda_util import CACHE, VADD, listing, run, source


def T(name: str) -> CudaTarget:
    return parse_cuda_target(name)


@pytest.mark.parametrize(
    "token, arch, kind, a, f",
    [
        ("sm_90", 90, "cubin", False, False),
        ("SM_90", 90, "cubin", False, False),
        ("sm_90a", 90, "cubin", True, False),
        ("sm_100f", 100, "cubin", False, True),
        ("sm_121a", 121, "cubin", True, False),
        ("compute_80", 80, "ptx", False, False),
        ("compute_120a", 120, "ptx", True, False),
        ("nvidia_gpu_sm_90", 90, "cubin", False, False),  # SYCL's -fsycl-targets spelling
        ("sm_75", 75, "cubin", False, False),
    ],
)
def test_valid_tokens(token: str, arch: int, kind: str, a: bool, f: bool) -> None:
    t = parse_cuda_target(token)
    assert (t.arch, t.kind, t.arch_specific, t.family_specific) == (arch, kind, a, f)
    assert is_cuda_token(token)


@pytest.mark.parametrize(
    "token, message, suggestion",
    [
        ("sm90", "did you mean sm_90", "sm_90"),
        ("compute90", "did you mean compute_90", "compute_90"),
        ("sm-90", "did you mean sm_90", "sm_90"),
        ("sm_9.0", "did you mean sm_90", "sm_90"),
        ("90-real", "CMake CUDA_ARCHITECTURES syntax; write sm_90", "sm_90"),
        ("90-virtual", "write compute_90", "compute_90"),
        ("sm_91", "unknown NVIDIA architecture 'sm_91'; did you mean sm_90", "sm_90"),
        ("sm_80a", "write sm_80", "sm_80"),
        ("sm_90f", "write sm_90", "sm_90"),
        ("sm_101", "renamed sm_110 in CUDA 13.0", "sm_110"),
        ("ptxx", "did you mean ptx", "ptx"),
    ],
)
def test_bad_tokens_name_the_fix(token: str, message: str, suggestion: str) -> None:
    with pytest.raises(DevlistError) as exc:
        parse_cuda_target(token)
    assert message in str(exc.value)
    assert suggestion in exc.value.suggestions
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "token, last",
    # Last CUDA releases that built these (NVIDIA release notes): Maxwell/Pascal/Volta were
    # removed in 13.0, Kepler sm_35/37 in 12.0, sm_30 in 11.0, Fermi in 9.0.
    [("sm_50", "12.9"), ("sm_61", "12.9"), ("sm_70", "12.9"), ("compute_72", "12.9"), ("sm_35", "11.8"), ("sm_30", "10.2"), ("sm_20", "8.0")],
)
def test_retired_archs_name_the_last_cuda(token: str, last: str) -> None:
    with pytest.raises(DevlistError, match=f"CUDA {last} was the last"):
        parse_cuda_target(token)


def test_newer_archs_need_a_newer_nvcc_but_are_valid_devices() -> None:
    # sm_107 images ship in libnvjpeg 13.2.3 (read by test_cuda_fatbin); nvcc 13.0 cannot build it.
    with pytest.raises(DevlistError, match="needs a newer nvcc"):
        parse_cuda_target("sm_107")
    from aotwheel.backends.nvidia.targets import DEVICE_ARCHS

    assert parse_cuda_target("sm_107", supported=DEVICE_ARCHS).cc == (10, 7)


def test_supported_set_follows_the_nvcc_in_use() -> None:
    # An older toolkit (CUDA 12.x) still builds sm_70: the caller passes nvcc's own list.
    assert parse_cuda_target("sm_70", supported={70, 80, 90}).arch == 70
    with pytest.raises(DevlistError, match="valid: sm_70, sm_80, sm_90"):
        parse_cuda_target("sm_120", supported={70, 80, 90})


def test_every_arch_nvcc_lists_is_accepted(nvcc: str) -> None:
    out = run([nvcc, "--list-gpu-code"]).stdout.split()
    assert out, "nvcc --list-gpu-code printed nothing"
    for name in out:
        assert parse_cuda_target(name).name == name
    for name in run([nvcc, "--list-gpu-arch"]).stdout.split():
        assert parse_cuda_target(name).name == name


def test_intel_names_are_not_cuda_tokens() -> None:
    for token in ("pvc", "acm-g10", "ats-m150", "12.60.7", "dg2", "none", "no-jit", "native"):
        assert not is_cuda_token(token)
    for token in ("ptx", "sm90", "compute_80", "nvidia_gpu_sm_90"):
        assert is_cuda_token(token)


def test_plan_keeps_newest_ptx_and_dedups() -> None:
    p = plan([T("sm_80"), T("sm_90a"), T("sm_80")], keep_newest_ptx=True)
    assert p.names == ("sm_80", "sm_90a", "compute_90")
    assert p.gencode_flags() == [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90a,code=sm_90a",
        "-gencode=arch=compute_90,code=compute_90",
    ]
    assert p.cmake_architectures() == "80-real;90-virtual;90a-real"
    assert plan([T("sm_90"), T("compute_90")]).cmake_architectures() == "90"


def test_plan_contradictions_are_errors() -> None:
    with pytest.raises(DevlistError, match="none is listed"):
        plan([T("compute_80")], keep_newest_ptx=True)
    with pytest.raises(DevlistError, match="no-jit"):
        plan([T("sm_90")], keep_newest_ptx=True, jit_fallback=False)
    assert plan([T("sm_90")], jit_fallback=False).names == ("sm_90",)


def test_gencode_flags_build_exactly_the_planned_images(tmp_path, nvcc: str) -> None:  # type: ignore[no-untyped-def]
    p = plan([T("sm_80"), T("sm_90a"), T("sm_100f")], keep_newest_ptx=True)
    out = tmp_path / "planned.fatbin"
    run([nvcc, "-fatbin", *p.gencode_flags(), str(source("vadd.cu", VADD)), "-o", str(out)])
    listed = sorted(listing(out))
    # cuobjdump names PTX sm_XY and prints a family-specific cubin without its 'f' (measured).
    assert listed == sorted([("cubin", "sm_80"), ("cubin", "sm_90a"), ("cubin", "sm_100"), ("ptx", "sm_100")])
    assert CACHE.is_dir()


# ---- NVIDIA's loading rules, table written from the documentation --------------------------

BIN_80_PTX80 = ["sm_80", "compute_80"]
CASES = [
    # binary images, device CC, verdict, image, rule
    (["sm_90"], (9, 0), "native", "sm_90", "cubin-same-major"),
    (["sm_80"], (8, 6), "native", "sm_80", "cubin-same-major"),  # 8.0 cubin runs on 8.6
    (["sm_80"], (8, 9), "native", "sm_80", "cubin-same-major"),
    (["sm_86"], (8, 0), "unsupported", None, "no-match"),  # never on a lower minor
    (["sm_80"], (9, 0), "unsupported", None, "no-match"),  # never across majors
    (BIN_80_PTX80, (9, 0), "jit", "compute_80", "ptx-jit"),
    (BIN_80_PTX80, (12, 0), "jit", "compute_80", "ptx-jit"),
    (BIN_80_PTX80, (7, 5), "unsupported", None, "no-match"),  # PTX never on a lower CC
    (["compute_90"], (9, 0), "jit", "compute_90", "ptx-jit"),
    (["compute_90"], (8, 9), "unsupported", None, "no-match"),
    (["sm_90a"], (9, 0), "native", "sm_90a", "cubin-arch-specific"),
    (["sm_100a"], (10, 3), "unsupported", None, "no-match"),  # 'a' is exact
    (["sm_100f"], (10, 3), "native", "sm_100f", "cubin-family"),  # 'f' covers later minors
    (["sm_100f"], (12, 0), "unsupported", None, "no-match"),
    (["compute_90a"], (10, 0), "unsupported", None, "no-match"),  # 'a' PTX is not portable
    (["sm_80", "sm_86", "sm_90"], (8, 9), "native", "sm_86", "cubin-same-major"),  # newest that fits
    (["sm_80", "sm_86", "compute_86"], (8, 6), "native", "sm_86", "cubin-same-major"),  # cubin beats PTX
    (["sm_90", "sm_90a"], (9, 0), "native", "sm_90a", "cubin-arch-specific"),
    (["sm_80", "compute_80", "compute_90"], (9, 0), "jit", "compute_90", "ptx-jit"),  # newest PTX
    ([], (9, 0), "unsupported", None, "no-match"),
]


@pytest.mark.parametrize("images, cc, verdict, image, rule", CASES)
def test_verdict_rules(images: list[str], cc: tuple[int, int], verdict: str, image: str | None, rule: str) -> None:
    v, img, reason, r = cuda_verdict([T(i) for i in images], cc)
    assert (v, img.name if img else None, r) == (verdict, image, rule)
    assert reason and "\n" not in reason


def test_force_ptx_jit_ignores_cubins() -> None:
    v = cuda_verdict([T("sm_90"), T("compute_90")], (9, 0), force_ptx_jit=True)
    assert (v.verdict, v.image.name if v.image else None) == ("jit", "compute_90")
    assert cuda_verdict([T("sm_90")], (9, 0), force_ptx_jit=True).verdict == "unsupported"


def test_unsupported_reason_names_the_fix() -> None:
    older = cuda_verdict([T("sm_80")], (9, 0)).reason
    assert "sm_90" in older and "ptx" in older  # the GPU is newer than every image
    newer = cuda_verdict([T("sm_90"), T("compute_90")], (7, 5)).reason
    assert "sm_75" in newer and "'ptx'" not in newer



def _aotwheel(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_NVCC"))}
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.usefixtures("nvcc")
def test_resolve_and_build_toolchain_ask_the_installed_nvcc(tmp_path: Path) -> None:
    """``aotwheel resolve --toolchain nvcc`` checks the NVIDIA part against the architectures the
    installed nvcc lists (--list-gpu-code); ``build toolchain --json`` reports them; an nvcc that is
    not there is one error line naming the fix."""
    from aotwheel.backends.nvidia.nvcc import find_nvcc

    found = find_nvcc()
    ok = _aotwheel("resolve", "sm_90,ptx,pvc", "--toolchain", "nvcc")
    assert ok.returncode == 0, ok.stderr
    assert "nvcc -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90" in ok.stdout
    listed = run([found.path, "--list-gpu-code"]).stdout.split()
    doc = json.loads(_aotwheel("build", "toolchain", "--devlist", "sm_90", "--json").stdout)
    assert (doc["nvcc"], doc["nvcc_version"]) == (found.path, found.version)
    assert sorted(doc["nvcc_archs"]) == sorted({n for n in listed if n.startswith("sm_") and n[3:].isdigit()})
    bad = _aotwheel("resolve", "sm_90", "--toolchain", "nvcc", "--nvcc", str(tmp_path / "nvcc"))
    assert bad.returncode == 2
    [line] = bad.stderr.splitlines()
    assert f"nvcc from the explicit path ({tmp_path / 'nvcc'}) is not an executable file" in line
