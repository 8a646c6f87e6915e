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
