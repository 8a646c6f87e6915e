"""What a remote store hands back is not trusted (issue 37): `aotwheel compile` (the real ocloc
behind a logging wrapper, separate local caches as separate "machines") against a REAL nginx
WebDAV store and a plain PUT/GET store (tests/_store_server.py, http.server: not aotwheel's
code), and that plain store playing hostile servers.

- the first machine pushes everything a second machine needs: the second compiles nothing;
- objects swapped on nginx's disk are refused as misses (one warning each) and rebuilt: the output
  equals a clean build's; with a signing secret, objects written without it are never used;
- a server that drips, hangs, sends an endless or huge body, fails or closes mid-body costs one
  warning and a local compile with the same output (its timings made short by the settings).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _store_server import MODES, StoreServer

from _build_util import PYTHONPATH, REPO, compile_runs, compile_spirv, ocloc_logger, require
from conftest import CLANG, LLVM_SPIRV, start_nginx

DEVICES = "pvc,acm-g10"
SECRET = "s3cret-shared-by-the-trusted-writers"


@pytest.fixture(scope="module")
def spv(tmp_path_factory) -> Path:
    require(CLANG, LLVM_SPIRV, "ocloc")
    out = tmp_path_factory.mktemp("spv") / "reduce.spv"
    compile_spirv(REPO / "csrc" / "kernels" / "reduce.cl", out)
    return out


@pytest.fixture
def ocloc(tmp_path) -> tuple[Path, Path]:
    return ocloc_logger(tmp_path / "bin")


def _compile(spv: Path, machine: Path, wrapper: Path, url: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`aotwheel compile` on one "machine": its own local cache, output machine/out.ar."""
    machine.mkdir(parents=True, exist_ok=True)
    full = {k: v for k, v in os.environ.items() if not k.startswith("AOTWHEEL_")}
    full.update(PYTHONPATH=PYTHONPATH, AOTWHEEL_CACHE_DIR=str(machine / "cache"), AOTWHEEL_OCLOC=str(wrapper),
                AOTWHEEL_REMOTE_CACHE=url, **env)
    return subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", DEVICES, "-o",
                           str(machine / "out.ar")], capture_output=True, text=True, env=full, timeout=300)


def logged_runs(log: Path) -> list[str]:
    """ocloc runs that compiled device code (not the toolchain queries: `compile --help`, `query`)."""
    return [ln for ln in log.read_text().splitlines() if " -file " in ln] if log.exists() else []


def _warnings(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("aotwheel: warning:")]


def _events(machine: Path) -> list[list[str]]:
    return [ln.split(" ") for ln in (machine / "cache" / "v2" / "events.log").read_text().splitlines()]


@pytest.mark.parametrize("kind", ["nginx", "plain"])
def test_the_first_machine_pushes_all_a_second_needs_to_compile_nothing(kind, spv, ocloc, tmp_path):
    """Issue 37 item 0: `aotwheel compile` kept its ocloc logs (the records beside the images)
    locally only, so a second machine hit the images, missed the logs and compiled again."""
    server = start_nginx(tmp_path / "nginx") if kind == "nginx" else StoreServer()
    try:
        wrapper, log = ocloc
        first = _compile(spv, tmp_path / "m1", wrapper, server.url())
        assert first.returncode == 0, first.stderr
        assert len(logged_runs(log)) == len(DEVICES.split(","))
        # everything machine 1 stored locally, it stored remotely too
        stored = {e[1] for e in _events(tmp_path / "m1") if e[0] == "store"}
        pushed = {e[1] for e in _events(tmp_path / "m1") if e[0] == "remote-store"}
        assert stored and stored <= pushed, stored - pushed
        second = _compile(spv, tmp_path / "m2", wrapper, server.url())
        assert second.returncode == 0 and not _warnings(second), second.stderr
        assert len(logged_runs(log)) == len(DEVICES.split(","))  # machine 2 compiled nothing
        assert (tmp_path / "m2" / "out.ar").read_bytes() == (tmp_path / "m1" / "out.ar").read_bytes()
        kinds = [e[0] for e in _events(tmp_path / "m2")]
        assert "remote-miss" not in kinds and "remote-store" not in kinds
    finally:
        server.stop()


