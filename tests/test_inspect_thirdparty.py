"""The inspector on binaries other people built with icpx, checked against independent readings
(binutils: readelf, objcopy, ar; the zstd CLI).

- vllm-xpu-kernels 0.1.16.2 (AOT zebin fat binaries, new offload model): committed excerpt.
- dpctl 0.22.1 (SPIR-V images; .tgtimg holds 0, filled by relocations): pinned download, 1.3 MB.
- onemkl-sycl-stats 2026.2.0 (960 zstd-compressed SPIR-V images): pinned download, 5.2 MB.
"""

from __future__ import annotations

import re
import subprocess
import zipfile

import pytest

from aotwheel.inspector import image_bytes, inspect

from _inspect_util import DATA, decompress_to, fetch, readelf_notes, relocs_into, require, run

pytestmark = pytest.mark.usefixtures("large_binaries")

VLLM = DATA / "vllm-xpu-kernels-0.1.16.2" / "libmhc_kernels_xe_2.so.zst"


def _ip_from_u32(v: int) -> str:
    # docs/formats.md §2: architecture:10 | release:8 | reserved:8 | revision:6, high to low.
    return f"{v >> 22}.{(v >> 14) & 0xFF}.{v & 0x3F}"


def _section_sizes(path) -> dict[str, int]:
    out = {}
    for line in run(["readelf", "-SW", str(path)]).stdout.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+[0-9a-f]{16}\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m:
            out[m[1]] = int(m[2], 16)
    return out


def _tgtsym_names(path) -> list[str]:
    text = run(["readelf", "-p", ".tgtsym", str(path)]).stdout
    return [m[1] for m in re.finditer(r"^\s*\[\s*[0-9a-f]+\]\s+(\S+)$", text, re.M)]


@pytest.fixture(scope="module")
def vllm_so(tmp_path_factory):
    return decompress_to(VLLM, tmp_path_factory.mktemp("vllm") / "libmhc_kernels_xe_2.so")


def _independent_fat_binaries(so, workdir) -> list[dict[str, str]]:
    """objcopy the device-code section, cut it at each ar magic, `ar x` the members and read
    each member's product-config note with readelf: [{member: ip}] per fat binary, file order."""
    require("objcopy", "ar", "readelf")
    blob = workdir / "odc.bin"
    run(["objcopy", "-O", "binary", "--only-section=OFFLOAD_DEVICE_CODE", str(so), str(blob)])
    data = blob.read_bytes()
    starts = [m.start() for m in re.finditer(re.escape(b"!<arch>\n"), data)]
    result = []
    for n, (a, b) in enumerate(zip(starts, starts[1:] + [len(data)])):
        d = workdir / f"fat{n}"
        d.mkdir()
        (d / "f.ar").write_bytes(data[a:b])
        names = [x.rstrip("/") for x in run(["ar", "t", "f.ar"], cwd=d).stdout.split()]
        run(["ar", "x", "f.ar"], cwd=d)
        result.append({m: _ip_from_u32(int.from_bytes(readelf_notes(d / m)[6], "little")) for m in names if m.startswith("64.")})
    return result


def test_vllm_targets_agree_with_readelf_on_every_member_note(vllm_so, tmp_path):
    expected = _independent_fat_binaries(vllm_so, tmp_path)
    assert len(expected) == _section_sizes(vllm_so)[".tgtimg"] // 16 == 5
    (fr,) = inspect(vllm_so).files
    assert [i.kind for i in fr.images] == ["ar"] * len(expected)
    got = [{t.member: t.ip for t in fr.native_targets if t.image == i.index} for i in fr.images]
    assert got == expected
    assert fr.warnings == []  # member names and notes agree
    assert fr.ir == ["spirv"]  # every fat binary keeps generic_ir


def test_vllm_member_names_map_to_catalog_names_and_generic(vllm_so):
    (fr,) = inspect(vllm_so).files
    by_member = {t.member: (t.name, t.ip, t.generic, t.format) for t in fr.native_targets}
    # Independent of the catalog code: docs/formats.md §2 names for these IP versions.
    assert by_member["64.12.60.7"] == ("pvc", "12.60.7", None, "zebin")
    assert by_member["64.20.1.0"] == ("bmg-g21", "20.1.0", None, "zebin")
    assert by_member["64.20.2.0"] == ("bmg-g31", "20.2.0", None, "zebin")
    # A generic member: the name says "bmg", the note says which IP it was built for.
    assert by_member["64.bmg"][1:3] == ("20.1.0", "bmg")


def test_vllm_cores_and_products_from_readelf(vllm_so, tmp_path):
    require("objcopy", "ar")
    (fr,) = inspect(vllm_so).files
    blob = tmp_path / "odc.bin"
    run(["objcopy", "-O", "binary", "--only-section=OFFLOAD_DEVICE_CODE", str(vllm_so), str(blob)])
    first = blob.read_bytes()
    (tmp_path / "f.ar").write_bytes(first[: first.index(b"!<arch>\n", 8)])
    run(["ar", "x", "f.ar"], cwd=tmp_path)
    notes = readelf_notes(tmp_path / "64.12.60.7")
    t = next(t for t in fr.native_targets if t.image == 0 and t.member == "64.12.60.7")
    assert int.from_bytes(notes[2], "little") == 0xC08 and t.core == "XE_HPC_CORE"
    assert int.from_bytes(notes[1], "little") == 1271 and t.product == "PVC"


