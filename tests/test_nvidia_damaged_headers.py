"""An NVIDIA fat binary entry whose header declares more decompressed bytes than any compressor
makes of its payload is damage without --deep (issue 37 item 3): `inspect` printed
"14,123,288,431,123 decompressed" and `check` went on. The binary is tests/data/cuda-h100's nvcc
13 build (sm_80 + zstd-compressed PTX); the header is flipped at the offsets docs/formats.md §5
gives (entry header + 56: u64 decompressed size)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import PYTHONPATH

DATA = Path(__file__).parent / "data" / "cuda-h100" / "libkern_sm_80-ptx.so"
PTX_ENTRY = 13248  # file offset of the first compressed (PTX) entry header: `cuobjdump -lptx` lists it first


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": PYTHONPATH})


@pytest.mark.parametrize("declared", [14123288431123, 1 << 40, 2**64 - 1])
def test_an_impossible_decompressed_size_is_damage_without_deep(declared, tmp_path):
    data = bytearray(DATA.read_bytes())
    kind, _, hsize, size, csize = struct.unpack_from("<HHIQI", data, PTX_ENTRY)
    assert kind == 1 and 0 < csize <= size  # a PTX entry, compressed (independent of aotwheel's reader)
    struct.pack_into("<Q", data, PTX_ENTRY + 56, declared)
    bad = tmp_path / "flipped.so"
    bad.write_bytes(bytes(data))
    for args in (("inspect", str(bad)), ("inspect", "--deep", str(bad)), ("check", "--device", "sm_80", str(bad))):
        proc = _cli(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "damaged" in lines[0] and str(declared) in lines[0], proc.stdout + proc.stderr
        assert f"{declared:,}" not in proc.stdout
    assert _cli("inspect", str(DATA)).returncode == 0


def _entry(data: bytes, at: int) -> tuple[tuple[int, ...], bytes]:
    """An entry header (the 14 fields docs/formats.md §5 lists) and its payload, read with struct."""
    fields = struct.unpack_from("<HHIQIIHHIIIQQQ", data, at)
    return fields, data[at + fields[2] : at + fields[2] + fields[3]]


def _lz4_fatbin(cubin: bytes, arch: int) -> bytes:
    """A raw fat binary (one container, one LZ4-compressed cubin entry, flag 0x2000), made here."""
    import lz4.block

    packed = lz4.block.compress(cubin, store_size=False)
    size = len(packed) + (-len(packed)) % 8
    header = struct.pack("<HHIQIIHHIIIQQQ", 2, 0x101, 64, size, len(packed), 0, 0, 8, arch, 0, 0, 0x2000 | 0x11, 0, len(cubin))
    body = header + packed + bytes(size - len(packed))
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_deep_checks_what_an_lz4_cubin_decoded_to(tmp_path):
    """LZ4 blocks carry no checksum: a damaged stream can decode, to bytes that are no cubin (only
    the ELF magic was checked). Here the stream decodes whole to a cubin whose section header
    table is garbage (what a scrambled stream decodes to past the scrambled bytes), or whose ELF
    flags name another arch than the entry's."""
    pytest.importorskip("lz4")
    data = DATA.read_bytes()
    first = 8216  # the first entry: an uncompressed sm_80 cubin (`cuobjdump -lelf` lists it first)
    (kind, *_rest), cubin = _entry(data, first)
    assert kind == 2 and cubin[:4] == b"\x7fELF"
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    garbled = bytearray(cubin)
    garbled[shoff : shoff + 128] = bytes((b * 7 + 13) & 0xFF for b in garbled[shoff : shoff + 128])
    cases = {"good": (cubin, 80), "garbled": (bytes(garbled), 80), "other-arch": (cubin, 90)}
    for name, (payload, arch) in cases.items():
        path = tmp_path / f"{name}.fatbin"
        path.write_bytes(_lz4_fatbin(payload, arch))
        proc = _cli("inspect", "--deep", str(path))
        if name == "good":
            assert proc.returncode == 0 and "sm_80" in proc.stdout, proc.stdout + proc.stderr
            continue
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "not a well-formed cubin" in lines[0], proc.stdout + proc.stderr
