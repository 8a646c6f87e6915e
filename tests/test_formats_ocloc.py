"""Format readers against real outputs of Debian's ocloc 22.43 and clang-15/llvm-spirv-15.

Expectations come from the tools, not from aotwheel: the core family ocloc writes into its own
output file names, `ar t` member lists, `ocloc ids` IP versions, `llvm-spirv-15 -to-text`."""

from __future__ import annotations

import re

import pytest

from aotwheel.backends.intel import gfx, legacy
from aotwheel.backends.intel.kinds import sniff
from aotwheel.formats import ar
from aotwheel.formats import spirv as spirv_fmt
from aotwheel.formats.arname import member_target
from aotwheel.formats.region import Region

from _inspect_util import KERNEL_NAMES, ar_names, ocloc_fat, ocloc_single, run, spirv
from conftest import CLANG, LLVM_SPIRV, require_legacy_ocloc  # noqa: F401

DEVICES = ("pvc", "acm-g10", "tgllp")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("ocloc")
    return d, spirv(d)


def _region(path) -> Region:
    return Region(path.read_bytes(), str(path))


@pytest.mark.parametrize("device", DEVICES)
def test_legacy_header_core_matches_the_core_ocloc_names_in_its_output_file(work, device):
    require_legacy_ocloc()
    d, spv = work
    binary, suffix = ocloc_single(spv, device, d)
    # ocloc names its output k_<CORE><device>.bin, e.g. XE_HPC_COREpvc, XE_HPG_COREdg2, Gen12LPlp.
    ocloc_core = re.match(r"(XE_\w+?_CORE|Gen\d+\w*?)(?=[a-z])", suffix)
    assert ocloc_core, suffix
    region = _region(binary)
    assert sniff(region.head(64)) == "legacy"
    info = legacy.read_legacy(region)
    norm = lambda s: s.upper().removesuffix("_CORE")  # noqa: E731
    assert norm(gfx.core_name(info.gfx_core)) == norm(ocloc_core[1])
    assert info.kernels == len(KERNEL_NAMES)
    assert info.pointer_size == 8
    assert info.has_spirv  # a single-device .bin keeps its "SPIRV Object" section


def test_fat_binary_members_match_ar_t(work):
    d, spv = work
    fat = ocloc_fat(spv, "pvc,acm-g10", d / "fat")
    members = ar.read_ar(_region(fat))
    assert [m.name for m in members] == ar_names(fat)
    assert {member_target(m.name) for m in members if m.name.startswith("64.")} == {(64, "12.60.7"), (64, "12.55.8")}
    data = fat.read_bytes()
    for m in members:
        # Offsets point at the member bodies `ar p` prints.
        assert data[m.offset : m.offset + m.size] == run_bytes(["ar", "p", str(fat), m.name])


def run_bytes(cmd):
    import subprocess

    return subprocess.run(cmd, capture_output=True, check=True).stdout


def test_generic_ir_member_carries_the_input_spirv(work):
    d, spv = work
    fat = ocloc_fat(spv, "pvc,acm-g11", d / "fat1")  # one device would give a plain .bin
    region = _region(fat)
    (gir,) = [m for m in ar.read_ar(region) if m.name == "generic_ir"]
    body = region.sub(gir.offset, gir.size, "generic_ir")
    assert sniff(body.head(64)) == "ir-elf"
    payload = legacy.ir_payload(body)
    assert payload is not None and payload.read(0, payload.size, "x") == spv.read_bytes()


def test_spirv_header_and_kernel_count_match_llvm_spirv_text(work):
    d, spv = work
    text = run([LLVM_SPIRV, "-to-text", str(spv), "-o", "-"]).stdout
    entry_kernels = len(re.findall(r"^\s*\d+\s+EntryPoint\s+6\s", text, re.M))
    version = re.search(r"^(\d+)\s*$", text, re.M)  # first line: the version word in decimal
    info = spirv_fmt.read_spirv(_region(spv), count_kernels=True)
    assert info.kernels == entry_kernels == len(KERNEL_NAMES)
    if version:
        v = int(version[1])
        assert info.version == f"{(v >> 16) & 0xFF}.{(v >> 8) & 0xFF}"
