"""CUDA selftest (aotwheel.backends.nvidia.selftest) without a GPU: what it loads, and how it fails.

The kernels themselves ran on the H100 (benchmarks/results/cuda_h100.json); here the fat
binaries it would load are checked against the parser's containers and cuobjdump, the absent
driver path runs for real, and a driver that fails is a fake compiled with gcc
(test_fake_gpu_*).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from aotwheel.backends.nvidia.fatbin import MAGIC, parse_fatbin
from aotwheel.backends.nvidia.selftest import fatbinaries, max_error, run_cuda
from aotwheel.formats.region import Region

from _cuda_util import REPO, listing, run

pytestmark = pytest.mark.usefixtures("nvcc")

H100 = REPO / "tests" / "data" / "cuda-h100"

FAKE_DRIVER = r"""
#include <string.h>
int cuInit(unsigned f) { return 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int o) { *d = o; return 0; }
int cuDeviceGetName(char *b, int n, int d) { strncpy(b, "Fake H100", n); return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : 0; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { return 2; }  /* CUDA_ERROR_OUT_OF_MEMORY */
int cuGetErrorName(int rc, const char **s) { *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0; }
int cuMemFree_v2(unsigned long long p) { return 0; }
"""


def test_fatbinaries_are_whole_containers_in_file_order() -> None:
    images = fatbinaries(H100 / "libkern_sm_80-ptx.so")
    assert len(images) == 4  # one per csrc kernel file
    for img in images:
        assert int.from_bytes(img[:4], "little") == MAGIC
        fat = parse_fatbin(Region(img, "image"))  # each stands alone, as cuModuleLoadData needs
        assert [e.target for e in fat.entries] == ["sm_80", "compute_80"]


def test_fatbinaries_of_a_file_without_cuda() -> None:
    import sys

    assert fatbinaries(Path(sys.executable).resolve()) == []


def test_no_driver_is_a_reason_not_an_error() -> None:
    results, why = run_cuda(H100 / "libkern_sm_90.so", library="libcuda-absent-for-aotwheel-tests.so.1")
    assert results == [] and why.startswith("no CUDA driver")


def test_no_cuda_images_is_a_reason(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("not a binary")
    results, why = run_cuda(tmp_path / "x.txt")
    assert results == [] and "no loadable CUDA fat binary" in why
    (tmp_path / "x.so").write_bytes(b"\x7fELF")  # truncated: an InspectError, reported, not raised
    results, why = run_cuda(tmp_path / "x.so")
    assert results == [] and "x.so: ELF file of 4 bytes is shorter than its header at offset 0x0" in why


def test_fake_gpu_driver_failure_is_reported_per_device(tmp_path: Path) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to build the fake driver")
    src = tmp_path / "fake.c"
    src.write_text(FAKE_DRIVER)
    lib = tmp_path / "libfakecuda.so"
    run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)])
    [res], why = run_cuda(H100 / "libkern_sm_90.so", library=str(lib))
    assert why == "" and res.verdict == "native"  # the probe worked: a 9.0 GPU, sm_90 cubins
    assert res.error == "cuDevicePrimaryCtxRetain failed: CUDA_ERROR_OUT_OF_MEMORY" and not res.ok


def test_max_error_catches_unwritten_elements() -> None:
    import numpy as np

    ref = np.array([1.0, -4.0, 2.0])
    assert max_error(np.array([1.0, -4.0, 2.0], np.float32), ref) == 0.0
    assert max_error(np.array([1.0, -4.0, 2.5], np.float32), ref) == pytest.approx(0.125)
    assert math.isinf(max_error(np.array([1.0, np.nan, 2.0], np.float32), ref))


def test_fatbinaries_agree_with_cuobjdump_count() -> None:
    so = H100 / "libkern_ptx.so"
    assert len(listing(so)) == sum(len(parse_fatbin(Region(i, "i")).entries) for i in fatbinaries(so))
