"""Speed by design: the default mode maps the file and touches headers only. A 64 MiB shared object
(16 fat binaries of real ocloc output, each member padded to 2 MiB) is inspected with its pages
evicted first; afterwards only a small part of it may be in the page cache. No timing asserted."""

from __future__ import annotations

import sys

import pytest

from _inspect_util import drop_from_page_cache, ocloc_single, require, resident_bytes, run, spirv
from aotwheel.inspector import inspect

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
