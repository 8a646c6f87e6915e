"""aotwheel._fastscan (the C scanner) against the Python readers it stands in for (issue 13).

The contract: on any input each C function returns the Python reader's answer or None (then the
Python reader runs), never something else, and never crashes; ``inspect`` gives the same report
(or the same error) with and without it. Checked on real ocloc output (seeds shared with the
parser fuzzing, tests/_fuzz_util.py) and on hypothesis-mutated copies. The libFuzzer run of the
same C core is tests/test_fuzz_fastscan.py.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotwheel.backends.intel.kinds import sniff
from aotwheel.errors import InspectError
from aotwheel.formats import fastscan
from aotwheel.formats.ar import read_ar
from aotwheel.formats.elf import _count_tgtsym, _per_triple, _tgtsym_names
from aotwheel.formats.region import Region
from aotwheel.inspector import inspect

import _fuzz_util as fu
from _inspect_util import host_library, zstd_frame
from conftest import REPO

EXAMPLES = int(os.environ.get("AOTWHEEL_FASTSCAN_EXAMPLES", "300"))  # fuzz/fastscan_asan.py --examples raises it
OPS = st.tuples(st.sampled_from(fu.OPS), st.integers(-4096, 1 << 30), st.integers(0, 1 << 16), st.integers(0, 1 << 16))

needs_fastscan = pytest.mark.skipif(sys.version_info < (3, 11), reason="_fastscan needs the 3.11 limited API")


@pytest.fixture(autouse=True)
def _fastscan_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN", raising=False)


def _seed(make: Any) -> bytes:
    try:
        return make().read_bytes()  # type: ignore[no-any-return]
    except fu.MissingTool as exc:
        pytest.skip(str(exc))


def _python_members(region: Region) -> list[tuple[str, int, int, Any]] | None:
    """What fastscan.fat_binary may answer, from the Python readers: per member, the zebin facts,
    generic_ir's payload head, or "python" where the C scanner must hand over (None: read_ar raised)."""
    from aotwheel.backends.intel.legacy import ir_payload
    from aotwheel.backends.intel.zebin import read_zebin_summary

    try:
        members = read_ar(region)
    except InspectError:
        return None
    out: list[tuple[str, int, int, Any]] = []
    for m in members:
        if m.is_padding:
            continue
        body = region.sub(m.offset, m.size, "member")
        facts: Any = "python"
        try:
            if m.name == "generic_ir":
                if sniff(body.head(64)) == "ir-elf":
                    payload = ir_payload(body)
                    facts = payload.head(64) if payload is not None else b""
            elif sniff(body.head(64)) == "zebin":
                z = read_zebin_summary(body)
                facts = (z.ip_u32, z.product_family, z.gfx_core, z.version, z.has_spirv)
        except InspectError:
            pass
        out.append((m.name, m.offset, m.size, facts))
    return out


def _agrees(region: Region) -> bool:
    """fastscan.fat_binary's answer is None or, member by member, the Python one (or None)."""
    got = fastscan.fat_binary(region)
    if got is None:
        return True
    want = _python_members(region)
    assert want is not None, "C read an archive read_ar rejects"
    assert [w[:3] for w in want] == [g[:3] for g in got]
    for (name, _o, _s, w), g in zip(want, got):
        assert g[3] is None or g[3] == w, (name, g[3], w)
    return all(g[3] is not None for g in got)


def _report(path: Path, deep: bool, monkeypatch: pytest.MonkeyPatch, python_only: bool, descriptors_up_to: int | None = None) -> str:
    if python_only:
        monkeypatch.setenv("AOTWHEEL_NO_FASTSCAN", "1")
    else:
        monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN", raising=False)
    try:
        with pytest.MonkeyPatch.context() as mp:
            if descriptors_up_to is not None:  # 0: read as a large table is (no descriptors; C: fastscan.table_leaves)
                mp.setattr("aotwheel.formats.elf.DESCRIPTORS_ALWAYS_UP_TO", descriptors_up_to)
            return json.dumps(inspect(path, deep=deep).to_dict(), sort_keys=True)
    except InspectError as exc:
        return f"InspectError: {exc}"
    finally:
        monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN", raising=False)


