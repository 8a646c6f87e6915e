"""Inputs the fuzzer found (issue 7.2), one test each, built deterministically from the cause
rather than stored as bytes; each failed before its fix (docs/reliability.md lists them). A new
finding in a file this suite does not own goes in as a strict xfail naming the fix, with an entry
in _fuzz_util.KNOWN, until the fix lands."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from aotwheel.errors import InspectError
from aotwheel.formats.region import Region

import _fuzz_util as fu

pytestmark = pytest.mark.usefixtures("fuzzing")


def _seed(make):  # type: ignore[no-untyped-def]
    try:
        return make().read_bytes()
    except fu.MissingTool as exc:
        pytest.skip(str(exc))


# ---- ELF headers ---------------------------------------------------------------------------------

def test_elf_magic_with_fewer_than_16_bytes_is_an_inspect_error() -> None:
    """A truncated download of any .so starts like this. inspect() sniffs 20 bytes before it calls
    open_elf, so only direct users of aotwheel.formats.elf reached it (the fuzzer did, 140 times)."""
    from aotwheel.formats.elf import open_elf

    with pytest.raises(InspectError, match=r"short\.so: .*offset 0x0"):
        open_elf(Region(b"\x7fELF\x02\x01\x01", "short.so"))


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
    """Inspect and raise a member's error: since issue 14 a wheel's report goes on past an
    unreadable member and lists it with its one-line error (``FileReport.error``) instead of
    raising; that error must still be the one-line InspectError text these tests check."""
    from aotwheel.inspector import inspect

    report = inspect(path, deep=True)
    for bad in report.errors:
        raise InspectError(bad.error)


def test_wheel_with_a_corrupt_deflate_stream_is_an_inspect_error(tmp_path: Path) -> None:
    path, info = _wheel(tmp_path, _seed(fu.fat_seed), zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    data[_data_offset(data, info)] = 0x07  # BFINAL=1, BTYPE=11: a reserved block type (RFC 1951)
    path.write_bytes(data)
    with pytest.raises(InspectError, match=r"_k\.abi3\.so"):
        _inspect(path)


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


def _patch_central(data: bytearray, info: zipfile.ZipInfo, offset: int, fmt: str, value: int) -> None:
    """Set a field of the member's central-directory entry (``offset`` from its 'PK\\1\\2')."""
    cd = data.find(b"PK\x01\x02" + data[info.header_offset + 4 : info.header_offset + 6])
    while data[cd + 46 : cd + 46 + len(info.filename)] != info.filename.encode():
        cd = data.find(b"PK\x01\x02", cd + 4)
    struct.pack_into(fmt, data, cd + offset, value)


def test_wheel_member_marked_encrypted_is_an_inspect_error(tmp_path: Path) -> None:
    path, info = _wheel(tmp_path, _seed(fu.fat_seed), zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    _patch_central(data, info, 8, "<H", 0x1)  # general purpose flag bit 0: encrypted
    struct.pack_into("<H", data, info.header_offset + 6, 0x1)
    path.write_bytes(data)
    with pytest.raises(InspectError, match=r"_k\.abi3\.so: cannot extract"):  # zipfile: RuntimeError
        _inspect(path)


def test_wheel_needing_a_future_zip_version_is_an_inspect_error(tmp_path: Path) -> None:
    path, info = _wheel(tmp_path, _seed(fu.fat_seed), zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    _patch_central(data, info, 6, "<H", 128)  # "version needed to extract" 12.8
    path.write_bytes(data)
    with pytest.raises(InspectError, match=r"not a readable wheel"):  # zipfile: NotImplementedError
        _inspect(path)


def test_wheel_central_name_flagged_utf8_but_not_is_an_inspect_error(tmp_path: Path) -> None:
    path, info = _wheel(tmp_path, _seed(fu.fat_seed), zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    _patch_central(data, info, 8, "<H", 0x800)
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 46 + 5] = 0xFF
    path.write_bytes(data)
    with pytest.raises(InspectError, match=r"not a readable wheel"):  # zipfile: UnicodeDecodeError
        _inspect(path)


def test_wheel_member_with_an_empty_name_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "demo-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("demo/_k.abi3.so", _seed(fu.fat_seed))
        zf.writestr("x", b"not a binary")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("x")
    _patch_central(data, info, 28, "<H", 0)  # file name length 0 (zipfile: is_dir() IndexError)
    cd = data.rfind(b"PK\x01\x02")
    del data[cd + 46 : cd + 47]
    eocd = data.rfind(b"PK\x05\x06")
    struct.pack_into("<I", data, eocd + 12, struct.unpack_from("<I", data, eocd + 12)[0] - 1)  # central dir size
    path.write_bytes(data)
    from aotwheel.inspector import inspect

    report = inspect(path)
    assert [f.path.rsplit("!", 1)[1] for f in report.files] == ["demo/_k.abi3.so"]


def test_wheel_member_name_with_a_newline_gives_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "demo-0.1-py3-none-any.whl"
    good = _seed(fu.fat_seed)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("demo/evil\nname.so", good[:200])  # an ar cut short: rejected, naming the member
    with pytest.raises(InspectError) as err:
        _inspect(path)
    assert "\n" not in str(err.value) and "evil\\nname.so" in str(err.value)


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


def test_zstd_bomb_is_refused_by_ratio_before_the_absolute_cap() -> None:
    """A few kB that expand to 96 MiB of zeros: far beyond 1024x, refused under the 2 GiB cap."""
    import zstandard

    from aotwheel.errors import InspectError
    from aotwheel.formats import zstd
    from aotwheel.formats.region import Region

    bomb = zstandard.ZstdCompressor(level=3).compress(bytes(96 << 20))
    assert len(bomb) * zstd.MAX_RATIO < (96 << 20)
    with pytest.raises(InspectError, match="cap"):
        zstd.decompress(Region(bomb, "bomb.zst"))
    # An ordinary image still decompresses.
    small = zstandard.ZstdCompressor().compress(b"device code " * 1000)
    assert zstd.decompress(Region(small, "ok.zst")) == b"device code " * 1000
