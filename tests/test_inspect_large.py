"""Speed by design: the default mode maps the file and touches headers only. A 64 MiB shared object
(16 fat binaries of real ocloc output, each member padded to 2 MiB) is inspected with its pages
evicted first; afterwards only a small part of it may be in the page cache. No timing asserted."""

from __future__ import annotations

import sys

import pytest

from aotwheel.inspector import inspect

from _inspect_util import drop_from_page_cache, ocloc_single, require, resident_bytes, run, spirv

pytestmark = pytest.mark.usefixtures("large_binaries")

COPIES = 16
PAD = 2 << 20


@pytest.fixture(scope="module")
def big_so(tmp_path_factory):
    if not sys.platform.startswith("linux"):
        pytest.skip("page-cache residency (mincore/fadvise) is measured on Linux only")
    require("ar", "gcc")
    d = tmp_path_factory.mktemp("large")
    spv = spirv(d)
    members = []
    for device, ip in (("pvc", "12.60.7"), ("acm-g10", "12.55.8")):
        binary, _ = ocloc_single(spv, device, d)
        member = d / f"64.{ip}"
        member.write_bytes(binary.read_bytes() + bytes(PAD))  # sections sit in the first pages
        members.append(member.name)
    run(["ar", "rcS", "fat.ar", *members], cwd=d)
    lines = ['.section __CLANG_OFFLOAD_BUNDLE__sycl-spir64_gen,"a"']
    for i in range(COPIES):
        lines += [".balign 16", f"i{i}:", f'.incbin "{d / "fat.ar"}"', f"e{i}:"]
    lines += ['.section .tgtimg,"aw"'] + [f".quad i{i}, e{i} - i{i}" for i in range(COPIES)]
    (d / "big.s").write_text("\n".join(lines) + "\n")
    run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(d / "big.so"), str(d / "big.s")])
    return d / "big.so"


def test_default_mode_reads_a_small_fraction_of_a_large_binary(big_so):
    size = big_so.stat().st_size
    assert size > COPIES * 2 * PAD
    drop_from_page_cache(big_so)
    before = resident_bytes(big_so)
    if before > size // 20:
        pytest.skip("this filesystem keeps the file cached (tmpfs?); residency cannot be measured")
    (fr,) = inspect(big_so).files
    assert len(fr.images) == COPIES
    assert {(t.name, t.ip) for t in fr.native_targets} == {("pvc", "12.60.7"), ("acm-g10", "12.55.8")}
    assert len(fr.native_targets) == 2 * COPIES
    touched = resident_bytes(big_so)
    assert touched < size // 20, f"{touched} of {size} bytes read"


def test_deep_mode_does_read_every_image(big_so):
    drop_from_page_cache(big_so)
    if resident_bytes(big_so) > big_so.stat().st_size // 20:
        pytest.skip("this filesystem keeps the file cached (tmpfs?); residency cannot be measured")
    (fr,) = inspect(big_so, deep=True).files
    assert all(img.sha256 for img in fr.images)
    assert resident_bytes(big_so) > sum(img.size for img in fr.images) * 9 // 10


@pytest.mark.parametrize("python_only", [False, True], ids=["c-scanner", "python-readers"])
def test_densely_packed_images_are_read_ahead_in_one_sweep(tmp_path, monkeypatch, python_only):
    """Small images packed together (onemkl's libraries hold thousands): with an empty page cache
    the default mode asks the kernel to read each dense run ahead (one sweep, not a synchronous
    read per image head), so afterwards the run is in the page cache although only 1/4 of its
    pages hold a head (300 images of 16 kB: the heads alone leave ~1.3 of 4.9 MB resident,
    checked with the advice taken out). The table is larger than DESCRIPTORS_ALWAYS_UP_TO, as in
    mkl, so the C scanner takes it in table_leaves."""
    from _inspect_util import host_library

    if not sys.platform.startswith("linux"):
        pytest.skip("page-cache residency (mincore/fadvise) is measured on Linux only")
    monkeypatch.setenv("AOTWHEEL_NO_FASTSCAN", "1" if python_only else "0")
    spv_head = bytes.fromhex("03022307") + bytes((16 << 10) - 4)
    images = [("spir64", spv_head[:-4] + i.to_bytes(4, "little"), len(spv_head)) for i in range(300)]
    so = host_library(tmp_path, images)
    drop_from_page_cache(so)
    if resident_bytes(so) > so.stat().st_size // 20:
        pytest.skip("this filesystem keeps the file cached (tmpfs?); residency cannot be measured")
    (fr,) = inspect(so).files
    assert len(fr.images) == 300 and {i.kind for i in fr.images} == {"spirv"}
    span = fr.images[-1].offset + fr.images[-1].size - fr.images[0].offset
    assert resident_bytes(so) > span * 9 // 10
