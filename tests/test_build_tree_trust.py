"""A damaged build tree or cache folder is one error line or one warning, never a traceback or a
write through a planted link (issue 37 item 4). The build steps run as CMake runs them
(`python -m aotwheel.buildsteps intel ocloc --plan ... --edge ...`); the cache is aotwheel's own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from aotwheel.buildsteps.cache import CacheKey, DeviceCodeCache

from _build_util import PYTHONPATH

KEY = CacheKey("a" * 64, "12.60.7", "ocloc", "22.43", "b" * 64, "")


def _step(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    return subprocess.run([sys.executable, "-m", "aotwheel.buildsteps", "intel", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def _edge(**data: object) -> dict:
    job = {"spirv": "/nowhere/k.spv", "options": "", "cost_id": "", "fatbin": "", "info": "", "ir": False,
           "natives": [{"device": "pvc", "ip": "12.60.7", "output": "/nowhere/k.pvc.bin"}], **data}
    return {"id": "k.ocloc", "step": "ocloc", "source": "/nowhere/k.cl", "outputs": ["/nowhere/k.pvc.bin"],
            "inputs": [], "depfile": "", "comment": "", "pool": "", "data": job}


def _plan(edges: object) -> dict:
    return {"schema": 1, "vendor": "intel", "name": "k", "toolchain": "/nowhere/toolchain.json", "targets": ["pvc"],
            "outputs": [], "images": [], "record": "", "settings": "", "note": "", "edges": edges}


PLANS = {
    "a list": "[]",
    "null": "null",
    "edges as a string": json.dumps(_plan("k.ocloc")),
    "an edge as a number": json.dumps(_plan([7])),
    "deep nesting": "[" * 200_000 + "]" * 200_000,
    "outputs as a string": json.dumps(_plan([{**_edge(), "outputs": "/nowhere/x"}])),
    "its job without natives' ip": json.dumps(_plan([_edge(natives=[{"device": "pvc", "output": "/x"}])])),
    "its job as a list": json.dumps(_plan([{**_edge(), "data": [1, 2]}])),
    "a device name with a newline": json.dumps(_plan([_edge(natives=[{"device": "pv\nc", "ip": "12.60.7", "output": "/x"}])])),
}


@pytest.mark.parametrize("name", PLANS)
def test_a_malformed_plan_is_one_error_line(name, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(PLANS[name])
    proc = _step("ocloc", "--plan", str(plan), "--edge", "k.ocloc")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("aotwheel: error:") and "re-run CMake configure" in lines[0] and str(plan) in lines[0]


def test_a_device_name_with_a_newline_stays_on_the_error_line(tmp_path):
    """Given by hand (not through a plan), the device reaches ocloc, which refuses it: the error
    line quotes it escaped instead of breaking in two."""
    ocloc = shutil.which("ocloc")
    if ocloc is None:
        pytest.skip("needs ocloc (ci/setup.sh installs intel-opencl-icd)")
    spv = tmp_path / "k.spv"
    spv.write_bytes(b"\x03\x02\x23\x07" + bytes(16))
    tc = tmp_path / "toolchain.json"
    tc.write_text(json.dumps({"ocloc": ocloc, "ocloc_version": "22.43", "ocloc_names": {}}))
    env_cache = {"AOTWHEEL_CACHE_DIR": "off"}
    proc = subprocess.run([sys.executable, "-m", "aotwheel.buildsteps", "intel", "ocloc", "--toolchain", str(tc),
                           "--spirv", str(spv), "--job", f"pv\nc=12.60.7={tmp_path / 'k.bin'}"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": PYTHONPATH, **env_cache}, timeout=120)
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("aotwheel: error:")]
    assert len(errors) == 1 and "pv\\nc" in errors[0], proc.stderr[-2000:]
    assert errors[0] == proc.stderr.strip().splitlines()[-1]  # nothing of it on a line of its own after it


def test_a_linked_objects_folder_is_never_written_through(tmp_path, capfd):
    outside = tmp_path / "outside"
    outside.mkdir()
    cache = DeviceCodeCache(tmp_path / "cache")
    cache.put(CacheKey("c" * 64, "x", "t", "1", "d" * 64, ""), b"first")  # makes v2/objects/
    digest = KEY.digest()
    (tmp_path / "cache" / "v2" / "objects" / digest[:2]).symlink_to(outside, target_is_directory=True)
    capfd.readouterr()
    cache.put(KEY, b"payload")
    cache.put(KEY, b"payload")
    assert list(outside.iterdir()) == []
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "symbolic link" in err[0] and digest[:2] in err[0], err
    assert not cache.enabled  # off for the rest of the process, as for any unusable root


def test_a_linked_events_log_is_never_appended_to(tmp_path, capfd):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    (tmp_path / "cache" / "v2").mkdir(parents=True)
    (tmp_path / "cache" / "v2" / "events.log").symlink_to(victim)
    cache = DeviceCodeCache(tmp_path / "cache")
    assert cache.get(KEY) is None
    cache.put(KEY, b"payload")
    assert victim.read_text() == "keep\n"
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "events.log is a symbolic link" in err[0], err


def test_a_linked_cache_root_is_the_users_choice_and_works(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    cache = DeviceCodeCache(tmp_path / "link")
    cache.put(KEY, b"payload")
    assert cache.get(KEY) == b"payload" and list((real / "v2" / "objects").iterdir())