def test_vllm_image_table_triples_and_kernels(vllm_so):
    (fr,) = inspect(vllm_so).files
    assert {i.triple for i in fr.images} == {"spir64_gen"}  # from the image descriptors
    assert {i.section for i in fr.images} == {"OFFLOAD_DEVICE_CODE"}
    names = _tgtsym_names(vllm_so)
    assert fr.kernels_by_triple == {"spir64_gen": len(names)}
    assert fr.kernels == len({n.split(".", 1)[1] for n in names})


def test_dpctl_wheel_spirv_images_through_relocations(tmp_path):
    whl = fetch("dpctl", "0.22.1", "dpctl-0.22.1-0-cp311-cp311-manylinux_2_28_x86_64.whl",
                "19b90062f02ca9a8e8c534169e607b251c05d0da51a4c21d3c3e7c96d9e70bb7")
    report = inspect(whl)
    with zipfile.ZipFile(whl) as z:
        z.extract("dpctl/libDPCTLSyclInterface.so", tmp_path)
        # Shared objects, plus raw SPIR-V files dpctl ships as test inputs (device code too).
        sos = [n for n in z.namelist() if n.endswith((".so", ".spv"))]
    lib = tmp_path / "dpctl" / "libDPCTLSyclInterface.so"
    # readelf: the table's one entry is a RELATIVE relocation (the section itself holds 0).
    (rel,) = relocs_into(lib, ".tgtimg")
    assert rel[1] == "R_X86_64_RELATIVE"
    assert sorted(f.path.split("!", 1)[1] for f in report.files) == sorted(sos)
    fr = next(f for f in report.files if f.path.endswith("!dpctl/libDPCTLSyclInterface.so"))
    (img,) = fr.images
    assert img.offset == rel[2]  # PIC .so: vaddr == file offset for this read-only segment
    assert (img.kind, img.triple, img.compressed) == ("spirv", "spir64", False)
    assert fr.native_targets == [] and fr.ir == ["spirv"]
    names = _tgtsym_names(lib)
    assert fr.kernels == len({n.split(".", 1)[1] for n in names})
    with_images = [f for f in report.files if f.images]
    assert all(f.ir == ["spirv"] and not f.native_targets for f in with_images)
    spv_files = [f for f in report.files if f.path.endswith(".spv")]
    assert spv_files and all(f.kind == "spirv" for f in spv_files)


def test_onemkl_stats_zstd_images_classified_without_decompressing_everything(tmp_path):
    whl = fetch("onemkl-sycl-stats", "2026.2.0", "onemkl_sycl_stats-2026.2.0-py2.py3-none-manylinux_2_28_x86_64.whl",
                "742b00d269c77eaad91bcfadda3c0ee68aa26a6c55d223c1f35c5764f2f7060c")
    member = "onemkl_sycl_stats-2026.2.0.data/data/lib/libmkl_sycl_stats.so.6"
    with zipfile.ZipFile(whl) as z:
        z.extract(member, tmp_path)
    lib = tmp_path / member
    (fr,) = inspect(lib).files
    assert len(fr.images) == _section_sizes(lib)[".tgtimg"] // 16 == 960
    assert {(i.kind, i.compressed, i.content, i.triple) for i in fr.images} == {("zstd", True, "spirv", "spir64")}
    assert fr.ir == ["spirv"] and fr.native_targets == []
    # This build lists the *decompressed* size in .tgtimg; the stored frame is shorter, and the
    # zstd CLI (which rejects trailing bytes) accepts exactly the bytes the inspector reports.
    require("zstd")
    data = lib.read_bytes()
    for img in fr.images[:20]:
        stored = data[img.offset : img.offset + img.size]
        cli = subprocess.run(["zstd", "-d", "-c"], input=stored, capture_output=True, check=True).stdout
        assert image_bytes(lib, img) == cli and cli[:4] == b"\x03\x02\x23\x07"
        assert img.decompressed_size == len(cli)
        if img.listed_size is not None:
            assert img.listed_size == len(cli) > img.size


XPUMEM = DATA / "vllm-xpu-kernels-0.1.16.2" / "xpumem_allocator.abi3.so.zst"


def test_vllm_duplicate_members_and_the_xe3p_core_are_reported_not_dropped(tmp_path):
    so = decompress_to(XPUMEM, tmp_path / "xpumem_allocator.abi3.so")
    (fat,) = _independent_fat_binaries(so, tmp_path)
    names = [n.rstrip("/") for n in run(["ar", "t", str(tmp_path / "fat0" / "f.ar")]).stdout.split()]
    (fr,) = inspect(so).files
    got = [t.member for t in fr.native_targets]
    assert got == [n for n in names if n.startswith("64.")]
    assert names.count("64.35.11.0") == 2
    assert any("'64.35.11.0' appears more than once" in w for w in fr.warnings)
    cri = [t for t in fr.native_targets if t.member == "64.35.11.0"]
    assert {(t.name, t.ip) for t in cri} == {("cri", fat["64.35.11.0"])} == {("cri", "35.11.0")}
    # readelf's reading of the core note: 0x2300, the core ocloc 26.27 writes for -device cri
    # (IGC's igfxfmid.h: IGFX_XE3P_CORE = 0x2300), shown by name.
    notes = readelf_notes(tmp_path / "fat0" / "64.35.11.0")
    core = int.from_bytes(notes[2], "little")
    assert core == 0x2300 and {t.core for t in cri} == {"XE3P_CORE"}
