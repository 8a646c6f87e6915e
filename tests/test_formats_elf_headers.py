"""The struct-based ELF reader (issue 6 P4) against independent readers on real binaries:
pyelftools for section and program headers, readelf for the relocations that fill ``.tgtimg``.

Binaries: the vllm-xpu-kernels 0.1.16.2 excerpts committed under tests/data (real icpx output with
a ``.tgtimg`` table) and the nvcc-built host library of tests/data/cuda-h100.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aotwheel.formats.elf import _relative_relocs, _slot_relocs, open_elf, read_host
from aotwheel.formats.region import Region

from _inspect_util import DATA, decompress_to, relocs_into

ZST = ["libmhc_kernels_xe_2.so.zst", "xpumem_allocator.abi3.so.zst"]


@pytest.fixture(scope="module")
def binaries(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("elfhdr")
    found = {n: decompress_to(DATA / "vllm-xpu-kernels-0.1.16.2" / n, out / n.removesuffix(".zst")) for n in ZST}
    found["libkern_sm_90.so"] = DATA / "cuda-h100" / "libkern_sm_90.so"
    return found


def _view(path: Path):
    return open_elf(Region(path.read_bytes(), str(path)))


@pytest.mark.parametrize("name", [*ZST, "libkern_sm_90.so"])
def test_sections_and_load_segments_equal_pyelftools(binaries, name):
    from elftools.elf.elffile import ELFFile

    path = binaries[name]
    view = _view(path)
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        want = [(s.name, s["sh_type"], s["sh_addr"], s["sh_offset"], s["sh_size"]) for s in elf.iter_sections()]
        loads = [(p["p_vaddr"], p["p_offset"], p["p_filesz"]) for p in elf.iter_segments() if p["p_type"] == "PT_LOAD"]
    assert [(s.name, s.type, s.addr, s.offset, s.size) for s in view.sections] == want
    assert view.segments == loads and len(want) > 10
    assert (view.e_type, view.e_machine) == (3, 62)  # ET_DYN, EM_X86_64 (readelf -h says the same)


@pytest.mark.parametrize("name", ZST)
def test_tgtimg_slots_by_bisect_equal_readelf_relocations(binaries, name):
    """The bisect over the sorted RELATIVE block finds every slot readelf lists, with its addend,
    and agrees with the full scan it replaces."""
    path = binaries[name]
    view = _view(path)
    tgt = view.section(".tgtimg")
    slots = tgt.size // 16
    readelf = {off: addend for off, kind, addend in relocs_into(path, ".tgtimg") if kind == "R_X86_64_RELATIVE" and not (off - tgt.addr) % 16}
    assert len(readelf) == slots > 0
    fast = _slot_relocs(view, tgt.addr, slots)
    assert fast == readelf
    assert _relative_relocs(view, want_offsets=set(readelf), want_addends=set()) == readelf


def test_slot_lookup_reports_a_missing_slot_instead_of_guessing(binaries):
    """A slot no relocation fills (one past the table) makes the fast path give up (None), so the
    caller falls back to the full scan."""
    view = _view(binaries["libmhc_kernels_xe_2.so.zst"])
    tgt = view.section(".tgtimg")
    assert _slot_relocs(view, tgt.addr, tgt.size // 16 + 1) is None


@pytest.mark.parametrize("name", ZST)
def test_images_without_bundle_sections_still_get_descriptor_triples(binaries, name):
    """These images sit in OFFLOAD_DEVICE_CODE, not a __CLANG_OFFLOAD_BUNDLE__ section: the default
    mode must still read their descriptors, so both modes give the same images."""
    view = _view(binaries[name])
    fast, full = read_host(view, all_descriptors=False).images, read_host(view, all_descriptors=True).images
    assert fast == full and fast
    assert all(i.triple in ("spir64_gen", "spir64") and i.desc_format for i in fast)
    assert {i.section for i in fast} == {"OFFLOAD_DEVICE_CODE"}


def test_bundle_section_names_give_the_triples_descriptors_give(tmp_path):
    """dpctl 0.22.1 (pinned, cached): its one image lies in a __CLANG_OFFLOAD_BUNDLE__ section; the
    section name and the descriptor agree, so skipping the descriptor changes nothing but
    desc_format."""
    import zipfile

    from _inspect_util import fetch

    whl = fetch("dpctl", "0.22.1", "dpctl-0.22.1-0-cp311-cp311-manylinux_2_28_x86_64.whl",
                "19b90062f02ca9a8e8c534169e607b251c05d0da51a4c21d3c3e7c96d9e70bb7")
    with zipfile.ZipFile(whl) as z:
        z.extract("dpctl/libDPCTLSyclInterface.so", tmp_path)
    view = _view(tmp_path / "dpctl" / "libDPCTLSyclInterface.so")
    fast, full = read_host(view, all_descriptors=False).images, read_host(view, all_descriptors=True).images
    assert [(i.offset, i.size, i.vaddr, i.section, i.triple) for i in fast] == [(i.offset, i.size, i.vaddr, i.section, i.triple) for i in full]
    assert all(i.section.startswith("__CLANG_OFFLOAD_BUNDLE__") for i in fast)
    assert [i.desc_format for i in fast] == [None] * len(fast) and all(i.desc_format for i in full)