def _image_objects(server) -> dict[str, Path]:
    """The device images on nginx's disk by their ELF machine-independent content (zebins start with
    the ELF magic; the logs beside them are text), keyed by the file's name (the key)."""
    return {p.name: p for p in server.objects() if p.read_bytes().split(b"\n", 1)[1][:4] == b"\x7fELF"}


def test_objects_swapped_on_the_server_are_refused_and_rebuilt(spv, ocloc, tmp_path):
    """Issue 37 item 1: a valid object under another key was used silently (the pvc member of the
    output was the acm-g10 image). Now each swapped object is a miss with one warning naming it,
    the images are rebuilt, and the output equals a clean build's."""
    wrapper, log = ocloc
    nginx = start_nginx(tmp_path / "nginx")
    try:
        clean = _compile(spv, tmp_path / "m1", wrapper, nginx.url())
        assert clean.returncode == 0, clean.stderr
        images = _image_objects(nginx)
        assert len(images) == 2
        a, b = images.values()
        blob_a, blob_b = a.read_bytes(), b.read_bytes()
        a.write_bytes(blob_b)
        b.write_bytes(blob_a)
        runs = len(logged_runs(log))
        swapped = _compile(spv, tmp_path / "m2", wrapper, nginx.url())
        assert swapped.returncode == 0, swapped.stderr
        assert len(logged_runs(log)) == runs + 2  # both images compiled again
        assert (tmp_path / "m2" / "out.ar").read_bytes() == (tmp_path / "m1" / "out.ar").read_bytes()
        warnings = _warnings(swapped)
        assert len(warnings) == 2, swapped.stderr
        for name in images:
            assert sum(name[:16] in w and "stored under another key" in w for w in warnings) == 1, warnings
        # ... and replaced: a third machine hits both
        third = _compile(spv, tmp_path / "m3", wrapper, nginx.url())
        assert len(logged_runs(log)) == runs + 2 and not _warnings(third)
        assert (tmp_path / "m3" / "out.ar").read_bytes() == (tmp_path / "m1" / "out.ar").read_bytes()
    finally:
        nginx.stop()


def test_with_a_secret_objects_written_without_it_are_never_used(spv, ocloc, tmp_path):
    wrapper, log = ocloc
    nginx = start_nginx(tmp_path / "nginx")
    try:
        unsigned = _compile(spv, tmp_path / "m1", wrapper, nginx.url())
        assert unsigned.returncode == 0 and len(logged_runs(log)) == 2
        signed = _compile(spv, tmp_path / "m2", wrapper, nginx.url(), AOTWHEEL_REMOTE_CACHE_SECRET=SECRET)
        assert signed.returncode == 0, signed.stderr
        assert len(logged_runs(log)) == 4  # the unsigned objects were not used
        # one warning per image (a log is asked for only beside its image)
        assert all("unsigned" in w for w in _warnings(signed)) and len(_warnings(signed)) == 2, signed.stderr
        # now signed on the server (independently: the header's third field is no longer "-")
        heads = [p.read_bytes().split(b"\n", 1)[0].split(b" ") for p in nginx.objects()]
        assert all(len(h) == 5 and h[4] != b"-" for h in heads)
        foreign = _compile(spv, tmp_path / "m3", wrapper, nginx.url(), AOTWHEEL_REMOTE_CACHE_SECRET="another-secret-of-16+",
                           AOTWHEEL_REMOTE_CACHE_READONLY="1")
        assert len(logged_runs(log)) == 6 and all("another secret" in w for w in _warnings(foreign))
        trusted = _compile(spv, tmp_path / "m4", wrapper, nginx.url(), AOTWHEEL_REMOTE_CACHE_SECRET=SECRET)
        assert len(logged_runs(log)) == 6 and not _warnings(trusted), trusted.stderr
        outputs = {(tmp_path / m / "out.ar").read_bytes() for m in ("m1", "m2", "m3", "m4")}
        assert len(outputs) == 1
        # an object signed with the secret but for another key is still refused
        images = list(_image_objects(nginx).values())
        images[0].write_bytes(images[1].read_bytes())
        moved = _compile(spv, tmp_path / "m5", wrapper, nginx.url(), AOTWHEEL_REMOTE_CACHE_SECRET=SECRET)
        assert len(logged_runs(log)) == 7 and len(_warnings(moved)) == 1 and "another key" in _warnings(moved)[0]
    finally:
        nginx.stop()


