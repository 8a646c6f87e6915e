"""``inspect --deep`` checks that each zebin is well formed as the driver's zebin decoder reads it
(issue 37 item 3): sections inside the file, at most one ``.ze_info`` (SHT_ZEBIN_ZEINFO), its YAML
readable with a top-level ``version`` and ``kernels``, and a ``.text.<kernel>`` section for each
kernel it names. The zebins are the real ocloc's (tests/_fuzz_util.py builds them), damaged here
with pyelftools' offsets; the default mode (notes only) still reads each of them."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aotwheel.backends.intel.zeinfo import _ze_info_outline, validate_zebin
from aotwheel.errors import InspectError
from aotwheel.formats.region import Region
from aotwheel.inspector import inspect

import _fuzz_util as fu

PYTHONPATH = os.pathsep.join([str(fu.REPO / "python"), os.environ.get("PYTHONPATH", "")])


@pytest.fixture(scope="module")
def zebin() -> bytes:
    try:
        return fu.zebin_seed().read_bytes()
    except fu.MissingTool as exc:
        pytest.skip(str(exc))


def _sections(data: bytes) -> dict[str, tuple[int, int, int]]:
    """name -> (file offset of its section header, sh_offset, sh_size), by pyelftools."""
    import io

    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    return {s.name: (elf["e_shoff"] + i * elf["e_shentsize"], s["sh_offset"], s["sh_size"]) for i, s in enumerate(elf.iter_sections())}


def _ze_info(data: bytes) -> tuple[int, bytes]:
    _hdr, off, size = _sections(data)[".ze_info"]
    return off, data[off : off + size]


def _damage(data: bytes, how: str) -> bytes:
    out = bytearray(data)
    secs = _sections(data)
    off, text = _ze_info(data)
    if how == "kernel-without-text":  # .text.add renamed .text.ad_: its kernel has no code
        hdr = secs[".text.add"][0]
        (name,) = struct.unpack_from("<I", out, hdr)
        strtab = secs[".strtab"][1]
        at = strtab + name + len(".text.ad")
        assert out[at : at + 1] == b"d"
        out[at] = ord("_")
    elif how == "two-ze-info":  # the .spv section's type made SHT_ZEBIN_ZEINFO
        struct.pack_into("<I", out, secs[".spv"][0] + 4, 0xFF000011)
    elif how == "tab-indent":
        at = text.index(b"  - name:")
        out[off + at : off + at + 2] = b"\t "
    elif how == "bad-indent":  # a key indented under a value
        at = text.index(b"\n", text.index(b"version:")) + 1
        out[off + at : off + at + 1] = b" "
        assert out[off + at + 1 : off + at + 8] == b"ernels:"
    elif how == "no-version":
        at = text.index(b"version:")
        out[off + at : off + at + 1] = b"V"
    elif how == "not-yaml":
        at = text.index(b"kernels:")
        out[off + at + 7] = ord("=")
    return bytes(out)


CASES = ["kernel-without-text", "two-ze-info", "tab-indent", "bad-indent", "no-version", "not-yaml"]


def test_real_zebins_are_well_formed(zebin: bytes) -> None:
    validate_zebin(Region(zebin, "pvc.zebin"))
    for name in ("ocloc-22.43/pvc.zebin", "ocloc-22.43/acm-g10.zebin", "ocloc-22.43/acm-g10.fp64-poisoned.zebin"):
        validate_zebin(Region((fu.REPO / "tests" / "data" / name).read_bytes(), name))
    top, kernels, problem = _ze_info_outline(_ze_info(zebin)[1])
    assert problem is None and {"version", "kernels"} <= top and kernels == ["add", "scale"]  # fu.KERNEL's two kernels


def _committed_binaries() -> list[Path]:
    data = fu.REPO / "tests" / "data"
    return sorted(p for p in (*data.glob("ocloc-*/*.ar"), *data.glob("ocloc-*/*.zebin"), *data.glob("ocloc-*/*.bin")))


@pytest.mark.parametrize("path", _committed_binaries(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_ocloc_and_icpx_zebins_pass_deep(path: Path, tmp_path: Path) -> None:
    """Both ocloc releases' output (22.43 and 26.27, fat binaries and single images, committed in
    tests/data) and icpx's (vLLM's libmhc_kernels: 20 zebins with kernels) are well formed."""
    for fr in inspect(path, deep=True).files:
        assert fr.native_targets and not any("damaged" in w or ".ze_info" in w for w in fr.warnings), fr.warnings


def test_icpx_zebins_with_kernels_pass_deep(tmp_path: Path) -> None:
    import zstandard

    packed = fu.REPO / "tests" / "data" / "vllm-xpu-kernels-0.1.16.2" / "libmhc_kernels_xe_2.so.zst"
    lib = tmp_path / "libmhc_kernels_xe_2.so"
    lib.write_bytes(zstandard.ZstdDecompressor().decompress(packed.read_bytes(), max_output_size=1 << 30))
    (fr,) = inspect(lib, deep=True).files
    assert len(fr.native_targets) == 20 and not any(" is damaged: " in w for w in fr.warnings), fr.warnings


@pytest.mark.parametrize("how", CASES)
def test_a_malformed_zebin_is_one_line_in_deep_only(how: str, zebin: bytes, tmp_path: Path) -> None:
    path = tmp_path / f"{how}.zebin"
    path.write_bytes(_damage(zebin, how))
    (fr,) = inspect(path).files  # the default mode reads the notes only: the target is still listed
    assert len(fr.native_targets) == 1 and not fr.warnings
    with pytest.raises(InspectError) as err:
        inspect(path, deep=True)
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{path}: "), str(err.value)
    assert ".ze_info" in str(err.value) or ".text.add" in str(err.value), str(err.value)
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", "--deep", str(path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": PYTHONPATH}, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_malformed_zebin_member_of_a_fat_binary_is_a_damaged_slot_in_deep(zebin: bytes, tmp_path: Path) -> None:
    """In an ocloc fat binary embedded in a library, a malformed zebin member names its image in
    --deep (no target from it) and leaves the default report alone."""
    import io
    import re

    from elftools.elf.elffile import ELFFile

    from _inspect_util import host_library, zstd_frame

    fat = fu.fat_zebin_seed().read_bytes()
    # the first zebin member (an ELF of e_machine 205, EM_INTELGT): its .ze_info loses 'version'
    member = next(m.start() for m in re.finditer(rb"\x7fELF", fat) if fat[m.start() + 18 : m.start() + 20] == b"\xcd\x00")
    sec = ELFFile(io.BytesIO(fat[member:])).get_section_by_name(".ze_info")
    at = member + sec["sh_offset"] + sec.data().index(b"version:")
    bad = bytearray(fat)
    bad[at] = ord("V")
    frame = zstd_frame(tmp_path, bytes(bad), "fat")
    so = host_library(tmp_path, [("spir64_gen", frame, len(frame))])
    (fast,) = inspect(so).files
    assert fast.native_targets and not fast.warnings
    (deep,) = inspect(so, deep=True).files
    (w,) = [w for w in deep.warnings if " is damaged: " in w]
    assert "(spir64_gen in " in w and "'version'" in w and deep.native_targets == [], deep.warnings


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from([b"", b" ", b"  ", b"- ", b"- - ", b"\t", b"key:", b"name:", b" value", b"'q:x'", b"#c", b"---",
                                 b"kernels:", b"version: '1.0'", b"[1, 2]", b"\r", b"\x00", b"\xff"]), max_size=40)
       .map(lambda parts: b"".join(parts).replace(b"#c", b"\n")))
def test_the_ze_info_outline_answers_any_text(text: bytes) -> None:
    """The line parser never raises and never nests deeper than its bound, whatever the text."""
    top, kernels, problem = _ze_info_outline(text)
    assert problem is None or problem.startswith("line ")
    assert isinstance(top, set) and all(isinstance(k, str) for k in kernels)


def test_nesting_is_bounded() -> None:
    deep = b"".join(b" " * i + b"k:\n" for i in range(200))
    assert "nested more than" in (_ze_info_outline(b"version: '1'\nkernels:\n" + deep)[2] or "")
