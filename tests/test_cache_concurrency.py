"""The device-code cache under stress (issue 7.3), with real CMake + ninja + ocloc builds:
four builds at once sharing one cache, an entry damaged on disk, a read-only and a full cache.

Expected bytes come from ocloc itself (`ocloc compile -device pvc,acm-g10` writes the fat binary
the build must reproduce); cache objects are checked with hashlib against the header layout
documented in aotwheel/buildsteps/cache.py. A read-only or full cache is made for real: a tmpfs mounted
read-only, or one of 4 KiB filled to the last byte, inside a user+mount namespace (`unshare -Urm`);
without user namespaces and as non-root, a chmod 0555 folder stands in for read-only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import REPO, build_env, compile_spirv, embedded_images, logged_runs, ocloc_logger, require, run, unzstd
from conftest import CLANG, LLVM_SPIRV, ocloc_zebin_args

pytestmark = pytest.mark.usefixtures("builds")

TOOLS = ("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV)
DEVICES = ("pvc", "acm-g10")
KERNEL = REPO / "csrc" / "kernels" / "elementwise.cl"
PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(cc LANGUAGES C)
add_library(ccext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_add_device_code(ccext SOURCES {kernel} DEVICES {devices} NAME cc)
"""
EVENT = re.compile(
    r"^(hit|miss|store|corrupt|spirv-hit|spirv-remote-hit|spirv-compiled) [0-9a-f]{64} \S+ [0-9a-f]{12} \d+ \S*$"
)  # kind key target build bytes label
WARNING = "aotwheel: warning: device-code cache"
MAGIC = b"aotwheel-cache-object 2 "


def _project(root: Path) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(PROJECT.format(kernel=KERNEL, devices=" ".join(DEVICES)))
    (src / "ext.c").write_text('#include "cc_aot.h"\nunsigned long n(void) { return aotwheel_cc_image_count; }\n')
    return src


def _commands(src: Path, build: Path) -> list[list[str]]:
    return [["cmake", "-G", "Ninja", "-S", str(src), "-B", str(build), f"-Daotwheel_DIR={REPO / 'cmake'}",
             f"-DPython_EXECUTABLE={sys.executable}"], ["ninja", "-C", str(build), "-j2"]]


def _build(src: Path, build: Path, env: dict[str, str]) -> str:
    """Configure + build; returns everything both printed."""
    out = ""
    for cmd in _commands(src, build):
        out += run(cmd, env=env).stdout
    return out


def _fatbin(build: Path) -> bytes:
    return (build / "aotwheel" / "cc" / f"{KERNEL.stem}.fatbin").read_bytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> bytes:
    """The fat binary ocloc itself writes for the same SPIR-V and devices (no aotwheel involved)."""
    require(*TOOLS)
    work = tmp_path_factory.mktemp("ref")
    spv = work / "k.spv"
    compile_spirv(KERNEL, spv)
    # With the options CMake builds pass by default (IPEX's / torch-xpu-ops' ocloc options, docs/formats.md).
    field = "-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels -cl-intel-greater-than-4GB-buffer-required"
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", ",".join(DEVICES), "-output", "fat",
         *ocloc_zebin_args(), "-options", field], cwd=work)  # zebin: what the build writes wherever ocloc can
    return (work / "fat").read_bytes()


def _objects(cache: Path) -> list[Path]:
    """The device images' objects (not the SPIR-V step's manifests and modules, told by content)."""
    return sorted(p for p in (cache / "v2" / "objects").rglob("*.bin") if not _spirv_step_object(p))


def _spirv_step_object(obj: Path) -> bool:
    payload = obj.read_bytes().split(b"\n", 1)[-1]
    return payload[:4] == b"\x03\x02\x23\x07" or payload.startswith(b'{"entries"')


def _device_events(cache: Path) -> list[str]:
    """events.log lines of the device images (the SPIR-V step's have device spirv*)."""
    lines = (cache / "v2" / "events.log").read_text().splitlines()
    return [line for line in lines if not line.split()[2].startswith("spirv")]


def _payload_if_intact(obj: Path) -> bytes | None:
    """Independent reading of one cache object: '<magic><key> <sha256 hex> -\\n<payload>', the key
    being the object's file name."""
    blob = obj.read_bytes()
    head, _, payload = blob.partition(b"\n")
    if not head.startswith(MAGIC) or head[len(MAGIC):].decode().split(" ") != [obj.stem, hashlib.sha256(payload).hexdigest(), "-"]:
        return None
    return payload


