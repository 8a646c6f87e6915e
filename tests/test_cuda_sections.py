"""NVIDIA fat binaries outside ``.nv_fatbin``: libraries keep containers in ``.ldata``, ``.data`` or
vendor sections (``.cask_resource``) and load them with cuModuleLoadData.

- A shared library built here (cc + .incbin) with a real nvcc fat binary in ``.cask_resource``
  and chance magic bytes in ``.data``: cuobjdump's listing of the fat binary is what inspect finds,
  and the false matches are no images.
- NVIDIA's cuFFT 12.0.0.61 (pinned PyPI wheel, 23,983 containers in ``.ldata``): per-architecture
  cubin counts equal an independent whole-file scan written here; ``check --device sm_90`` is native.
"""

from __future__ import annotations

import collections
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.backends.nvidia.report import cuda_fields
from aotwheel.inspector import inspect

from _cuda_util import CACHE, CUFFT_WHEEL, REPO, VADD, listing, nvcc_out, run, source, wheel_member

pytestmark = pytest.mark.usefixtures("large_binaries", "nvcc")
MAGIC = struct.pack("<I", 0xBA55ED50)


def whole_file_cubins(path: Path) -> collections.Counter[str]:
    """Cubins per target in every fat binary container anywhere in the file, by the layout of
    docs/formats.md §5 / REFERENCE §12 alone: container {magic, u16 version 1, u16 header 16,
    u64 size}, entries {u16 kind, u16, u32 header size, u64 size, ..., u32 arch @28, u64 flags @40}
    tiling the container exactly; flags 0x100000 'a', 0x200000 'f'."""
    data = path.read_bytes()
    found: collections.Counter[str] = collections.Counter()
    at = data.find(MAGIC)
    while at >= 0:
        version, header, size = struct.unpack_from("<HHQ", data, at + 4)
        entries, off, end = [], at + 16, at + 16 + size
        while version == 1 and header == 16 and off + 64 <= end <= len(data):
            kind, _, hsize, esize = struct.unpack_from("<HHIQ", data, off)
            (arch,), (flags,) = struct.unpack_from("<I", data, off + 28), struct.unpack_from("<Q", data, off + 40)
            entries.append((kind, arch, flags))
            off += hsize + esize
        if entries and off == end:
            for kind, arch, flags in entries:
                if kind == 2:
                    found[f"sm_{arch}{'a' if flags & 0x100000 else 'f' if flags & 0x200000 else ''}"] += 1
            at = data.find(MAGIC, end)
        else:
            at = data.find(MAGIC, at + 4)
    return found


def _library(tmp_path: Path, name: str, sections: dict[str, Path], chance: bytes) -> Path:
    """A shared library (cc + .incbin) with each fat binary in its section and ``chance`` in .data."""
    c = tmp_path / f"{name}.c"
    asm = "".join('__asm__(".pushsection %s, \\"a\\"\\n.balign 16\\n.incbin \\"%s\\"\\n.popsection\\n");\n' % (sec, path)
                  for sec, path in sections.items())
    c.write_text(asm + "unsigned char chance[] = {%s};\n" % ", ".join(str(b) for b in chance))
    so = tmp_path / f"lib{name}.so"
    run(["cc", "-shared", "-fPIC", str(c), "-o", str(so)])
    return so


def test_container_in_a_vendor_section_is_read_and_chance_magic_is_not(tmp_path: Path) -> None:
    """cuBLASLt's layout: a container in .nv_fatbin and more in a vendor section (.cask_resource)."""
    vadd = str(source("vadd.cu", VADD))
    cask = nvcc_out("vadd_sm80_sm90_ptx.fatbin", "-fatbin", "-gencode=arch=compute_80,code=sm_80",
                    "-gencode=arch=compute_90,code=[sm_90,compute_90]", vadd)
    nv = nvcc_out("vadd_sm75.fatbin", "-fatbin", "-gencode=arch=compute_75,code=sm_75", vadd)
    # .data: the magic, then a header that is not one (version 7; and one claiming 1 TiB of entries).
    chance = MAGIC + struct.pack("<HHQ", 7, 16, 64) + bytes(64) + MAGIC + struct.pack("<HHQ", 1, 16, 1 << 40)
    so = _library(tmp_path, "vendor", {".nv_fatbin": nv, ".cask_resource": cask}, chance)
    expected = sorted(listing(cask) + listing(nv))  # cuobjdump's reading of the containers themselves
    (fr,) = inspect(so).files
    assert sorted([(i.kind, i.arch.replace("compute_", "sm_")) for i in fr.images]) == expected
    assert sorted((i.section, i.arch) for i in fr.images) == [(".cask_resource", "compute_90"), (".cask_resource", "sm_80"),
                                                              (".cask_resource", "sm_90"), (".nv_fatbin", "sm_75")]
    assert sorted(cuda_fields(fr).loadable) == ["compute_90", "sm_75", "sm_80", "sm_90"] and fr.warnings == []


def test_a_binary_without_cuda_sections_is_not_scanned(tmp_path: Path) -> None:
    """The bound: only CUDA host binaries (.nv_fatbin, __nv_relfatbin, .nvFatBinSegment or
    __nv_module_id present) are searched, so large SYCL/HIP libraries are not read page by page."""
    vadd = str(source("vadd.cu", VADD))
    cask = nvcc_out("vadd_sm80_sm90_ptx.fatbin", "-fatbin", "-gencode=arch=compute_80,code=sm_80",
                    "-gencode=arch=compute_90,code=[sm_90,compute_90]", vadd)
    so = _library(tmp_path, "nocuda", {".cask_resource": cask}, b"")
    assert ".nv_fatbin" not in run(["readelf", "-SW", str(so)]).stdout
    (fr,) = inspect(so).files
    assert fr.images == [] and cuda_fields(fr).loadable == []


@pytest.fixture(scope="module")
def cufft() -> Path:
    return wheel_member(CUFFT_WHEEL, "nvidia/cu13/lib/libcufft.so.12")


def test_cufft_cubins_equal_a_whole_file_scan(cufft: Path) -> None:
    expected = whole_file_cubins(cufft)
    assert sum(expected.values()) == 3125  # REFERENCE §12: 3,124 in .ldata, and one in .nv_fatbin
    (fr,) = inspect(cufft).files
    got = collections.Counter(t.name for t in fr.native_targets if t.vendor == "nvidia")
    assert got == expected
    assert {i.section for i in fr.images} == {".nv_fatbin", ".ldata"}


def test_cufft_is_native_on_sm_90(cufft: Path) -> None:
    env = {"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(cufft), "--device", "sm_90"], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("sm_90 (cc 9.0): native sm_90 "), proc.stdout
    assert CACHE in cufft.parents  # kept in the tests' download cache


def test_cufft_scanned_entries_equal_the_strict_parser(cufft: Path) -> None:
    """The scan's fast entry reader (structure already checked) gives exactly what the strict
    .nv_fatbin parser reads from the same container bytes, for all 23,983 containers."""
    import mmap

    from aotwheel.backends.nvidia.fatbin import _entries, scan_sections
    from aotwheel.formats.elf import open_elf
    from aotwheel.formats.region import Region

    with open(cufft, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        region = Region(mm, str(cufft))
        containers, rejected = scan_sections(region, open_elf(region).sections)
        assert (len(containers), rejected) == (23983, 0)
        for i, c in enumerate(containers):
            assert _entries(region.sub(c.offset + 16, c.size, "container"), i) == c.entries
