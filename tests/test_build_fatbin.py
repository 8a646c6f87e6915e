"""The fat-binary writer, the generic_ir wrapper and SPIR-V entry points against real ocloc,
clang-15/llvm-spirv-15 and GNU ar outputs."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from aotwheel.backends.intel.buildsteps.fatbin import Member, build_fatbin, ir_options, spirv_ir_elf, write_ar
from aotwheel.backends.intel.buildsteps.spirv import entry_points
from aotwheel.errors import AotwheelError

from _build_util import REPO, ar_members, compile_spirv, ocloc_ip, require, run
from conftest import CLANG, LLVM_SPIRV, ocloc_output

KERNELS = REPO / "csrc" / "kernels"


@pytest.fixture(scope="module")
def spv(tmp_path_factory) -> Path:
    require(CLANG, LLVM_SPIRV)
    out = tmp_path_factory.mktemp("spv") / "elementwise.spv"
    compile_spirv(KERNELS / "elementwise.cl", out)
    return out


def _ocloc_single(spv: Path, device: str, out_dir: Path) -> bytes:
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", device,
         "-out_dir", str(out_dir), "-output_no_suffix", "-exclude_ir"])
    return ocloc_output(out_dir, device).read_bytes()


def _ir(options: str = "") -> str | None:
    """generic_ir's layout for the installed ocloc (23.30+ adds a BuildOptions section)."""
    from aotwheel.backends.intel.ocloc import find_ocloc

    return ir_options(find_ocloc().version, options)


def _ocloc_fat(spv: Path, devices: str, cwd: Path, *extra: str) -> bytes:
    # A multi-device compile ignores -out_dir; it writes the ar named by -output into the cwd.
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", devices, "-output", "fat", *extra], cwd=cwd)
    return (cwd / "fat").read_bytes()


def test_fatbin_equals_ocloc_multi_device_output_byte_for_byte(spv, tmp_path):
    require("ocloc")
    natives = [(ocloc_ip(d), _ocloc_single(spv, d, tmp_path)) for d in ("pvc", "acm-g10")]
    ours = build_fatbin(natives, spv.read_bytes(), _ir())
    theirs = _ocloc_fat(spv, "pvc,acm-g10", tmp_path)
    assert ours == theirs


def test_fatbin_without_jit_equals_ocloc_exclude_ir(spv, tmp_path):
    require("ocloc")
    natives = [(ocloc_ip(d), _ocloc_single(spv, d, tmp_path)) for d in ("pvc", "acm-g11", "tgllp")]
    ours = build_fatbin(natives, None)
    assert ours == _ocloc_fat(spv, "pvc,acm-g11,tgllp", tmp_path, "-exclude_ir")


def test_ar_member_names_and_order_as_gnu_ar_lists_them(spv, tmp_path):
    require("ocloc", "ar")
    natives = [(ocloc_ip(d), _ocloc_single(spv, d, tmp_path)) for d in ("acm-g10", "pvc")]
    path = tmp_path / "fat.ar"
    path.write_bytes(build_fatbin(natives, spv.read_bytes(), _ir()))
    assert ar_members(path) == ["pad_0", "64.12.55.8", "pad_1", "64.12.60.7", "pad_2", "generic_ir"]


def test_member_data_is_8_byte_aligned_and_round_trips_through_ar(tmp_path):
    require("ar")
    members = [Member("a", b"x"), Member("bbb", b"yz" * 7 + b"!"), Member("c", bytes(range(256)))]
    blob = write_ar(members)
    path = tmp_path / "m.ar"
    path.write_bytes(blob)
    names = [n for n in ar_members(path) if not n.startswith("pad_")]
    assert names == ["a", "bbb", "c"]
    for m in members:
        assert run(["ar", "p", str(path), m.name], text=False).stdout == m.data
        # Each member's data starts on an 8-byte boundary (the driver maps them in place).
        hdr = blob.index((m.name + "/").ljust(16).encode())
        assert (hdr + 60) % 8 == 0


def test_ar_rejects_names_that_do_not_fit_the_header():
    with pytest.raises(ValueError):
        write_ar([Member("x" * 16, b"")])
    with pytest.raises(ValueError):
        write_ar([Member("a/b", b"")])


def test_generic_ir_matches_ocloc_and_readelf(spv, tmp_path):
    require("ocloc", "ar", "readelf")
    (tmp_path / "fatdir").mkdir()
    fat = _ocloc_fat(spv, "pvc,acm-g10", tmp_path / "fatdir")
    theirs = run(["ar", "p", str(tmp_path / "fatdir" / "fat"), "generic_ir"], text=False).stdout
    ours = spirv_ir_elf(spv.read_bytes(), _ir())
    assert ours == theirs and fat
    (tmp_path / "ir.elf").write_bytes(ours)
    hdr = run(["readelf", "-h", "-S", "-W", str(tmp_path / "ir.elf")]).stdout
    assert re.search(r"Type:\s+.*ff02", hdr)
    m = re.search(r"SPIRV Object\s+\S+\s+\S+\s+(\S+)\s+(\S+)", hdr)
    assert m and int(m.group(2), 16) == spv.stat().st_size
    off = int(m.group(1), 16)
    assert ours[off : off + spv.stat().st_size] == spv.read_bytes()


def test_generic_ir_keeps_the_build_options_where_this_ocloc_does(spv, tmp_path):
    """ocloc 23.30 and later keep the -options text in generic_ir (a BuildOptions section; an
    empty one without options); older ones have no such section. Either way ours equals ocloc's."""
    require("ocloc", "ar")
    options = "-cl-fast-relaxed-math -cl-intel-greater-than-4GB-buffer-required"
    (tmp_path / "fatdir").mkdir()
    _ocloc_fat(spv, "pvc,acm-g10", tmp_path / "fatdir", "-options", options)
    theirs = run(["ar", "p", str(tmp_path / "fatdir" / "fat"), "generic_ir"], text=False).stdout
    assert spirv_ir_elf(spv.read_bytes(), _ir(options)) == theirs
    assert (b"BuildOptions" in theirs) == (_ir(options) is not None)
    assert (options.encode() in theirs) == (_ir(options) is not None)


def test_entry_points_match_llvm_spirv_text(spv, tmp_path):
    text = tmp_path / "k.spt"
    run([LLVM_SPIRV, "-to-text", str(spv), "-o", str(text)])
    # Text form: "EntryPoint 6 <id> "name" ..." per kernel.
    expected = re.findall(r'^\d+ EntryPoint \d+ \d+ "([^"]+)"', text.read_text(), re.M)
    assert expected == ["vector_add", "saxpy"]
    assert entry_points(spv.read_bytes()) == expected


def test_entry_points_reads_big_endian_modules(spv):
    data = spv.read_bytes()
    swapped = b"".join(data[i : i + 4][::-1] for i in range(0, len(data), 4))
    assert entry_points(swapped) == ["vector_add", "saxpy"]


@pytest.mark.parametrize("cut", [0, 4, 19, 22])
def test_entry_points_rejects_truncated_input(spv, cut):
    with pytest.raises(AotwheelError):
        entry_points(spv.read_bytes()[:cut])


def test_entry_points_rejects_instruction_running_past_the_end(spv):
    data = bytearray(spv.read_bytes()[:24])
    struct.pack_into("<I", data, 20, (0xFFFF << 16) | 15)  # OpEntryPoint claiming 65535 words
    with pytest.raises(AotwheelError, match="truncated"):
        entry_points(bytes(data))
