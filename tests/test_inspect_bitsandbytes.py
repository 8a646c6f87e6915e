"""bitsandbytes 0.50.2 (pinned download, 43 MB): one wheel with CPU, CUDA, ROCm and XPU libraries.

Its icpx-built XPU libraries list each zstd-compressed image with its size *before* compression,
which runs past the loaded segment; its ROCm libraries keep AMD code in ``.hip_fatbin`` as
compressed clang offload bundles (``CCOB`` v2 and v3). Expected values come from independent
readings: readelf (section headers, ``.tgtimg`` bytes, relocations, notes), the zstd CLI, ``ar``,
clang-offload-bundler and GNU readelf on the AMD code objects -- never from aotwheel itself.
"""

from __future__ import annotations

import re
import struct
import subprocess
import zipfile
from pathlib import Path

import pytest

from _inspect_util import fetch, readelf_notes, require, run
from aotwheel.inspector import image_bytes, inspect

WHEEL = ("bitsandbytes", "0.50.2", "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
         "55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283")
XPU_LIBS = ("libbitsandbytes_xpu2025.so", "libbitsandbytes_xpu2026.so")


@pytest.fixture(scope="module")
def bnb(tmp_path_factory) -> Path:
    whl = fetch(*WHEEL)
    out = tmp_path_factory.mktemp("bnb")
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            if name.startswith("bitsandbytes/lib") and name.endswith(".so"):
                z.extract(name, out)
    return out / "bitsandbytes"


def _sections(path: Path) -> dict[str, tuple[int, int, int]]:
    """name -> (address, file offset, size), per ``readelf -SW``."""
    out = {}
    for line in run(["readelf", "-SW", str(path)]).stdout.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]{16})\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            out[m[1]] = (int(m[2], 16), int(m[3], 16), int(m[4], 16))
    return out


def _load_segments(path: Path) -> list[tuple[int, int, int]]:
    """(vaddr, offset, filesz) of each PT_LOAD, per ``readelf -lW``."""
    segs = []
    for line in run(["readelf", "-lW", str(path)]).stdout.splitlines():
        m = re.match(r"\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", line)
        if m:
            segs.append((int(m[2], 16), int(m[1], 16), int(m[3], 16)))
    return segs


def _tgtimg_entries(path: Path) -> list[tuple[int, int]]:
    """(address, listed size) of each ``.tgtimg`` entry, from ``readelf -x`` (GNU ld stores the
    address as well as the RELATIVE relocation that fills it)."""
    text = run(["readelf", "-x", ".tgtimg", str(path)]).stdout
    raw = bytes.fromhex("".join("".join(line.split()[1:5]) for line in text.splitlines() if line.strip().startswith("0x")))
    return list(struct.iter_unpack("<QQ", raw))


def _zstd_d(data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["zstd", "-d", "-c"], input=data, capture_output=True)


@pytest.mark.parametrize("lib", XPU_LIBS)
def test_xpu_listed_sizes_past_the_segment_are_read_by_the_zstd_frame(bnb, lib):
    require("readelf", "zstd")
    so = bnb / lib
    entries = _tgtimg_entries(so)
    segs = _load_segments(so)
    # The reason the old reader gave up: a listed size that no PT_LOAD can hold.
    assert any(not any(v <= a and a + n <= v + f for v, _, f in segs) for a, n in entries)
    (fr,) = inspect(so).files
    assert len(fr.images) == len(entries)
    data = so.read_bytes()
    for img, (addr, listed) in zip(fr.images, entries):
        assert img.offset == addr  # vaddr == file offset in this read-only segment (readelf -lW)
        stored = data[img.offset : img.offset + img.size]
        cli = _zstd_d(stored)
        assert cli.returncode == 0, cli.stderr
        # The zstd CLI accepts exactly the reported bytes (it rejects a cut frame), and the
        # decompressed image is the size the table listed.
        assert _zstd_d(stored[:-1]).returncode != 0
        assert len(cli.stdout) == listed == img.decompressed_size
        assert img.compressed and img.kind == "zstd"
        assert img.size < listed
        assert img.listed_size == listed  # both sizes reported
        assert image_bytes(so, img) == cli.stdout


@pytest.mark.parametrize("lib", XPU_LIBS)
def test_xpu_targets_from_ar_and_readelf_on_the_decompressed_payload(bnb, lib, tmp_path):
    require("readelf", "zstd", "ar")
    so = bnb / lib
    secs = _sections(so)
    data = so.read_bytes()
    expected: list[dict[str, str] | str] = []
    for n, (addr, listed) in enumerate(_tgtimg_entries(so)):
        # Independent reading: the bytes from the entry's address to the end of the section
        # readelf says holds it; libzstd finds where the frame ends, the zstd CLI decompresses it.
        name, (saddr, soff, ssize) = next((k, v) for k, v in secs.items() if v[0] <= addr < v[0] + v[2] and k.startswith("__CLANG"))
        window = data[soff + addr - saddr : soff + ssize]
        stored, _ = _first_zstd_frame(window)
        cli = _zstd_d(window[:stored])
        assert cli.returncode == 0, cli.stderr
        payload = cli.stdout
        assert len(payload) == listed
        if name.endswith("sycl-spir64"):
            assert payload[:4] == b"\x03\x02\x23\x07"
            expected.append("spirv")
            continue
        d = tmp_path / f"img{n}.d"
        d.mkdir()
        (d / "f.ar").write_bytes(payload)
        members = [x.rstrip("/") for x in run(["ar", "t", "f.ar"], cwd=d).stdout.split()]
        run(["ar", "x", "f.ar"], cwd=d)
        ips = {}
        for m in members:
            if m.startswith("64."):
                v = int.from_bytes(readelf_notes(d / m)[6], "little")
                ips[m] = f"{v >> 22}.{(v >> 14) & 0xFF}.{v & 0x3F}"  # REFERENCE.md §2 bit layout
        assert "generic_ir" in members
        expected.append(ips)
    (fr,) = inspect(so).files
    got: list[dict[str, str] | str] = []
    for img in fr.images:
        if img.content == "spirv":
            got.append("spirv")
        else:
            got.append({t.member: t.ip for t in fr.native_targets if t.image == img.index})
    assert got == expected
    assert fr.ir == ["spirv"] and fr.warnings == []
    # Catalog names for those IPs, per REFERENCE.md §2 (not from aotwheel's catalog code).
    assert {t.ip for t in fr.native_targets} == {"12.60.7", "12.70.4", "12.71.4", "12.55.8"}
    assert {(t.ip, t.name) for t in fr.native_targets} >= {("12.60.7", "pvc")}


def _first_zstd_frame(window: bytes) -> tuple[int, bytes]:
    """(stored size, content) of the zstd frame at the start of ``window``, as libzstd's own
    streaming decoder delimits it (it stops at the frame's end and hands back what follows)."""
    import zstandard

    dobj = zstandard.ZstdDecompressor().decompressobj()
    content = dobj.decompress(window)
    assert dobj.eof, "the frame does not end inside its section"
    return len(window) - len(dobj.unused_data), content
