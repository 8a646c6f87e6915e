"""The compatibility fallback depends on the driver (issue 14 item 5): compute-runtime's
``validateTargetDevice`` honours ``compatibilityMapping`` since 24.45 (for a single binary and for a
member the device's own filters found), and its fat-binary lookup tries another product's members
(lnl -> bmg) since 25.44 (docs/formats.md §10). Input: the committed icpx-built vllm-xpu-kernels excerpt
(fat binaries with 64.20.1.0 / 64.20.2.0 / 64.bmg members and generic_ir); devices are named,
as no Intel GPU is reachable here (their driver strings are what OpenCL's driver_version says)."""

from __future__ import annotations

import pytest

from aotwheel.backends.intel.backend import BACKEND
from aotwheel.backends.intel.judge import driver_release
from aotwheel.inspector import inspect
from aotwheel.probe import ProbedDevice

from _inspect_util import DATA, decompress_to


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    so = decompress_to(DATA / "vllm-xpu-kernels-0.1.16.2" / "libmhc_kernels_xe_2.so.zst", tmp_path_factory.mktemp("v") / "lib.so")
    (fr,) = inspect(so).files
    return fr


def _lnl(driver: str | None) -> ProbedDevice:  # test double: a named device, no GPU here
    return ProbedDevice(name="Intel(R) Arc(TM) Graphics", backend="opencl", kind="gpu", vendor="intel", ip="20.4.4", catalog="lnl-m", driver=driver)


@pytest.mark.parametrize(("driver", "verdict"), [("25.44.36015.5", "native"), ("26.05.37020.3", "native"), ("25.40.35563.4", "jit"), ("24.45.31740.9", "jit")])
def test_fat_binary_compatibility_fallback_follows_the_driver_release(vllm, driver, verdict):
    v = BACKEND.decide(vllm, _lnl(driver), binary="lib.so")
    assert v.verdict == verdict, v.reason
    assert "25.44" in v.reason


def test_unknown_driver_says_which_releases_run_it_native(vllm):
    v = BACKEND.decide(vllm, _lnl(None), binary="lib.so")
    assert v.verdict == "native"
    assert "compute-runtime 25.44 or newer" in v.reason and "with an older or unknown driver: jit" in v.reason


def test_exact_members_do_not_depend_on_the_driver(vllm):
    bmg = ProbedDevice(name="Arc B580", backend="opencl", kind="gpu", vendor="intel", ip="20.1.0", catalog="bmg-g21", driver="24.10.1")
    v = BACKEND.decide(vllm, bmg, binary="lib.so")
    assert (v.verdict, v.rule) == ("native", "exact-ip") and "25.44" not in v.reason


def test_driver_release_parsing():
    assert driver_release("25.44.36015.5") == (25, 44)
    assert driver_release("1.3.29735") is None and driver_release(None) is None
