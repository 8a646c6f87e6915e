"""The JIT-cache entry format (aotwheel.jitcache) without a runtime: round trip, key separation,
and fuzzed entries — a damaged file is never handed out and never raises."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotwheel.jitcache import JitCache, JitKey, default_root

KEY = JitKey(image_sha256="ab" * 32, device="cpu", ip=None, platform="Intel(R) OpenCL", driver="2026.1", options="")


def test_round_trip_and_private_modes(tmp_path):
    cache = JitCache(tmp_path / "jit")
    assert cache.get(KEY).data is None and cache.get(KEY).problem is None  # a plain miss
    assert cache.put(KEY, b"binary") is None
    assert cache.get(KEY).data == b"binary"
    path = cache.path(KEY)
    assert path is not None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "jit").stat().st_mode) == 0o700


def test_every_key_field_separates_entries(tmp_path):
    cache = JitCache(tmp_path)
    cache.put(KEY, b"a")
    for field, value in (("image_sha256", "cd" * 32), ("device", "gpu"), ("ip", "12.60.7"), ("platform", "x"), ("options", "-O0")):
        other = JitKey(**{**KEY.__dict__, field: value})
        assert cache.get(other).data is None, field
    # the driver shares the slot: a new driver's lookup drops the old entry, with a reason
    newer = JitKey(**{**KEY.__dict__, "driver": "2027.1"})
    found = cache.get(newer)
    assert found.data is None and found.problem and "driver" in found.problem
    assert cache.get(KEY).data is None  # removed


def test_has_build_ignores_options_only(tmp_path):
    cache = JitCache(tmp_path)
    cache.put(JitKey(**{**KEY.__dict__, "options": "-cl-fast-relaxed-math"}), b"a")
    assert cache.has_build(KEY)
    assert not cache.has_build(JitKey(**{**KEY.__dict__, "driver": "other"}))
    assert not cache.has_build(JitKey(**{**KEY.__dict__, "device": "other"}))


def test_default_root_order(tmp_path):
    assert default_root({"AOTWHEEL_JIT_CACHE_DIR": "off"}) is None
    assert default_root({"AOTWHEEL_JIT_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert default_root({"XDG_CACHE_HOME": "/x"}) == Path("/x/aotwheel/jit")
    assert default_root({}) == Path.home() / ".cache" / "aotwheel" / "jit"


def test_a_file_in_place_of_the_folder_disables_the_cache(tmp_path):
    (tmp_path / "jit").write_text("not a folder")
    cache = JitCache(tmp_path / "jit")
    assert cache.put(KEY, b"a") is not None and cache.get(KEY).data is None


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=512), st.integers(0, 10_000), st.integers(0, 255))
def test_fuzzed_entries_are_rejected_not_raised(tmp_path, noise, position, value):
    cache = JitCache(tmp_path / "fz")
    cache.put(KEY, b"payload-" * 16)
    path = cache.path(KEY)
    assert path is not None
    blob = bytearray(path.read_bytes())
    mutated = bytes(blob)
    if noise:
        mutated = noise  # a completely foreign file
    elif blob:
        i = position % len(blob)
        blob[i] = value
        mutated = bytes(blob)
    path.write_bytes(mutated)
    found = cache.get(KEY)
    assert found.data is None or found.data == b"payload-" * 16
    if found.data is None:
        assert not path.exists() and found.problem
    os.makedirs(path.parent, exist_ok=True)
