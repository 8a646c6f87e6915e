"""Verdicts as "the first acceptable image": the core's pick over a backend's ordered list.

The orders expected here come from each driver's documented lookup (NVIDIA's CUDA C++ Programming
Guide, "Binary Compatibility"; compute-runtime's ``unpackSingleDeviceBinary<archive>`` filters as
docs/formats.md §10 quotes them; LLVM AMDGPUUsage "Target ID"), not from running aotwheel.
"""

from __future__ import annotations

import itertools
import json

import pytest

from aotwheel.acceptable import Acceptable, Offered, first_acceptable
from aotwheel.results import JIT, NATIVE, UNKNOWN, UNSUPPORTED, Verdict, VerdictKind


def test_the_first_rank_the_binary_has_wins_whatever_the_binary_order() -> None:
    order = [Acceptable("cubin", ("sm_90",), NATIVE, "exact"), Acceptable("cubin", ("sm_80",), NATIVE, "older"),
             Acceptable("ptx", ("compute_80",), JIT, "ptx")]
    images = [Offered("ptx", "compute_80"), Offered("cubin", "sm_80"), Offered("cubin", "sm_90")]
    picked = first_acceptable(order, images)
    assert (picked.rule, picked.image.name, picked.verdict) == ("exact", "sm_90", NATIVE)
    assert first_acceptable(order, images[:1]).verdict == JIT
    nothing = first_acceptable(order, [Offered("cubin", "sm_75")])
    assert (nothing.acceptable, nothing.image, nothing.verdict) == (None, None, UNSUPPORTED)


def test_same_name_other_kind_does_not_match() -> None:
    order = [Acceptable("cubin", ("sm_90",), NATIVE, "exact")]
    assert first_acceptable(order, [Offered("ptx", "sm_90")]).acceptable is None


def test_a_refused_first_match_moves_to_the_next_rank_when_the_driver_validates_only_the_first() -> None:
    # compute-runtime: the first member starting with "64.12.1" is validated; if refused, the next filter runs
    # (a later "64.12.1.0" member is never looked at by that filter).
    order = [Acceptable("member", ("64.12.1",), NATIVE, "major-minor", prefix=True, first_only=True),
             Acceptable("member", ("64.rkl",), NATIVE, "name", prefix=True, first_only=True)]
    images = [Offered("member", "64.12.10.0"), Offered("member", "64.12.1.0"), Offered("member", "64.rkl")]
    picked = first_acceptable(order, images, lambda rank, image: (image.name != "64.12.10.0", image.name))
    assert (picked.rule, picked.image.name) == ("name", "64.rkl")
    assert [(r.rule, i.name, why) for r, i, why in picked.refused] == [("major-minor", "64.12.10.0", "64.12.10.0")]
    # Without first_only every match is validated in the binary's order.
    order = [Acceptable("member", ("64.12.1",), NATIVE, "major-minor", prefix=True)]
    assert first_acceptable(order, images, lambda rank, image: (image.name != "64.12.10.0", "")).image.name == "64.12.1.0"


def test_nvidia_order_for_compute_capability_12_1() -> None:
    """Exact arch (a, f, plain), then older minors of the same major (f, plain; an 'a' cubin runs
    on its own arch only), then PTX newest first; CUDA_FORCE_PTX_JIT drops the cubins."""
    from aotwheel.backends.nvidia.targets import acceptable

    head = [(a.targets[0], a.verdict, a.rule) for a in itertools.islice(acceptable((12, 1)), 8)]
    assert head == [("sm_121a", NATIVE, "cubin-arch-specific"), ("sm_121f", NATIVE, "cubin-family"), ("sm_121", NATIVE, "cubin-same-major"),
                    ("sm_120f", NATIVE, "cubin-family"), ("sm_120", NATIVE, "cubin-same-major"),
                    ("compute_121a", JIT, "ptx-jit"), ("compute_121f", JIT, "ptx-jit"), ("compute_121", JIT, "ptx-jit")]
    names = [a.targets[0] for a in acceptable((12, 1))]
    assert "sm_120a" not in names and "sm_110" not in names and "compute_120a" not in names
    assert names.index("compute_120f") < names.index("compute_120") < names.index("compute_90") < names.index("compute_80")
    assert "compute_110f" not in names  # a family PTX serves its own major only
    assert [a.targets[0] for a in itertools.islice(acceptable((9, 0), force_ptx_jit=True), 3)] == ["compute_90a", "compute_90f", "compute_90"]


def test_intel_order_is_the_archive_filters_then_fallback_products_then_ir() -> None:
    """lnl-m (20.4.4, product "lnl"): a single-device binary, then 64.20.4.4 / 64.20.4 / 64.lnl, then
    since 25.44 the fallback product bmg's filters with the device's IP, then generic_ir."""
    from aotwheel.backends.intel.rules import acceptable

    def rows(release):
        return [(a.kind, a.targets[0], a.rule) for a in acceptable("20.4.4", release)]

    newest = rows(None)
    assert newest == [("image", "", "single-binary"), ("member", "64.20.4.4", "exact-ip"), ("member", "64.20.4", "major-minor"),
                      ("member", "64.lnl", "name"), ("member", "64.20.4.4", "compat:bmg"), ("member", "64.20.4", "compat:bmg"),
                      ("member", "64.bmg", "compat:bmg"), ("ir", "", "ir")]
    assert rows((25, 40)) == [r for r in newest if not r[2].startswith("compat:")]  # no fallback pass before 25.44


def test_amd_order_exact_then_generic_then_spirv() -> None:
    from aotwheel.backends.amd.rules import acceptable
    from aotwheel.backends.amd.targets import parse_target_id

    order = [(a.targets, a.verdict, a.rule) for a in acceptable(parse_target_id("gfx1101"))]
    assert order == [(("gfx1101",), NATIVE, "amd-exact"), (("gfx1101",), UNKNOWN, "amd-feature"),
                     (("gfx11-generic",), NATIVE, "amd-generic"), (("gfx11-generic",), UNKNOWN, "amd-feature"),
                     (("amdgcnspirv",), JIT, "amd-spirv")]


@pytest.mark.parametrize("kind", list(VerdictKind))
def test_verdict_kind_reads_and_serialises_as_its_text(kind: VerdictKind) -> None:
    v = Verdict("pvc", "12.60.7", kind.value, None, "r", "x")  # a plain string is taken too
    assert v.verdict is kind and v.verdict == kind.value and f"{v.verdict}" == str(v.verdict) == kind.value
    assert repr([v.verdict]) == repr([kind.value])  # printed lists of verdicts read as before
    assert json.dumps(v.to_dict()["verdict"]) == f'"{kind.value}"' and v.summary == kind.value


def test_version_is_not_in_the_json() -> None:
    v = Verdict("NVIDIA H100", "cc 9.0", "jit", "compute_80", "r", "ptx-jit", version=(9, 0))
    assert "version" not in v.to_dict() and v.to_dict()["ip"] == "cc 9.0"