@pytest.mark.parametrize("mode", MODES)
def test_a_hostile_server_costs_one_warning_and_a_local_compile(mode, spv, ocloc, tmp_path):
    """Issue 37 item 2: each hostile answer to GET (huge length, drip, endless body, hang, 500,
    close mid-body) ends in one warning and the same output as a build without a remote. Short
    bounds here (connect, read, request, step seconds); the defaults are 1,10,20,40."""
    wrapper, log = ocloc
    reference = _compile(spv, tmp_path / "ref", wrapper, "")
    assert reference.returncode == 0, reference.stderr
    server = StoreServer(mode, interval=0.4)
    try:
        proc = _compile(spv, tmp_path / "m", wrapper, server.url(), AOTWHEEL_REMOTE_CACHE_TIMEOUT="1,1,2,4")
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "m" / "out.ar").read_bytes() == (tmp_path / "ref" / "out.ar").read_bytes()
    warnings = _warnings(proc)
    assert len(warnings) == 1 and "remote cache" in warnings[0] and "127.0.0.1" in warnings[0], proc.stderr
    # after its first failure the store is not asked again by this build (the two devices' jobs
    # run in parallel: each may have asked before the first failed)
    assert server.methods.count("GET") <= 2 and "PUT" not in server.methods


@pytest.mark.parametrize("mode", ["drip", "hang"])
def test_with_the_default_bounds_a_stalling_server_costs_under_a_minute(mode, spv, ocloc, tmp_path, builds):
    """The issue's bound with the default settings: a drip (a byte every 5 s, which no read timeout
    ends) and a hang finish within 60 s."""
    wrapper, _ = ocloc
    server = StoreServer(mode, interval=5)
    start = time.monotonic()
    try:
        proc = _compile(spv, tmp_path / "m", wrapper, server.url())
    finally:
        server.stop()
    assert time.monotonic() - start < 60
    assert proc.returncode == 0 and len(_warnings(proc)) == 1, proc.stderr


def test_a_store_that_failed_in_one_step_is_skipped_by_the_builds_other_steps(tmp_path):
    """The marker in the build tree: a second step (process) of the same build asks a store that
    hung for the first no more (each step would otherwise wait the whole read timeout again)."""
    from aotwheel.buildsteps.cache import CacheKey
    from aotwheel.buildsteps.tiers import Tiers

    server = StoreServer("hang")
    env = {"AOTWHEEL_REMOTE_CACHE": server.url(), "AOTWHEEL_REMOTE_CACHE_TIMEOUT": "1,0.5"}
    key = CacheKey("a" * 64, "12.60.7", "ocloc", "1", "b" * 64, "")
    build = tmp_path / "build"
    build.mkdir()
    try:
        os.environ["AOTWHEEL_CACHE_DIR"] = str(tmp_path / "cache")
        first = Tiers.for_build(build, environ=env)
        assert first.lookup(key, "k")[0] is None
        second = Tiers.for_build(build, environ=env)
        assert second.lookup(key, "k")[0] is None
    finally:
        del os.environ["AOTWHEEL_CACHE_DIR"]
        server.stop()
    assert server.connections == 1


