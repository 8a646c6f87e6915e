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

from aotwheel.backends.nvidia.report import cuda_fields
from aotwheel.inspector import image_bytes, inspect

from _inspect_util import fetch, readelf_notes, require, run

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


# --------------------------------------------------------------------------------------------
# AMD: .hip_fatbin with compressed clang offload bundles

ROCM_LIBS = ("libbitsandbytes_rocm64.so", "libbitsandbytes_rocm70.so", "libbitsandbytes_rocm71.so",
             "libbitsandbytes_rocm714.so", "libbitsandbytes_rocm715.so", "libbitsandbytes_rocm72.so")
_HIP_ID = "hipv4-amdgcn-amd-amdhsa--"


def _bundler() -> str:
    # LLVM 15's bundler, the independent reader of these bundles: LLVM 19's refuses some of their
    # target ids ("Can't find bundles for hipv4-amdgcn-amd-amdhsa--gfx1153-"), so the sid lane skips.
    require("clang-offload-bundler-15")
    return "clang-offload-bundler-15"


def _independent_bundles(so: Path, workdir: Path) -> list[tuple[int, int, Path]]:
    """(CCOB version, file offset, decompressed bundle) for each bundle the ``.hipFatBinSegment``
    wrappers point at: the wrapper's binary pointer is a RELATIVE relocation (readelf -r); the CCOB
    header is read by clang's documented layout; the zstd CLI decompresses the stream."""
    require("readelf", "zstd")
    secs = _sections(so)
    seg_addr, _, seg_size = secs[".hipFatBinSegment"]
    fat_addr, fat_off, _ = secs[".hip_fatbin"]
    relocs = {}
    for line in run(["readelf", "-rW", str(so)]).stdout.splitlines():
        m = re.match(r"^([0-9a-f]{12,16})\s+[0-9a-f]+\s+R_X86_64_RELATIVE\s+([0-9a-f]+)", line)
        if m:
            relocs[int(m[1], 16)] = int(m[2], 16)
    data = so.read_bytes()
    out = []
    for k, wrapper in enumerate(range(seg_addr, seg_addr + seg_size, 24)):  # {u32 magic, u32 version, ptr, ptr}
        addr = relocs[wrapper + 8]
        off = fat_off + addr - fat_addr
        assert data[off : off + 4] == b"CCOB"
        version, method = struct.unpack_from("<HH", data, off + 4)
        assert method == 1  # zstd, per the stream's own magic below
        total, header = (struct.unpack_from("<I", data, off + 8)[0], 24) if version == 2 else (struct.unpack_from("<Q", data, off + 8)[0], 32)
        stream = data[off + header : off + total]
        assert stream[:4] == b"\x28\xb5\x2f\xfd"
        cli = _zstd_d(stream)
        assert cli.returncode == 0, cli.stderr
        path = workdir / f"{so.stem}-{k}.bundle"
        path.write_bytes(cli.stdout)
        out.append((version, off, path))
    return out


@pytest.mark.parametrize("lib", ROCM_LIBS)
def test_rocm_targets_agree_with_clang_offload_bundler(bnb, lib, tmp_path):
    bundler = _bundler()
    so = bnb / lib
    bundles = _independent_bundles(so, tmp_path)
    expected = set()
    for _, _, path in bundles:
        ids = run([bundler, "-list", "-type=o", f"-input={path}"]).stdout.split()
        assert "host-x86_64-unknown-linux-gnu-" in ids
        expected |= {i.removeprefix(_HIP_ID) for i in ids if i.startswith(_HIP_ID)}
    (fr,) = inspect(so).files
    amd = {t.name for t in fr.native_targets if t.vendor == "amd"}
    assert amd == expected and len(expected) >= 14
    assert all(t.format == "code-object" and t.name.startswith(t.arch) for t in fr.native_targets)
    assert [(i.offset, i.kind, i.compressed, i.section) for i in fr.images] == [(off, "bundle", True, ".hip_fatbin") for _, off, _ in bundles]
    assert [i.decompressed_size for i in fr.images] == [p.stat().st_size for _, _, p in bundles]
    assert fr.warnings == [] and cuda_fields(fr).loadable == [] and {t.vendor for t in fr.native_targets} == {"amd"}


def test_rocm_inputs_cover_ccob_versions_2_and_3(bnb, tmp_path):
    versions = {lib: {v for v, _, _ in _independent_bundles(bnb / lib, tmp_path)} for lib in ("libbitsandbytes_rocm64.so", "libbitsandbytes_rocm72.so")}
    assert versions == {"libbitsandbytes_rocm64.so": {2}, "libbitsandbytes_rocm72.so": {3}}


