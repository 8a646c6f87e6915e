"""aotwheel._fastscan's NVIDIA fat binary reader (fastscan.fatbin) against the Python readers of
backends/nvidia/fatbin.py: ``parse_fatbin`` (``.nv_fatbin`` and ``.fatbin`` files, strict) and
``scan_sections`` (containers found by magic in other data sections, kept when their structure
holds). The same containers, entries, rejected matches and errors, and the same inspect report,
with and without the extension: on real NVIDIA libraries (cuFFT 12's 23,983 containers in
``.ldata``, nvJPEG), on real nvcc output in a vendor section beside chance magic, and on
hypothesis-mutated nvcc output. The libFuzzer run of the C core is tests/test_fuzz_fastscan.py.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotwheel.backends.nvidia import fatbin as fb
from aotwheel.errors import InspectError
from aotwheel.formats import fastscan
from aotwheel.formats.elf import open_elf
from aotwheel.formats.region import Region
from aotwheel.inspector import inspect

import _fuzz_util as fu
from _cuda_util import CUFFT_WHEEL, NVJPEG_WHEEL, VADD, nvcc_out, run, source, wheel_member

EXAMPLES = int(os.environ.get("AOTWHEEL_FASTSCAN_EXAMPLES", "300"))  # fuzz/fastscan_asan.py --examples raises it
OPS = st.tuples(st.sampled_from(fu.OPS), st.integers(-4096, 1 << 30), st.integers(0, 1 << 16), st.integers(0, 1 << 16))
MAGIC = struct.pack("<I", 0xBA55ED50)

pytestmark = [pytest.mark.skipif(sys.version_info < (3, 11), reason="_fastscan needs the 3.11 limited API"),
              pytest.mark.usefixtures("large_binaries", "nvcc")]


@pytest.fixture(autouse=True)
def _fastscan_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN", raising=False)


def _readings(region: Region) -> dict[str, Any]:
    """Every NVIDIA reading of ``region``: parse_fatbin of a raw fat binary, or of each of an
    ELF's .nv_fatbin / __nv_relfatbin sections; scan_sections and scan_entries; errors as text."""
    out: dict[str, Any] = {}

    def keep(key: str, read: Any) -> None:
        try:
            out[key] = read()
        except InspectError as exc:
            out[key] = f"InspectError: {exc}"

    if region.head(4) == MAGIC:
        keep("raw", lambda: fb.parse_fatbin(region).containers)
        return out
    try:
        view = open_elf(region)
    except InspectError as exc:
        return {"elf": str(exc)}
    for name in fb.SECTIONS:
        sec = view.section(name)
        if sec is not None and sec.type != "SHT_NOBITS" and sec.size:
            keep(name, lambda: fb.parse_fatbin(region.sub(sec.offset, sec.size, name), section=name).containers)
    keep("scan", lambda: fb.scan_sections(region, view.sections, 3))
    keep("entries", lambda: fb.scan_entries(region, view.sections))
    return out


