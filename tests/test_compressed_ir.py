"""zstd-compressed SYCL images (icpx ``--offload-compress``) in the default and deep reports.

The default report decompresses only the first block of a compressed image in a ``spir64``
section and reads its head (a fat binary there is damage); deep mode decompresses and reads it all. Native triples
(``spir64_gen``) are always decompressed: their targets are listed from the content. Host
libraries are gcc-built shared objects around real clang/llvm-spirv/ocloc output compressed by
the real ``zstd`` tool.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aotwheel.formats import zstd
from aotwheel.formats.region import Region
from aotwheel.inspector import inspect

from _inspect_util import host_library, ocloc_fat, spirv, zstd_frame


def _host(work: Path, images: list[tuple[str, bytes]]) -> Path:
    """A shared object with each image in ``__CLANG_OFFLOAD_BUNDLE__sycl-<triple>`` and a ``.tgtimg`` row."""
    return host_library(work, [(triple, blob, len(blob)) for triple, blob in images])


def test_compressed_spirv_image_reads_the_same_by_default_and_deep(tmp_path: Path) -> None:
    spv = spirv(tmp_path).read_bytes()
    frame = zstd_frame(tmp_path, spv, "spv", "-19")
    so = _host(tmp_path, [("spir64", frame)])
    (fast,) = inspect(so).files
    (deep,) = inspect(so, deep=True).files
    for fr in (fast, deep):
        (img,) = fr.images
        assert (img.kind, img.compressed, img.content, img.size, img.decompressed_size) == ("zstd", True, "spirv", len(frame), len(spv))
        assert fr.ir == ["spirv"] and fr.native_targets == []
    assert deep.images[0].kernels == 3  # deep decompressed it and counted its OpEntryPoints


def test_a_fat_binary_in_a_spir64_slot_is_named_by_default_and_deep(tmp_path: Path) -> None:
    # A compiler never puts native code in a spir64 section. Neither mode claims native code from
    # it (issue 37: --deep listed its targets) or SPIR-V: the default mode reads the head of the
    # frame's first block, deep all of it, and both name the image as misplaced (aotwheel.slots).
    fat = ocloc_fat(spirv(tmp_path), "tgllp,dg1", tmp_path / "fat").read_bytes()
    so = _host(tmp_path, [("spir64", zstd_frame(tmp_path, fat, "fat"))])
    (fast,) = inspect(so).files
    (deep,) = inspect(so, deep=True).files
    for fr in (fast, deep):
        assert fr.images[0].content == "ar" and fr.native_targets == [] and fr.ir == []
        assert len(fr.warnings) == 1 and "image 0 (spir64 in " in fr.warnings[0] and "misplaced" in fr.warnings[0]


def test_compressed_native_image_is_always_decompressed_for_its_targets(tmp_path: Path) -> None:
    spv_path = spirv(tmp_path)
    fat = ocloc_fat(spv_path, "pvc,tgllp", tmp_path / "fat").read_bytes()
    so = _host(tmp_path, [("spir64_gen", zstd_frame(tmp_path, fat, "gen")), ("spir64", zstd_frame(tmp_path, spv_path.read_bytes(), "ir"))])
    (fr,) = inspect(so).files
    assert [i.content for i in fr.images] == ["ar", "spirv"]
    assert sorted(t.name for t in fr.native_targets) == ["pvc", "tgllp"]
    assert fr.ir == ["spirv"]


@pytest.mark.parametrize("opts", [(), ("--no-check",), ("--no-content-size",), ("-19", "--long=27"), ("--ultra", "-22", "-B4096")])
def test_frame_facts_agree_with_the_region_readers_on_real_zstd_frames(tmp_path: Path, opts: tuple[str, ...]) -> None:
    data = spirv(tmp_path).read_bytes() * 40  # > one 128 kB block with -B4096: several blocks
    frame = zstd_frame(tmp_path, data, "f", *opts)
    padded = b"\0" * 7 + frame + b"\xff" * 9  # read where it sits, not past its end
    region = Region(frame, "frame")
    expected = (zstd.frame_size(region), zstd.content_size(region))
    assert zstd.frame_facts(padded, 7, len(frame) + 9) == expected
    assert expected[0] == len(frame) and expected[1] == (None if "--no-content-size" in opts else len(data))
    assert zstd.frame_facts(padded, 7, len(frame) - 1) is None  # one byte short: no reading
