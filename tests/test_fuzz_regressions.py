"""Inputs the fuzzer found (issue 7.2), one test each, built deterministically from the cause
rather than stored as bytes. Open bugs in files this suite does not own are strict xfails naming
the fix (docs/reliability.md): when the fix lands the test passes and the marker must go."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

import _fuzz_util as fu
from aotwheel.errors import InspectError
from aotwheel.formats.region import Region


def _seed(make):  # type: ignore[no-untyped-def]
    try:
        return make().read_bytes()
    except fu.MissingTool as exc:
        pytest.skip(str(exc))


# ---- ELF headers ---------------------------------------------------------------------------------

@pytest.mark.xfail(strict=True, reason=fu.KNOWN[("IndexError", "elf.py")])
def test_elf_magic_with_fewer_than_16_bytes_is_an_inspect_error() -> None:
    """A truncated download of any .so starts like this. inspect() sniffs 20 bytes before it calls
    open_elf, so only direct users of aotwheel.formats.elf reach it (the fuzzer did, 51 times)."""
    from aotwheel.formats.elf import open_elf

    with pytest.raises(InspectError, match=r"short\.so: .*offset 0x0"):
        open_elf(Region(b"\x7fELF\x02\x01\x01", "short.so"))


@pytest.mark.xfail(strict=True, reason=fu.KNOWN[("Timeout", "elf.py")])
def test_zero_sized_program_headers_are_rejected() -> None:
    """e_phoff 0, e_phentsize 0, e_phnum 65534 passes 'the table fits in the file' (0 bytes) and
    pyelftools' own e_phentsize check (skipped when e_phoff is 0), then parses one header 65534
    times: 1.6 s here for a 4.9 kB file, 1.8 s for the 162-byte file the fuzzer found."""
    from aotwheel.formats.elf import open_elf

    data = bytearray(_seed(fu.legacy_seed))
    struct.pack_into("<Q", data, 32, 0)            # e_phoff
    struct.pack_into("<HH", data, 54, 0, 0xFFFE)   # e_phentsize, e_phnum
    with pytest.raises(InspectError, match=r"offset 0x"):
        open_elf(Region(bytes(data), "t.bin"))


# ---- wheels: zipfile's own exceptions must become InspectError ----------------------------------

def _wheel(tmp_path: Path, payload: bytes, compression: int) -> tuple[Path, zipfile.ZipInfo]:
    path = tmp_path / "demo-0.1-cp310-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        zf.writestr("demo/__init__.py", "")
        zf.writestr("demo/_k.abi3.so", payload)
    with zipfile.ZipFile(path) as zf:
        return path, zf.getinfo("demo/_k.abi3.so")


def _data_offset(data: bytes, info: zipfile.ZipInfo) -> int:
    """Offset of the member's stored bytes: after the local header (30 bytes), name and extra."""
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    return info.header_offset + 30 + name_len + extra_len


def _inspect(path: Path) -> None:
    from aotwheel.inspector import inspect

    inspect(path, deep=True)


@pytest.mark.xfail(strict=True, reason=fu.KNOWN[("error", "inspector.py")])
def test_wheel_with_a_corrupt_deflate_stream_is_an_inspect_error(tmp_path: Path) -> None:
    path, info = _wheel(tmp_path, _seed(fu.fat_seed), zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    data[_data_offset(data, info)] = 0x07  # BFINAL=1, BTYPE=11: a reserved block type (RFC 1951)
    path.write_bytes(data)
    with pytest.raises(InspectError, match=r"_k\.abi3\.so"):
        _inspect(path)


@pytest.mark.xfail(strict=True, reason=fu.KNOWN[("NotImplementedError", "inspector.py")])
def test_wheel_with_an_unknown_compression_method_is_an_inspect_error(tmp_path: Path) -> None:
    path, info = _wheel(tmp_path, _seed(fu.fat_seed), zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    struct.pack_into("<H", data, info.header_offset + 8, 97)  # local header: method 97 (WavPack)
    cd = data.rfind(b"PK\x01\x02")
    assert data[cd + 46 : cd + 46 + len(info.filename)] == info.filename.encode()
    struct.pack_into("<H", data, cd + 10, 97)  # central directory entry: the same
    path.write_bytes(data)
    with pytest.raises(InspectError, match=r"_k\.abi3\.so"):
        _inspect(path)


@pytest.mark.xfail(strict=True, reason=fu.KNOWN[("UnicodeDecodeError", "inspector.py")])
def test_wheel_member_whose_local_name_is_not_utf8_is_an_inspect_error(tmp_path: Path) -> None:
    path, info = _wheel(tmp_path, _seed(fu.fat_seed), zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    flags = struct.unpack_from("<H", data, info.header_offset + 6)[0]
    struct.pack_into("<H", data, info.header_offset + 6, flags | 0x800)  # "name is UTF-8"
    name_at = info.header_offset + 30
    data[name_at + 5] = 0xFF  # demo/\xff_k...: not UTF-8
    path.write_bytes(data)
    with pytest.raises(InspectError, match=r"_k\.abi3\.so"):
        _inspect(path)


# ---- the harness itself --------------------------------------------------------------------------

def test_harness_reports_a_non_inspect_error_as_a_finding(tmp_path: Path) -> None:
    """The oracle can fail: a parser that raises ValueError is a finding, InspectError is not."""
    def bad(data: bytes, scratch: Path) -> None:
        raise ValueError("boom") if data else InspectError("x: empty at offset 0x0; rebuild it")

    target = fu.Target("probe", bad, ())
    outcome, finding = fu.classify(target, b"1", tmp_path / "i")
    assert outcome == "finding" and finding is not None and finding.error == "ValueError: boom"
    assert fu.classify(target, b"", tmp_path / "i") == ("rejected", None)


def test_harness_time_guard_interrupts_a_hang(tmp_path: Path) -> None:
    def hang(data: bytes, scratch: Path) -> None:
        while True:
            pass

    outcome, finding = fu.classify(fu.Target("hang", hang, ()), b"x", tmp_path / "i", guard_s=0.2)
    assert outcome == "finding" and finding is not None and finding.error.startswith("Timeout")


def test_mutations_are_reproducible_and_change_the_input() -> None:
    import random

    seed = bytes(range(256)) * 4
    ops_a = fu.random_ops(random.Random(5), len(fu.hot_spots(seed)))
    ops_b = fu.random_ops(random.Random(5), len(fu.hot_spots(seed)))
    assert ops_a == ops_b
    outs = {fu.apply(seed, fu.random_ops(random.Random(i), 64), fu.hot_spots(seed)) for i in range(50)}
    assert len(outs) > 40
