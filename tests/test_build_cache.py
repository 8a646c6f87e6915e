"""The device-code cache and the per-device ocloc job, with real ocloc behind a logging wrapper."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict
from pathlib import Path

import pytest

from aotwheel.backends.intel.buildsteps.ocloc_job import run_job
from aotwheel.buildsteps.cache import CacheKey, DeviceCodeCache, atomic_write, default_root
from aotwheel.errors import ToolchainError

from _build_util import REPO, compile_spirv, logged_runs, ocloc_logger, require, run
from conftest import CLANG, LLVM_SPIRV, ocloc_output

pytestmark = pytest.mark.usefixtures("builds")

KEY = CacheKey(input_sha256="0" * 64, target="12.60.7", tool="ocloc", tool_version="22.43", tool_sha256="a" * 64, options="")


@pytest.fixture(scope="module")
def spv(tmp_path_factory) -> Path:
    require(CLANG, LLVM_SPIRV)
    out = tmp_path_factory.mktemp("spv") / "reduce.spv"
    compile_spirv(REPO / "csrc" / "kernels" / "reduce.cl", out)
    return out


@pytest.mark.parametrize(
    "field,value",
    [("input_sha256", "1" * 64), ("target", "12.55.8"), ("tool", "nvcc"), ("tool_sha256", "b" * 64),
     ("tool_version", "24.1"), ("options", "-cl-intel-greater-than-4GB-buffer-required"), ("flags", ("-x",))],
)
def test_every_key_field_changes_the_digest(field, value):
    other = CacheKey(**{**asdict(KEY), field: value})
    assert other.digest() != KEY.digest()
    assert CacheKey(**asdict(KEY)).digest() == KEY.digest()


def test_digest_is_the_schema_2_key_json_so_objects_stored_by_earlier_releases_still_hit():
    # Key schema 2 names an object by the sha256 of its fields and the schema as sorted JSON (flags a
    # list): what every earlier release stored in local caches and remote stores under.
    fields = {"input_sha256": "0" * 64, "target": "12.60.7", "tool": "ocloc", "tool_version": "22.43",
              "tool_sha256": "a" * 64, "options": "-x", "flags": ["-exclude_ir"]}
    text = json.dumps({"schema": 2, **fields}, sort_keys=True)
    key = CacheKey(**{**fields, "flags": ("-exclude_ir",)})  # type: ignore[arg-type]
    assert key.digest() == hashlib.sha256(text.encode()).hexdigest()


def test_default_root_follows_env(monkeypatch, tmp_path):
    monkeypatch.delenv("AOTWHEEL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_root() == tmp_path / "xdg" / "aotwheel"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_root() == tmp_path / "home" / ".cache" / "aotwheel"
    monkeypatch.setenv("AOTWHEEL_CACHE_DIR", str(tmp_path / "mine"))
    assert default_root() == tmp_path / "mine"
    for off in ("off", "OFF", "0", "none"):
        monkeypatch.setenv("AOTWHEEL_CACHE_DIR", off)
        assert default_root() is None


def test_get_put_and_counters(tmp_path):
    cache = DeviceCodeCache(tmp_path)
    assert cache.get(KEY) is None
    cache.put(KEY, b"binary")
    assert cache.get(KEY) == b"binary"
    assert cache.get(CacheKey(**{**asdict(KEY), "target": "12.0.0"})) is None
    s = cache.stats()
    assert (s.hits, s.misses, s.stores) == (1, 2, 1)
    log = (tmp_path / "v2" / "events.log").read_text().split("\n")
    assert log[0].startswith("miss ") and log[1].startswith("store ") and log[2].startswith("hit ")


def test_disabled_cache_never_stores_or_hits(tmp_path):
    cache = DeviceCodeCache(None)
    cache.put(KEY, b"x")
    assert cache.get(KEY) is None and not cache.enabled


def test_atomic_write_leaves_no_temporaries_and_replaces(tmp_path):
    target = tmp_path / "d" / "f.bin"
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert os.listdir(target.parent) == ["f.bin"]


def test_concurrent_writers_never_expose_partial_entries(tmp_path):
    cache = DeviceCodeCache(tmp_path)
    payloads = [bytes([i]) * 300_000 for i in range(8)]
    seen: list[bytes | None] = []

    def writer(p: bytes) -> None:
        cache.put(KEY, p)

    def reader() -> None:
        for _ in range(200):
            seen.append(cache.get(KEY))

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s is None or s in payloads for s in seen)
    assert cache.get(KEY) in payloads


def test_job_runs_ocloc_once_then_hits(spv, tmp_path):
    require("ocloc")
    wrapper, log = ocloc_logger(tmp_path / "bin")
    cache = DeviceCodeCache(tmp_path / "cache")
    kw = dict(spirv=str(spv), device="pvc", ocloc=str(wrapper), ocloc_version="v", cache=cache)
    first = run_job(output=str(tmp_path / "a.bin"), **kw)
    assert not first.cache_hit and len(logged_runs(log)) == 1
    second = run_job(output=str(tmp_path / "b.bin"), **kw)
    assert second.cache_hit and len(logged_runs(log)) == 1
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    # Independent check: ocloc itself produces the same bytes for this job.
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc", "-output", "ref",
         "-out_dir", str(tmp_path), "-output_no_suffix", "-exclude_ir"])
    assert ocloc_output(tmp_path, "ref").read_bytes() == (tmp_path / "b.bin").read_bytes()
    # Other options are another key: ocloc runs again.
    run_job(output=str(tmp_path / "c.bin"), options="-cl-intel-greater-than-4GB-buffer-required", **kw)
    assert len(logged_runs(log)) == 2
    assert logged_runs(log)[1].endswith("-options -cl-intel-greater-than-4GB-buffer-required")


def test_job_failure_shows_ocloc_log_and_raises_one_line(spv, tmp_path, capsys):
    require("ocloc")
    bad = tmp_path / "bad.spv"
    bad.write_bytes(spv.read_bytes()[:64])  # truncated module: ocloc rejects it
    with pytest.raises(ToolchainError) as err:
        run_job(spirv=str(bad), device="pvc", output=str(tmp_path / "o.bin"), ocloc="ocloc",
                ocloc_version="v", cache=DeviceCodeCache(tmp_path / "cache"))
    assert "\n" not in str(err.value) and "-device pvc" in str(err.value)
    assert capsys.readouterr().err.strip()  # ocloc's own log was shown
    assert not (tmp_path / "o.bin").exists()
    assert DeviceCodeCache(tmp_path / "cache").stats().stores == 0


def _cli(args: list[str], **env: str):
    import subprocess
    import sys

    from _build_util import PYTHONPATH

    full = dict(os.environ, PYTHONPATH=PYTHONPATH, **env)
    return subprocess.run([sys.executable, "-m", "aotwheel", "build", *args], capture_output=True, text=True, env=full)


def test_cli_build_cache_reports_counters(tmp_path):
    import json

    cache = DeviceCodeCache(tmp_path)
    cache.get(KEY)
    cache.put(KEY, b"x")
    cache.get(KEY)
    proc = _cli(["cache", "--json"], AOTWHEEL_CACHE_DIR=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["root"] == str(tmp_path / "v2")
    assert (doc["hits"], doc["misses"], doc["stores"], doc["remote_hits"], doc["remote_failures"]) == (1, 1, 1, 0, 0)
    assert json.loads(_cli(["cache", "--json"], AOTWHEEL_CACHE_DIR="off").stdout)["root"] is None


def test_cli_build_toolchain_missing_ocloc_is_one_line_exit_2(tmp_path):
    require(CLANG, LLVM_SPIRV)
    proc = _cli(["toolchain", "--devices", "pvc"], AOTWHEEL_OCLOC=str(tmp_path / "no" / "ocloc"),
                AOTWHEEL_CACHE_DIR=str(tmp_path / "c"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aotwheel: error: Cannot run ocloc") and "intel-opencl-icd" in lines[0]


def test_layout_1_entries_are_ignored_without_error(tmp_path):
    """A cache root written by the schema-1 code (v1/, keys with the ocloc path) is left alone."""
    old = tmp_path / "v1" / "objects" / "ab"
    old.mkdir(parents=True)
    (old / ("ab" * 32 + ".bin")).write_bytes(b"aotwheel-cache-object 1 " + b"0" * 64 + b"\nold")
    (tmp_path / "v1" / "events.log").write_text("hit " + "ab" * 32 + " pvc x.spv\n" * 3)
    cache = DeviceCodeCache(tmp_path)
    assert cache.stats().hits == 0 and cache.get(KEY) is None
    cache.put(KEY, b"new")
    assert cache.get(KEY) == b"new"
    assert (tmp_path / "v1" / "objects" / "ab" / ("ab" * 32 + ".bin")).is_file()  # untouched