def _both(region: Region, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN", raising=False)
    c = _readings(region)
    monkeypatch.setenv("AOTWHEEL_NO_FASTSCAN", "1")
    try:
        return c, _readings(region)
    finally:
        monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN", raising=False)


def _report(path: Path, deep: bool, monkeypatch: pytest.MonkeyPatch, python_only: bool) -> str:
    if python_only:
        monkeypatch.setenv("AOTWHEEL_NO_FASTSCAN", "1")
    try:
        return json.dumps(inspect(path, deep=deep).to_dict(), sort_keys=True)
    except InspectError as exc:
        return f"InspectError: {exc}"
    finally:
        monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN", raising=False)


def _c_answers(region: Region) -> Counter[str]:
    """What fastscan.fatbin itself answered for each section the readers above hand it: proof
    that the C path ran ("strict"/"scan"), or doubted ("strict-doubt": the Python reader raised)."""
    seen: Counter[str] = Counter()
    if region.head(4) == MAGIC:
        seen["strict" if fastscan.fatbin(region, fb.FatbinEntry, strict=True) is not None else "strict-doubt"] += 1
        return seen
    try:
        view = open_elf(region)
    except InspectError:
        return seen
    for sec in view.sections:
        if not sec.size or sec.type == "SHT_NOBITS" or sec.offset + sec.size > region.size:
            continue
        sub = region.sub(sec.offset, sec.size, sec.name)
        if sec.name in fb.SECTIONS:
            seen["strict" if fastscan.fatbin(sub, fb.FatbinEntry, strict=True) is not None else "strict-doubt"] += 1
        elif fb.scannable(sec.name, sec.type) and any(s.name in fb.CUDA_MARKERS for s in view.sections):
            got = fastscan.fatbin(sub, fb.FatbinEntry, strict=False)
            assert got is not None, "the scan never doubts"
            seen["scan"] += 1
            seen["rejected"] += got[2]
    return seen


def _mapped(path: Path) -> Any:
    f = open(path, "rb")
    return f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


@pytest.mark.parametrize("which", ["cufft", "nvjpeg"])
def test_real_nvidia_libraries_read_alike(which: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """cuFFT 12 (23,983 containers in .ldata, one in .nv_fatbin) and nvJPEG 13 (.nv_fatbin)."""
    path = (wheel_member(CUFFT_WHEEL, "nvidia/cu13/lib/libcufft.so.12") if which == "cufft"
            else wheel_member(NVJPEG_WHEEL, "nvidia/cu13/lib/libnvjpeg.so.13"))
    f, mm = _mapped(path)
    with f, mm:
        region = Region(mm, str(path))
        seen = _c_answers(region)
        c, py = _both(region, monkeypatch)
    assert seen["strict"] >= 1 and not seen["strict-doubt"] and seen["scan"] >= 1, seen
    assert c == py
    if which == "cufft":
        containers, rejected = c["scan"]
        assert (len(containers), rejected) == (23983, 0)  # REFERENCE §12; the whole-file scan: test_cuda_sections
        assert [name for name, _ in c["entries"][0]] == [".ldata"]
    assert _report(path, False, monkeypatch, False) == _report(path, False, monkeypatch, True)


def test_vendor_section_and_chance_magic_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cuBLASLt's layout (a container in .nv_fatbin, more in .cask_resource) with the magic by
    chance in .data: a bad version, a header claiming 1 TiB, the magic in the section's last bytes."""
    vadd = str(source("vadd.cu", VADD))
    cask = nvcc_out("vadd_sm80_sm90_ptx.fatbin", "-fatbin", "-gencode=arch=compute_80,code=sm_80",
                    "-gencode=arch=compute_90,code=[sm_90,compute_90]", vadd)
    nv = nvcc_out("vadd_sm75.fatbin", "-fatbin", "-gencode=arch=compute_75,code=sm_75", vadd)
    chance = MAGIC + struct.pack("<HHQ", 7, 16, 64) + bytes(64) + MAGIC + struct.pack("<HHQ", 1, 16, 1 << 40) + bytes(3) + MAGIC
    asm = "".join('__asm__(".pushsection %s, \\"a\\"\\n.balign 16\\n.incbin \\"%s\\"\\n.popsection\\n");\n' % (sec, p)
                  for sec, p in ((".nv_fatbin", nv), (".cask_resource", cask)))
    c_file = tmp_path / "vendor.c"
    c_file.write_text(asm + '__attribute__((section(".data.chance"))) unsigned char chance[] = {%s};\n' % ", ".join(map(str, chance)))
    so = tmp_path / "libvendor.so"
    run(["cc", "-shared", "-fPIC", str(c_file), "-o", str(so)])
    region = Region(so.read_bytes(), str(so))
    seen = _c_answers(region)
    c, py = _both(region, monkeypatch)
    assert c == py and seen["rejected"] == 3, seen  # the three chance matches, by structure
    assert [(name, sorted(e.target for e in entries)) for name, entries in c["entries"][0]] == [
        (".cask_resource", ["compute_90", "sm_80", "sm_90"])]
    for deep in (False, True):
        assert _report(so, deep, monkeypatch, False) == _report(so, deep, monkeypatch, True)


def test_strict_doubt_leaves_the_error_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where parse_fatbin raises (bytes after the containers that are not one), the C reader
    answers None and the message is the Python reader's."""
    try:
        data = fu.cuda_fatbin_seed().read_bytes()
    except fu.MissingTool as exc:
        pytest.skip(str(exc))
    bad = Region(data + b"\x01" + bytes(15), "bad.fatbin")
    assert fastscan.fatbin(bad, fb.FatbinEntry, strict=True) is None
    assert fastscan.fatbin(Region(data, "good.fatbin"), fb.FatbinEntry, strict=True) is not None
    c, py = _both(bad, monkeypatch)
    assert c == py and c["raw"].startswith("InspectError: bad.fatbin: bad fat binary magic")


@pytest.mark.parametrize("seed", [fu.cuda_fatbin_seed, fu.cuda_so_seed])
def test_mutated_nvcc_output_reads_alike(seed: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutations aimed at ELF headers and container/entry headers: the same readings (or the
    same error) and the same report, default and deep, with and without the C reader."""
    try:
        data = seed().read_bytes()
    except fu.MissingTool as exc:
        pytest.skip(str(exc))
    spots = fu.hot_spots(data)
    at = data.find(MAGIC)
    while at >= 0:  # every container header and the entry header after it
        spots += list(range(at, min(at + 16 + 64, len(data))))
        at = data.find(MAGIC, at + 4)
    path = tmp_path / ("input.fatbin" if seed is fu.cuda_fatbin_seed else "input.so")
    seen: Counter[str] = Counter()

    @settings(max_examples=EXAMPLES // 2, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(ops=st.lists(OPS, min_size=1, max_size=6))
    def one(ops: list) -> None:  # type: ignore[type-arg]
        mutated = fu.apply(data, ops, spots)
        region = Region(mutated, "input")
        seen.update(_c_answers(region))
        c, py = _both(region, monkeypatch)
        assert c == py
        path.write_bytes(mutated)
        for deep in (False, True):
            assert _report(path, deep, monkeypatch, False) == _report(path, deep, monkeypatch, True)

    one()
    # both sides were reached: C answers and C doubts (raw fat binary); the scan ran (library)
    assert seen["strict"] and seen["strict-doubt" if seed is fu.cuda_fatbin_seed else "scan"], seen
