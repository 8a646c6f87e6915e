"""The fast zebin reader the default inspect uses must give exactly what the full reader gives:
on vllm-xpu-kernels' icpx-built zebins, and on every damaged variant of them (the
same answer, or the same one-line error)."""

from __future__ import annotations

import random

import pytest

from aotwheel.backends.intel.kinds import sniff
from aotwheel.backends.intel.zebin import read_zebin, read_zebin_summary
from aotwheel.errors import InspectError
from aotwheel.formats.ar import read_ar
from aotwheel.formats.region import Region
from aotwheel.inspector import _mapped, inspect

from _inspect_util import DATA


def _outcome(fn, region):
    try:
        return ("ok", fn(region))
    except InspectError as exc:
        return ("error", str(exc))


@pytest.fixture(scope="module")
def zebins(tmp_path_factory) -> list[bytes]:
    # Debian's ocloc 22.43 writes patch-token binaries, not zebin: the zebins are icpx's.
    d = tmp_path_factory.mktemp("zebins")
    found: list[bytes] = []
    import zstandard

    so = d / "libmhc.so"
    so.write_bytes(zstandard.ZstdDecompressor().stream_reader((DATA / "vllm-xpu-kernels-0.1.16.2" / "libmhc_kernels_xe_2.so.zst").open("rb")).read())
    with _mapped(so) as region:
        for img in inspect(so).files[0].images:
            if img.kind != "ar":
                continue
            sub = region.sub(img.offset, img.size, "image")
            found += [sub.read(m.offset, m.size, m.name) for m in read_ar(sub) if m.name.startswith("64.")]
    assert all(sniff(b[:64]) == "zebin" for b in found)
    assert len(found) > 3, "the vllm library carries zebin members"
    return found


def test_same_answer_on_real_zebins(zebins):
    with_notes = 0
    for data in zebins:
        region = Region(data, "member")
        full = read_zebin(region)
        with_notes += full.ip_u32 is not None and full.gfx_core is not None
        assert read_zebin_summary(region) == full
    assert with_notes >= 4  # the inputs exercise the note path, not only the defaults


def test_same_answer_or_same_error_on_damaged_zebins(zebins):
    rng = random.Random(13)
    checked = 0
    for data in zebins:
        # Damage where the fast path looks: ELF header, section table, string table, notes.
        hot = list(range(0, 64)) + list(range(int.from_bytes(data[0x28:0x30], "little"), len(data)))
        notes_at = data.find(b"IntelGT")
        if notes_at > 0:
            hot += list(range(max(0, notes_at - 12), notes_at + 200))
        for _ in range(300):
            buf = bytearray(data)
            for _ in range(rng.choice((1, 2, 4))):
                pos = rng.choice(hot) % len(buf)
                buf[pos] = rng.choice((0, 0xFF, rng.randrange(256), buf[pos] ^ 0x80))
            if rng.random() < 0.1:
                buf = buf[: rng.randrange(len(buf))]
            region = Region(bytes(buf), "member")
            assert _outcome(read_zebin_summary, region) == _outcome(read_zebin, region)
            checked += 1
    assert checked >= 900


def test_same_answer_inside_a_larger_buffer(zebins):
    """Members are windows of the mapped library: offsets are relative to the window."""
    data = zebins[-1]
    blob = b"\xAA" * 4099 + data + b"\x55" * 77
    region = Region(blob, "lib", start=4099, size=len(data))
    assert read_zebin_summary(region) == read_zebin(Region(data, "member"))