def test_no_answer_is_read_past_its_limit(tmp_path):
    """Issue 37 item 2: `Content-Length: 10**12` failed with MemoryError; a body without a length
    was read whole. Both are refused at the caller's limit."""
    from aotwheel.buildsteps.remote import RemoteError, config_from

    for mode in ("huge", "endless"):
        server = StoreServer(mode)
        try:
            (store,) = config_from({"AOTWHEEL_REMOTE_CACHE": server.url(), "AOTWHEEL_REMOTE_CACHE_TIMEOUT": "1,2,5"}).stores()
            with pytest.raises(RemoteError, match="over the 1048576 this object may have"):
                store.get(hashlib.sha256(b"k").hexdigest(), 1 << 20)
        finally:
            server.stop()


# --- the CMake path (real CMake + ninja builds of tests/test_remote_build.py's project) ---------

def _cmake_machine(project: Path, machine: Path, env: dict[str, str]) -> str:
    from test_remote_build import _build

    return _build(project, machine, {**env, "NINJA_STATUS": ""})


@pytest.fixture
def rc_project(tmp_path, builds) -> Path:
    from test_remote_build import KERNELS, PROJECT, TOOLS

    require(*TOOLS)
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(PROJECT.format(sources=" ".join(str(k) for k in KERNELS)))
    (src / "ext.c").write_text('#include "rc_aot.h"\nunsigned long n(void) { return aotwheel_rc_image_count; }\n')
    return src


def test_cmake_first_machine_pushes_all_a_second_needs_to_the_plain_store(rc_project, ocloc, tmp_path):
    """Item 0 for the CMake path against the plain PUT/GET store (tests/test_remote_build.py has
    nginx): everything machine 1 stored locally it stored remotely; machine 2 (fresh build tree and
    local cache) runs no ocloc, no clang and misses nothing remotely."""
    from test_remote_build import _images, spirv_tools

    wrapper, log = ocloc
    tools, clang_log, _ = spirv_tools(tmp_path / "spirv-bin")
    server = StoreServer()
    try:
        from _build_util import build_env

        env = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper), AOTWHEEL_REMOTE_CACHE=server.url(), **tools)
        _cmake_machine(rc_project, tmp_path / "m1", env)
        stored = {e[1] for e in _events(tmp_path / "m1") if e[0] == "store"}
        pushed = {e[1] for e in _events(tmp_path / "m1") if e[0] == "remote-store"}
        assert stored and stored <= pushed, stored - pushed
        runs, clang_runs = len(logged_runs(log)), len(compile_runs(clang_log))
        assert runs and clang_runs
        out = _cmake_machine(rc_project, tmp_path / "m2", env)
        assert "warning" not in out, out
        assert len(logged_runs(log)) == runs and len(compile_runs(clang_log)) == clang_runs  # (--version: facts)
        kinds = {e[0] for e in _events(tmp_path / "m2")}
        assert "remote-miss" not in kinds and "spirv-compiled" not in kinds and "remote-store" not in kinds
        assert _images(tmp_path / "m2") == _images(tmp_path / "m1")
    finally:
        server.stop()


def test_cmake_build_against_a_dripping_server_warns_once_and_asks_it_once(rc_project, ocloc, tmp_path):
    """A server that drips: configure's lookup fails at the request deadline and marks the store
    down for the build; no later step asks it again (each would wait the deadline), one warning,
    images equal to a build without a remote."""
    from test_remote_build import _images

    from _build_util import build_env

    wrapper, _ = ocloc
    plain = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper))
    _cmake_machine(rc_project, tmp_path / "ref", plain)
    server = StoreServer("drip", interval=0.4)
    try:
        out = _cmake_machine(rc_project, tmp_path / "m", {**plain, "AOTWHEEL_REMOTE_CACHE": server.url(),
                                                          "AOTWHEEL_REMOTE_CACHE_TIMEOUT": "1,1,2,4"})
    finally:
        server.stop()
    warnings = [ln for ln in out.splitlines() if "aotwheel: warning:" in ln]
    assert len(warnings) == 1 and "timed out" in warnings[0], out
    assert server.methods.count("GET") == 1 and "PUT" not in server.methods, server.methods
    assert _images(tmp_path / "m") == _images(tmp_path / "ref")