@pytest.mark.parametrize("lib", ["libbitsandbytes_rocm64.so", "libbitsandbytes_rocm714.so"])
def test_rocm_code_object_features_agree_with_gnu_readelf(bnb, lib, tmp_path):
    """Each code object unbundled by clang-offload-bundler; GNU readelf decodes its e_flags
    (``0x53f, gfx90a, xnack any, sramecc any``)."""
    from aotwheel.backends.amd.codeobject import read_code_object
    from aotwheel.formats.bundle import read_bundle
    from aotwheel.formats.region import Region

    bundler = _bundler()
    (_, _, path), *_ = _independent_bundles(bnb / lib, tmp_path)
    ids = [i for i in run([bundler, "-list", "-type=o", f"-input={path}"]).stdout.split() if i.startswith(_HIP_ID)]
    outs = [tmp_path / f"co{n}" for n in range(len(ids))]
    run([bundler, "-unbundle", "-type=o", f"-input={path}", "-targets=" + ",".join(ids), *[f"-output={o}" for o in outs]])
    entries = {e.id: e for e in read_bundle(Region(path.read_bytes(), str(path)))}
    seen, named = set(), set()
    for bundle_id, co in zip(ids, outs):
        flags = re.search(r"Flags:\s+(0x[0-9a-f]+), (gfx\w+|<unknown AMDGPU GPU type: 0x[0-9a-f]+>)(.*)", run(["readelf", "-h", str(co)]).stdout)
        assert flags, bundle_id
        if flags[2].startswith("gfx"):  # binutils 2.40 names processors up to gfx1036/gfx1100-ish
            assert flags[2] == bundle_id.removeprefix(_HIP_ID)  # GNU readelf's processor name = the bundle id's
            named.add(flags[2])
        want = dict(re.findall(r"(xnack|sramecc) (any|on|off)", flags[3]))  # readelf omits "unsupported"
        e = entries[bundle_id]
        got = read_code_object(Region(path.read_bytes(), str(path)).sub(e.offset, e.size, "co"))
        assert co.read_bytes() == path.read_bytes()[e.offset : e.offset + e.size]
        assert got.mach == int(flags[1], 16) & 0xFF
        assert want.get("xnack", "unsupported") == got.xnack
        assert want.get("sramecc", "unsupported") == got.sramecc
        seen.add((got.xnack, got.sramecc))
    assert ("any", "any") in seen  # gfx90a/gfx942: both features left to the device
    assert {"gfx90a", "gfx908", "gfx1030"} <= named


def _hip_so(workdir: Path, blobs: list[bytes], name: str) -> Path:
    """A real PIC shared object whose ``.hip_fatbin`` holds ``blobs`` at 4096-byte alignment, as
    hipcc lays it out (gcc assembles it; the blobs are .incbin-ed)."""
    require("gcc")
    lines = ['.section .hip_fatbin,"a"']
    for k, blob in enumerate(blobs):
        (workdir / f"{name}{k}.bin").write_bytes(blob)
        lines += [".balign 4096", f'.incbin "{workdir / f"{name}{k}.bin"}"']
    lines += [".text", ".globl anchor", ".type anchor,@function", "anchor: ret"]
    (workdir / f"{name}.s").write_text("\n".join(lines) + "\n")
    out = workdir / f"{name}.so"
    run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(out), str(workdir / f"{name}.s")])
    return out


def _ccob(bundle: bytes, version: int, method: int, stream: bytes) -> bytes:
    """Clang's CCOB header around ``stream`` (test double for clang >= 18's -compress, which no
    registry here has: Debian 12's newest clang-offload-bundler is 16)."""
    import hashlib

    digest = hashlib.md5(bundle).digest()[:8]
    if version == 2:
        head = b"CCOB" + struct.pack("<HHII", 2, method, 24 + len(stream), len(bundle)) + digest
    else:
        head = b"CCOB" + struct.pack("<HHQQ", 3, method, 32 + len(stream), len(bundle)) + digest
    return head + stream


def test_plain_and_handmade_zlib_ccob_bundles_of_real_code_objects(bnb, tmp_path):
    """The real gfx bundle from rocm64, stored plain, as zlib CCOB v2 and v3 (hand-wrapped), and as
    zstd CCOB v3 (hand-wrapped), side by side in one .hip_fatbin: every reading lists the same
    targets clang-offload-bundler lists."""
    import zlib

    import zstandard

    bundler = _bundler()
    (_, _, path), *_ = _independent_bundles(bnb / "libbitsandbytes_rocm64.so", tmp_path)
    bundle = path.read_bytes()
    ids = {i.removeprefix(_HIP_ID) for i in run([bundler, "-list", "-type=o", f"-input={path}"]).stdout.split() if i.startswith(_HIP_ID)}
    blobs = [bundle, _ccob(bundle, 2, 0, zlib.compress(bundle, 6)), _ccob(bundle, 3, 0, zlib.compress(bundle, 1)),
             _ccob(bundle, 3, 1, zstandard.ZstdCompressor(level=1).compress(bundle))]
    so = _hip_so(tmp_path, blobs, "mixed")
    (fr,) = inspect(so).files
    assert {t.name for t in fr.native_targets} == ids
    assert [(i.compressed, i.decompressed_size) for i in fr.images] == [(False, None)] + [(True, len(bundle))] * 3
    # The plain bundle is read in place: its stored size is the furthest entry's end.
    assert fr.images[0].size == len(bundle)
    # A wrong hash is a corrupt file, said in one line with the offset.
    bad = bytearray(blobs[1])
    bad[16] ^= 0xFF
    so2 = _hip_so(tmp_path, [bytes(bad)], "badhash")
    from aotwheel.errors import InspectError

    with pytest.raises(InspectError, match=r"does not match its hash at offset 0x[0-9a-f]+"):
        inspect(so2)
