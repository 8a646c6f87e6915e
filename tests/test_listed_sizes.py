"""``.tgtimg`` sizes that cannot be the stored size (issue 14 item 1), on gcc-built shared objects
with real images: a listed size past every segment is read within the section that holds the
image; a zstd frame by its own headers; "corrupt" only when no reading fits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aotwheel.errors import InspectError
from aotwheel.inspector import inspect

from _inspect_util import require, run, spirv


def _so(work: Path, blob: bytes, listed: int, name: str) -> Path:
    require("gcc")
    (work / f"{name}.img").write_bytes(blob)
    asm = work / f"{name}.s"
    asm.write_text("\n".join([
        '.section __CLANG_OFFLOAD_BUNDLE__sycl-spir64,"a"', ".balign 16", "img:", f'.incbin "{work / (name + ".img")}"',
        '.section .tgtimg,"aw"', ".balign 16", f".quad img, {listed}",
        ".text", ".globl anchor", ".type anchor,@function", "anchor: ret"]) + "\n")
    out = work / f"{name}.so"
    run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(out), str(asm)])
    return out


def _section_size(so: Path, name: str) -> int:
    m = re.search(rf"\]\s+{re.escape(name)}\s+\S+\s+[0-9a-f]{{16}}\s+[0-9a-f]+\s+([0-9a-f]+)", run(["readelf", "-SW", str(so)]).stdout)
    assert m
    return int(m[1], 16)


def test_plain_image_listed_past_the_segment_is_cut_at_its_section_with_a_warning(tmp_path):
    spv = spirv(tmp_path).read_bytes()
    so = _so(tmp_path, spv, 1 << 30, "plain")
    (fr,) = inspect(so).files
    (img,) = fr.images
    held = _section_size(so, "__CLANG_OFFLOAD_BUNDLE__sycl-spir64")  # readelf: what the section holds
    assert (img.kind, img.size, img.listed_size) == ("spirv", held, 1 << 30) and held >= len(spv)
    assert fr.ir == ["spirv"]
    assert any("lists 1073741824 bytes" in w and "read as the" in w for w in fr.warnings)


def test_zstd_frame_that_runs_past_its_section_is_corrupt(tmp_path):
    import zstandard

    frame = zstandard.ZstdCompressor(write_content_size=True).compress(spirv(tmp_path).read_bytes())
    so = _so(tmp_path, frame[: len(frame) // 2], 1 << 30, "cut")  # the frame's second half is missing
    with pytest.raises(InspectError, match=r"the zstd frame there does not end inside it at offset 0x[0-9a-f]+") as err:
        inspect(so)
    assert "\n" not in str(err.value) and str(so) in str(err.value)


def test_zstd_frame_listed_by_its_decompressed_size_reports_both(tmp_path):
    import zstandard

    spv = spirv(tmp_path).read_bytes()
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(spv)
    so = _so(tmp_path, frame, 1 << 30, "zst")
    (fr,) = inspect(so).files
    (img,) = fr.images
    assert (img.size, img.listed_size, img.decompressed_size, img.content) == (len(frame), 1 << 30, len(spv), "spirv")
    assert fr.warnings == []


@pytest.mark.parametrize("listed", [1 << 60, (1 << 64) - 1])
@pytest.mark.parametrize("scanner", ["c", "python"])
def test_entry_listing_more_than_any_address_space_is_damaged(tmp_path, listed, scanner):
    """Issue 30 item 10: 2^60 bytes is no size before compression: the entry is damaged, exit 2 with
    one line, from the C scanner and the Python readers alike."""
    import os
    import subprocess
    import sys

    so = _so(tmp_path, spirv(tmp_path).read_bytes(), listed, "huge")
    env = {k: v for k, v in os.environ.items() if k != "AOTWHEEL_NO_FASTSCAN"}
    if scanner == "python":
        env["AOTWHEEL_NO_FASTSCAN"] = "1"
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", str(so)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stdout == "", (proc.stdout, proc.stderr)
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"aotwheel: error: {so}: .tgtimg entry is damaged: it lists {listed} bytes"), line
    with pytest.raises(InspectError, match="entry is damaged"):
        inspect(so)