def test_four_parallel_builds_share_one_cache(tmp_path: Path, reference: bytes) -> None:
    src = _project(tmp_path)
    cache = tmp_path / "cache"
    env = build_env(cache)
    builds = [tmp_path / f"b{i}" for i in range(4)]
    # Configure all four, then run the four ninjas at once: their ocloc edges race on the cache.
    for b in builds:
        run(_commands(src, b)[0], env=env)
    procs = [subprocess.Popen(_commands(src, b)[1], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for b in builds]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    # Identical output bytes, equal to ocloc's own fat binary.
    assert all(_fatbin(b) == reference for b in builds)
    images = [[(i.triple, i.data) for i in embedded_images(next(b.glob("libccext*.so")))] for b in builds]
    # Embedded as one zstd frame (COMPRESS ON, the default): zstandard gives ocloc's bytes back.
    assert all(x == images[0] for x in images) and (images[0][0][0], unzstd(images[0][0][1])) == ("spir64_gen", reference)
    # No torn entries: one intact object per device, no temporaries, every log line whole.
    objects = _objects(cache)
    assert len(objects) == len(DEVICES)
    assert all(_payload_if_intact(o) is not None for o in objects)
    assert not [p for p in (cache / "v2").rglob("*") if p.name.endswith(".tmp")]
    lines = (cache / "v2" / "events.log").read_text().splitlines()
    assert lines and all(EVENT.match(line) for line in lines), lines
    lookups = [line for line in _device_events(cache) if line.split()[0] in ("hit", "miss")]
    assert len(lookups) == 4 * len(DEVICES)
    assert all(WARNING not in o for o in outs)


def _compiles(log: Path) -> list[str]:
    """ocloc runs that compiled something (not `compile --help`, which discovery asks once)."""
    return [r for r in logged_runs(log, "compile") if " -file " in f" {r} "]


def test_corrupted_entry_is_detected_and_rebuilt(tmp_path: Path, reference: bytes) -> None:
    src = _project(tmp_path)
    cache = tmp_path / "cache"
    wrapper, log = ocloc_logger(tmp_path / "bin")
    env = build_env(cache, AOTWHEEL_OCLOC=str(wrapper))
    _build(src, tmp_path / "b1", env)
    assert len(_compiles(log)) == len(DEVICES)
    victim = _objects(cache)[0]
    blob = bytearray(victim.read_bytes())
    blob[-100] ^= 0x40  # one flipped bit in the payload, as a bad disk sector or a stray write would do
    victim.write_bytes(blob)
    assert _payload_if_intact(victim) is None
    _build(src, tmp_path / "b2", env)
    # Only the damaged entry was compiled again; the result is still ocloc's bytes.
    assert len(_compiles(log)) == len(DEVICES) + 1
    assert _fatbin(tmp_path / "b2") == reference
    assert _payload_if_intact(victim) is not None
    events = [line.split()[0] for line in _device_events(cache)]
    assert events.count("corrupt") == 1 and events.count("hit") == len(DEVICES) - 1


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    proc = subprocess.run(["unshare", "-Urm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"], capture_output=True)
    return proc.returncode == 0


# In a private mount namespace: mount the cache, prepare it, then configure and build.
_NS_SCRIPT = """
set -e
cache="$1"; mode="$2"; shift 2
if [ "$mode" = readonly ]; then
  mount -t tmpfs -o ro,size=1m tmpfs "$cache"
else
  mount -t tmpfs -o size=4k tmpfs "$cache"
  mkdir -p "$cache/v2/objects"
  head -c 4096 /dev/zero > "$cache/filler" 2>/dev/null || true
  ! head -c 1 /dev/zero > "$cache/one-more-byte" 2>/dev/null
fi
"$@"
"""


_RUN_ALL = "import json, subprocess, sys\nfor cmd in json.loads(sys.argv[1]):\n    subprocess.run(cmd, check=True)\n"


def _broken_cache_build(tmp_path: Path, mode: str, reference: bytes) -> str:
    src = _project(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    build = tmp_path / "b"
    env = build_env(cache)
    # configure, then build: argument lists handed to a child Python, no shell command line.
    both = [sys.executable, "-c", _RUN_ALL, json.dumps(_commands(src, build))]
    if _namespaces_work():
        script = tmp_path / "ns.sh"
        script.write_text(_NS_SCRIPT)
        proc = subprocess.run(["unshare", "-Urm", "sh", str(script), str(cache), mode, *both], env=env,
                              capture_output=True, text=True, timeout=600)
    elif os.geteuid() != 0 and mode == "readonly":
        cache.chmod(0o555)
        proc = subprocess.run(both, env=env, capture_output=True, text=True, timeout=600)
    else:
        pytest.skip("needs user namespaces (unshare -Urm) to mount a read-only or full tmpfs as the cache")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert _fatbin(build) == reference
    return output


@pytest.mark.parametrize("mode,reason", [("readonly", "Read-only file system"), ("full", "No space left on device")])
def test_unusable_cache_degrades_to_no_cache_with_one_warning(tmp_path: Path, reference: bytes, mode: str, reason: str) -> None:
    require(*TOOLS)
    output = _broken_cache_build(tmp_path, mode, reference)
    warnings = [line for line in output.splitlines() if WARNING in line]
    # One line for the whole build (several ocloc steps ran), naming the cause and the fix.
    assert len(warnings) == 1, output[-4000:]
    assert reason in warnings[0] and "AOTWHEEL_CACHE_DIR" in warnings[0]
    assert "Traceback" not in output and "aotwheel: error" not in output