def _same_report(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same report with and without the C scanner: default and deep, and the default report
    read as tables of more than DESCRIPTORS_ALWAYS_UP_TO entries are (the test inputs are small)."""
    for deep, up_to in ((False, None), (True, None), (False, 0)):
        assert _report(path, deep, monkeypatch, False, up_to) == _report(path, deep, monkeypatch, True, up_to)


def test_import_aotwheel_does_not_load_the_extension() -> None:
    code = "import sys, aotwheel; print(sorted(m for m in sys.modules if 'fastscan' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@needs_fastscan
def test_the_installed_package_has_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fastscan.module() is not None, "aotwheel._fastscan was not built into the wheel"
    monkeypatch.setenv("AOTWHEEL_NO_FASTSCAN", "1")
    assert fastscan.module() is None and fastscan.fat_binary(Region(b"!<arch>\n", "x")) is None
    monkeypatch.setenv("AOTWHEEL_NO_FASTSCAN", "0")
    assert fastscan.module() is not None


@needs_fastscan
@pytest.mark.parametrize("seed", [fu.fat_zebin_seed, fu.fat_seed])
def test_real_fat_binaries_read_alike(seed: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _seed(seed)
    region = Region(data, "fat")
    got = fastscan.fat_binary(region)
    assert got is not None
    _agrees(region)  # legacy (patch-token) members are left to Python
    if seed is fu.fat_zebin_seed:  # every member read in C: the zebins' notes and generic_ir's SPIR-V
        assert all(g[3] is not None for g in got) and sniff(got[-1][3]) == "spirv"
        assert [g[3][1] for g in got[:2]] == [1271, 1270]  # PVC, and ACM's product family
    path = tmp_path / "fat.ar"
    path.write_bytes(data)
    _same_report(path, monkeypatch)


@needs_fastscan
def test_real_zebin_summary_alike() -> None:
    from aotwheel.backends.intel.zebin import read_zebin_summary

    data = _seed(fu.zebin_seed)
    z = read_zebin_summary(Region(data, "z"))
    assert fastscan.zebin_summary(Region(data, "z")) == (z.ip_u32, z.product_family, z.gfx_core, z.version, z.has_spirv)


def _gnu_ar(members: list[tuple[str, bytes]], long_names: bool = True) -> bytes:
    """A GNU ar archive; names of 16+ characters go to the '//' table when ``long_names``."""
    table, entries = b"", []
    for name, body in members:
        field = f"{name}/"
        if long_names and len(field) > 16:
            field = f"/{len(table)}"
            table += name.encode() + b"/\n"
        entries.append((field, body))
    out = b"!<arch>\n"
    if table:
        out += f"{'//':<16}{'':<32}{len(table):<10}`\n".encode() + table + b"\n" * (len(table) & 1)
    for field, body in entries:
        out += f"{field:<16}{'0':<12}{'0':<6}{'0':<6}{'644':<8}{len(body):<10}`\n".encode() + body + b"\n" * (len(body) & 1)
    return out


@needs_fastscan
def test_long_member_names_and_odd_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fat = Region(_seed(fu.fat_zebin_seed), "fat")
    parts = [(m.name, fat.read(m.offset, m.size, "m")) for m in read_ar(fat)]
    renamed = [(f"64.{name}-with-a-long-suffix" if name.startswith("64.") else name, body + b"x") for name, body in parts]
    data = _gnu_ar(renamed)
    got = fastscan.fat_binary(Region(data, "long"))
    assert got is not None and [g[0] for g in got] == [n for n, _ in renamed if not n.startswith("pad_")]
    assert _agrees(Region(data, "long"))
    path = tmp_path / "long.ar"
    path.write_bytes(data)
    _same_report(path, monkeypatch)
    bsd = data.replace(b"/0              ", b"#1/4            ", 1)  # BSD names: the Python reader's
    assert fastscan.fat_binary(Region(bsd, "bsd")) is None


@needs_fastscan
@pytest.mark.parametrize("seed", [fu.fat_zebin_seed, fu.fat_seed])
def test_mutated_fat_binaries_same_answer_or_none(seed: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _seed(seed)
    spots = fu.hot_spots(data)
    path = tmp_path / "input.ar"
    seen = Counter[str]()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(ops=st.lists(OPS, min_size=1, max_size=6))
    def one(ops: list) -> None:
        mutated = fu.apply(data, ops, spots)
        region = Region(mutated, "input")
        got = fastscan.fat_binary(region)
        seen["none" if got is None else "all-c" if _agrees(region) else "partly-c"] += 1
        path.write_bytes(mutated)
        _same_report(path, monkeypatch)

    one()
    assert seen["none"] and seen["all-c" if seed is fu.fat_zebin_seed else "partly-c"], seen  # both sides were reached


@needs_fastscan
@pytest.mark.parametrize("seed", [fu.host_so_seed, fu.icpx_so_seed, fu.listed_size_so_seed])
def test_mutated_host_libraries_same_report(seed: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: None) -> None:
    """.tgtimg tables, .tgtsym names and leaf images (fastscan.tgtsym, fastscan.leaves)."""
    data = _seed(seed)
    spots = fu.hot_spots(data)
    path = tmp_path / "input.so"
    path.write_bytes(data)
    _same_report(path, monkeypatch)

    @settings(max_examples=EXAMPLES // 2, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(ops=st.lists(OPS, min_size=1, max_size=6))
    def one(ops: list) -> None:
        path.write_bytes(fu.apply(data, ops, spots))
        _same_report(path, monkeypatch)

    one()


@needs_fastscan
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None)
@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\0", b"")) | st.sampled_from(
    [b"sycl-spir64-unknown-unknown.k", b"sycl-spir64_gen-unknown-unknown.k", b"k", b".k", b"k.", b".", b"\xff.k", b"a.b.c"]),
    max_size=40), st.binary(max_size=3))
def test_tgtsym_counts_alike(names: list[bytes], tail: bytes) -> None:
    raw = b"\0".join(names) + tail
    got = fastscan.tgtsym(Region(raw or b"\0", "tgtsym"), 0, len(raw))
    assert got is not None
    per_prefix, n_names, kernels = got
    entries = _tgtsym_names(raw)
    per_triple, distinct, prefixes = _count_tgtsym(entries)
    assert ([p for p, _ in per_prefix], _per_triple(per_prefix), n_names, kernels) == (prefixes, per_triple, len(entries), distinct)
    assert per_prefix == list(Counter(e.partition(b".")[0] for e in entries).items())


@needs_fastscan
def test_fuzzer_findings_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs fuzz/fastscan_long.py found (tests/data/fastscan), as generic_ir members."""
    for found in sorted((REPO / "tests" / "data" / "fastscan").iterdir()):
        data = _gnu_ar([("pad_0", b"\0" * 8), ("generic_ir", found.read_bytes())])
        got = fastscan.fat_binary(Region(data, found.name))
        assert got is not None and _agrees(Region(data, found.name)), found.name
        path = tmp_path / "found.ar"
        path.write_bytes(data)
        _same_report(path, monkeypatch)


@needs_fastscan
@pytest.mark.parametrize("name", ["libmhc_kernels_xe_2.so.zst", "xpumem_allocator.abi3.so.zst"])
def test_vllm_excerpts_same_report(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real icpx-built libraries (tests/data): fat binaries with zebin and generic_ir members,
    duplicate member names, a core family the tables do not name."""
    import zstandard

    path = tmp_path / name.removesuffix(".zst")
    path.write_bytes(zstandard.ZstdDecompressor().decompress((REPO / "tests" / "data" / "vllm-xpu-kernels-0.1.16.2" / name).read_bytes(),
                                                             max_output_size=1 << 26))
    _same_report(path, monkeypatch)
    assert inspect(path).files[0].native_targets


@needs_fastscan
def test_leaves_hands_odd_inputs_to_python_without_an_exception() -> None:
    """A host record without the fields the C loop reads, or a negative region start: no leaf is
    made and no exception is left set (found by review: a SystemError and a read before the buffer)."""
    mod = fastscan.module()
    assert mod is not None
    spirv = b"\x03\x02\x23\x07" * 4

    class NoSize:
        offset = 0

    class Leaf:
        offset, size, triple, section, compile_options, link_options, listed_size = 0, 4, None, None, None, None, None

    assert mod.leaves(spirv, 0, 0, [NoSize()], 0, 1, 0, object, -1) == ([], 0, [])
    assert mod.leaves(spirv, -8, 0, [Leaf()], 0, 1, 0, object, -1)[:2] == ([], 0)
    # slot_addends: keys that are no slot are left out; values that are no u64 are the Python loop's.
    from aotwheel.model import Image

    rec = mod.slot_addends({16: 4, 24: 7, 48: -1, 64: "x", -16: 1, 1 << 70: 1, "k": 2, 32: (1 << 64) - 1}, 16, 4)
    assert [(int.from_bytes(rec[i:i + 8], "little"), int.from_bytes(rec[i + 8:i + 16], "little")) for i in range(0, 64, 16)] == [
        (4, 1), (0, 2), (0, 2), (0, 2)]
    # table_leaves with one entry: its slot's addend (4) wins over the table's address (16).
    table = (16).to_bytes(8, "little") + (4).to_bytes(8, "little")
    shared = (spirv + table, 16, 1, 0, rec[:16], 16, [0, 0, 64], [0], [16], ["s"], ["spir64"], 32)
    made, stop, kinds, host = mod.table_leaves(*shared, 0, 100, 7, Image, -1)
    assert (stop, kinds, host, [(m.index, m.offset, m.size, m.kind, m.section) for m in made]) == (1, ["spirv"], None, [(7, 104, 4, "spirv", "s")])
    with pytest.raises(ValueError, match="fewer addend records"):
        mod.table_leaves(*shared[:4], b"", *shared[5:], 0, 0, 0, Image, -1)


@needs_fastscan
def test_compressed_sycl_ir_leaves_made_in_c_read_as_python_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """zstd-compressed SYCL IR images (icpx --offload-compress; 19k in an XPU environment) are made
    by the C loop when their frame headers are plain: real frames of the real zstd tool (checksum
    or not, content size or not, many 4 kB blocks), listed at their size, larger (onemkl lists the
    decompressed size) and past the section; a compressed native image stays the Python loop's, and
    so do a damaged frame and a frame cut short (each its own library: the Python reader's error).
    Same report, default and deep, as the Python readers."""
    spv = fu.spirv_seed().read_bytes()
    frames = [zstd_frame(tmp_path, spv, "plain"), zstd_frame(tmp_path, spv, "nocheck", "--no-check"),
              zstd_frame(tmp_path, spv, "nosize", "--no-content-size"),
              zstd_frame(tmp_path, spv * 40, "blocks", "--ultra", "-22", "-B4096")]
    so = host_library(tmp_path, name="good", images=[("spir64", f, len(f)) for f in frames] + [
        ("spir64", frames[0], len(spv)),  # the decompressed size, as onemkl-sycl 2026.2 lists it
        ("spir64_gen", frames[1], len(frames[1])),  # native: decompressed for its targets
        ("spir64", frames[2], len(frames[2]) + 4096),  # the last one: listed past its section's end
    ])
    _same_report(so, monkeypatch)
    fr = inspect(so).files[0]
    plain = [i for i in fr.images if i.kind == "zstd" and i.content == "spirv" and i.triple == "spir64"]
    assert len(plain) == 6 and {i.decompressed_size for i in plain} == {len(spv), len(spv) * 40, None}
    assert [i.listed_size for i in plain].count(len(spv)) == 1
    # The C loop made the plain ones itself: asked over the whole table, it stops at the native image.
    from aotwheel.formats.elf import open_elf, read_host
    from aotwheel.model import Image

    buf = so.read_bytes()
    host = read_host(open_elf(Region(buf, so.name)), all_descriptors=False, descriptors_up_to=0)
    made, pos, kinds = fastscan.module().leaves(buf, 0, 0, host.images, 0, len(host.images), 0, Image, -1)
    assert pos == 5 and kinds == ["spirv"] and [m.size for m in made] == [len(f) for f in frames] + [len(frames[0])]
    assert made[4].listed_size == len(spv) and made[3].decompressed_size == len(spv) * 40
    assert fastscan.module().leaves(buf, 0, 0, host.images, 6, 7, 6, Image, -1)[1] == 7  # past the section: C too
    # Read as a large table is (read_host(leaf_scan=True)): no HostImage for the images in bundle
    # sections that the C loop resolves, and table_leaves makes the same Images from the table itself, stopping at the same
    # image; the one it stops at is the HostImage the full read made.
    deferred = read_host(open_elf(Region(buf, so.name)), all_descriptors=False, descriptors_up_to=0, leaf_scan=True)
    assert deferred.scan is not None and deferred.scan.count == len(host.images)
    assert deferred.images == [host.images[6]]  # listed past its section: only the Python loop reads it
    from dataclasses import asdict

    got, stop, got_kinds, native = deferred.scan.leaves(0, 0, 0, 0, Image, -1)
    assert (stop, got_kinds, [asdict(m) for m in got]) == (5, ["spirv"], [asdict(m) for m in made])
    assert native == host.images[5] and native.entry == 5  # the native image it stops at, as the full read made it
    assert not any(gc.is_tracked(m) for m in got)  # atoms and an empty list: no cycle to collect (csrc/_fastscan.c make_leaf)
    none, stop, _kinds, native = deferred.scan.leaves(6, 0, 0, 6, Image, -1)
    assert (none, stop, native) == ([], 6, None)  # past its section: not resolved here; read_host made its HostImage
    damaged = bytearray(frames[0])
    damaged[4] |= 0x08  # a reserved frame-header bit: zstd rejects it
    for name, blob in (("damaged", bytes(damaged)), ("cut", frames[3][:-5])):
        bad = host_library(tmp_path, name=name, images=[("spir64", frames[0], len(frames[0])), ("spir64", blob, len(blob))])
        _same_report(bad, monkeypatch)
        host = read_host(open_elf(Region(bad.read_bytes(), bad.name)), all_descriptors=False, descriptors_up_to=0)
        assert fastscan.module().leaves(bad.read_bytes(), 0, 0, host.images, 0, 2, 0, Image, -1)[1] == 1, name


@needs_fastscan
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([8, 8, 8, 1, 8 | (5 << 32)]), st.integers(-(1 << 63), (1 << 63) - 1)), max_size=12))
def test_relative_records_read_as_the_python_loop_reads_rows(rows: list[tuple[int, int, int]]) -> None:
    """fastscan.relative_records (the .tgtimg slots' addends as records, read through SlotAddends)
    against _slot_relocs' Python loop over the same Elf64_Rela rows: RELATIVE or not, on a slot,
    between slots or past them, negative addends, a slot written twice (the last row wins)."""
    import struct

    from aotwheel.formats.elf import SlotAddends

    first, count = 0x1000, 4
    raw = b"".join(struct.pack("<QQq", first + 8 * pos, info, addend) for pos, info, addend in rows)
    want: dict[int, int] = {}
    for r_offset, r_info, addend in struct.iter_unpack("<QQq", raw):
        if first <= r_offset < first + 16 * count and not (r_offset - first) % 16 and (r_info & 0xFFFFFFFF) == 8:
            want[r_offset] = addend
    records = bytearray(16 * count)
    filled = fastscan.module().relative_records(raw or b"\0", 0, 0, len(rows), first, first + 16 * count, 16, records)
    got = SlotAddends(records, first, count)
    assert (filled, dict(got), len(got)) == (len(want), want, len(want))
    assert all(got.get(k) == v for k, v in want.items()) and got.get(first + 8) is None and got.get(first + 16 * count) is None


@needs_fastscan
def test_leaf_images_are_untracked_and_an_object_without_collector_support_is_left_alone() -> None:
    """make_leaf untracks the Images it makes (they can be in no reference cycle); whatever the
    class argument makes is returned, and an object the collector does not know (a float: no GC
    header to touch) is left as it is."""
    mod = fastscan.module()
    spirv = b"\x03\x02\x23\x07" * 4

    class Leaf:
        offset, size, triple, section, compile_options, link_options, listed_size = 0, 16, "spir64", "s", None, None, None

    from aotwheel.model import Image

    made, stop, kinds = mod.leaves(spirv, 0, 0, [Leaf()], 0, 1, 0, Image, -1)
    assert (stop, kinds, [(m.kind, m.size, m.section) for m in made]) == (1, ["spirv"], [("spirv", 16, "s")])
    assert gc.is_tracked(Image(0, 0, 0, "spirv", None, False)) and not gc.is_tracked(made[0])
    made, stop, kinds = mod.leaves(spirv, 0, 0, [Leaf()], 0, 1, 0, lambda *args: float(len(args)), -1)
    assert (made, stop, kinds) == ([7.0], 1, ["spirv"])


@needs_fastscan
def test_find_magics_finds_what_find_finds() -> None:
    """aotwheel.carried's search (one C pass for several magic numbers) against bytes.find, on
    random data with the magic numbers planted at every alignment, overlapping and at the edges."""
    import random

    from aotwheel import carried

    fs = fastscan.module()
    assert hasattr(fs, "find_magics"), "aotwheel._fastscan was built without find_magics"
    needles = (b"\x7fELF", b".version ", b"\x03\x02\x23\x07")
    # A short magic fits where the longest does not (the fuzzer's first finding).
    assert fs.find_magics(b"\x7fELF", 0, 4, needles, 9) == [(0, 0)]
    assert fs.find_magics(b"..\x03\x02\x23\x07", 1, 5, needles, 9) == [(2, 2)]
    rng = random.Random(39)
    for trial in range(200):
        data = bytearray(rng.randrange(256) for _ in range(rng.randrange(0, 600)))
        for _ in range(rng.randrange(0, 6)):
            needle = rng.choice(needles)
            at = rng.randrange(0, len(data) + 1)
            data[at:at] = needle
        data = bytes(data)
        lo = rng.randrange(0, len(data) + 1)
        hi = rng.randrange(lo, len(data) + 1)
        plain = sorted((at, i) for i, n in enumerate(needles) for at in _all(data, n, lo, hi))
        cap = rng.choice((1, 3, 1 << 20))
        assert fs.find_magics(data, lo, hi - lo, needles, cap) == [tuple(x) for x in plain][:cap], trial
        with pytest.MonkeyPatch.context() as mp:  # the Python search of the same module agrees
            mp.setenv("AOTWHEEL_NO_FASTSCAN", "1")
            assert carried._hits(data, lo, hi, needles, 1 << 20) == plain


def _all(data: bytes, needle: bytes, lo: int, hi: int) -> list[int]:
    out, pos = [], lo
    while (at := data.find(needle, pos, hi)) >= 0:
        out.append(at)
        pos = at + 1
    return out


@needs_fastscan
def test_spirv_size_in_c_is_the_python_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The carried SPIR-V module's extent (backends.intel.standalone.spirv_size) in C and in Python,
    on clang-15 + llvm-spirv-15 output, with bytes after it, cut short and mutated."""
    import random

    from aotwheel.backends.intel.standalone import spirv_size

    spv = _seed(fu.spirv_seed)
    fs = fastscan.module()
    assert hasattr(fs, "spirv_size"), "aotwheel._fastscan was built without spirv_size"
    rng = random.Random(39)
    inputs = [spv, spv + spv, spv + bytes(64), spv[: len(spv) // 2], spv[:28]]
    for _ in range(300):
        data = bytearray(rng.choice(inputs[:3]))
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(0, len(data))
            data[at] = rng.randrange(256)
        inputs.append(bytes(data))
    for data in inputs:
        region = Region(data, "spv")
        c = spirv_size(region)
        monkeypatch.setenv("AOTWHEEL_NO_FASTSCAN", "1")
        assert spirv_size(region) == c
        monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN")
    assert spirv_size(Region(spv + spv, "spv")) == len(spv)  # the first module ends where the second begins
