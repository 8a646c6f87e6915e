"""Compressed device images of the open toolchain (aotwheel_add_device_code COMPRESS ON /
USE_AOT_COMPRESS=ON, the default): each embedded image one zstd frame, read back by the inspector,
the OpenCL loader and the selftest; damaged or oversized frames are one clear error, never a wrong
kernel. The compressed wheel below is the default build (nothing set); the plain one says OFF."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from aotwheel.errors import AotwheelError, InspectError
from aotwheel.formats.zstd import compress_image, decompress_image
from aotwheel.opencl import inflate

from _build_util import build_env, compile_spirv, require
from _check_util import opencl_cpu_env
from conftest import CLANG, LLVM_SPIRV, REPO

pytestmark = pytest.mark.usefixtures("builds")

zstandard = pytest.importorskip("zstandard")

DEVLIST = "tgllp,pvc"
SPIRV_MAGIC = b"\x03\x02\x23\x07"


@pytest.fixture(scope="module")
def spirv(tmp_path_factory) -> bytes:
    require(CLANG, LLVM_SPIRV)
    return compile_spirv(REPO / "csrc" / "kernels" / "gemm.cl", tmp_path_factory.mktemp("spv") / "gemm.spv")


# ---- the frame reader ---------------------------------------------------------------------------


def test_frame_round_trips_and_declares_its_size(spirv):
    frame = compress_image(spirv)
    assert frame[:4] == b"\x28\xb5\x2f\xfd" and len(frame) < len(spirv)
    assert zstandard.frame_content_size(frame) == len(spirv)  # read by zstd itself, not by aotwheel
    assert decompress_image(frame, "gemm") == spirv
    assert inflate(frame, "gemm") == spirv and inflate(spirv, "gemm") == spirv  # plain images pass through


def test_every_single_byte_flip_is_an_error_or_the_same_image(spirv):
    frame = compress_image(spirv)
    errors = 0
    for at in range(len(frame)):
        damaged = bytearray(frame)
        damaged[at] ^= 0x5A
        try:
            out = decompress_image(bytes(damaged), "gemm.cl (spir64)")
        except InspectError as exc:
            errors += 1
            assert str(exc).startswith("gemm.cl (spir64): ") and "\n" not in str(exc)
        else:
            assert out == spirv, f"flip at {at} gave a different image"
    assert errors >= len(frame) - 8  # a few flips (e.g. unused header bits) may be harmless


def test_damaged_frame_in_the_loader_is_one_aotwheel_error(spirv):
    frame = bytearray(compress_image(spirv))
    frame[len(frame) // 2] ^= 0xFF
    with pytest.raises(AotwheelError) as info:
        inflate(bytes(frame), "mod:gemm.cl (spir64)")
    assert "damaged" in str(info.value) and "\n" not in str(info.value)


def _frame_declaring(size: int, payload: bytes = b"x") -> bytes:
    # zstd frame by hand: magic, descriptor 0xE0 (8-byte content size, single segment), the size,
    # then one raw last block of len(payload) bytes.
    block = (1 | (len(payload) << 3)).to_bytes(3, "little")
    return b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + size.to_bytes(8, "little") + block + payload


def test_frame_claiming_a_huge_size_is_refused_without_allocating_it():
    frame = _frame_declaring(1 << 40)
    assert zstandard.frame_content_size(frame) == 1 << 40  # zstd agrees on what it claims
    tracemalloc.start()
    try:
        with pytest.raises(InspectError, match=r"declares 1099511627776 bytes, above the \d+-byte cap"):
            inflate(frame, "huge")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_frame_lying_about_its_size_is_refused():
    with pytest.raises(InspectError, match="huge|declares|corrupt"):
        decompress_image(_frame_declaring(5, b"x"), "short")


def test_frame_without_a_content_size_or_with_trailing_bytes_is_refused(spirv):
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(spirv)
    assert zstandard.frame_content_size(no_size) == -1
    with pytest.raises(InspectError, match="does not declare its decompressed size"):
        decompress_image(no_size, "nosize")
    with pytest.raises(InspectError, match="bytes follow the zstd frame"):
        decompress_image(compress_image(spirv) + b"\0" * 4, "trailing")


# ---- builds: the repository's own wheel, compressed and not ----------------------------------


def _wheel(root: Path, compress: str) -> Path:
    """The repository's wheel; ``compress`` "ON": the default build (USE_AOT_COMPRESS unset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    env.update(USE_AOT_DEVLIST=DEVLIST, AOTWHEEL_CACHE_DIR=str(root / "cache"))
    if compress != "ON":
        env["USE_AOT_COMPRESS"] = compress
    flags = ["--no-build-isolation"] if importlib.util.find_spec("scikit_build_core") else []
    dist = root / f"dist-{compress}"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *flags, "-w", str(dist), str(REPO),
                           "-C", f"build-dir={root / ('build-' + compress)}"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return next(dist.glob("*.whl"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    require("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV)
    root = tmp_path_factory.mktemp("compressed")
    return {c: _wheel(root, c) for c in ("OFF", "ON")}


def _extension(wheel: Path, into: Path) -> Path:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.startswith("aotwheel/_kernels.")]
        z.extract(name, into)
    return into / name


def test_compressed_build_lists_the_same_targets_with_both_sizes(wheels, tmp_path):
    from aotwheel.inspector import image_bytes, inspect

    plain = inspect(_extension(wheels["OFF"], tmp_path / "off")).files[0]
    packed_path = _extension(wheels["ON"], tmp_path / "on")
    packed = inspect(packed_path).files[0]
    assert {(t.name, t.ip, t.member) for t in packed.native_targets} == {(t.name, t.ip, t.member) for t in plain.native_targets}
    assert {t.name for t in packed.native_targets} == {"tgllp", "pvc"}
    assert packed.ir == plain.ir == ["spirv"] and packed.kernels == plain.kernels and packed.warnings == []
    assert [(i.triple, i.content) for i in packed.images] == [(i.triple, i.kind) for i in plain.images]
    for p, q in zip(plain.images, packed.images):
        assert not p.compressed and q.compressed and q.kind == "zstd"
        assert q.decompressed_size == p.size > q.size
        assert image_bytes(packed_path, q) == image_bytes(tmp_path / "off" / packed_path.relative_to(tmp_path / "on"), p)
    # The wheels themselves: the same targets, the default one compressed.
    whole = {c: inspect(w).files for c, w in wheels.items()}
    listed = {c: [(f.path.split("!", 1)[1], sorted((t.name, t.ip, t.member) for t in f.native_targets)) for f in files]
              for c, files in whole.items()}
    assert listed["ON"] == listed["OFF"] and {t[0] for _, ts in listed["ON"] for t in ts} == {"tgllp", "pvc"}
    assert [i.compressed for f in whole["ON"] for i in f.images] == [True] * 8
    assert [i.compressed for f in whole["OFF"] for i in f.images] == [False] * 8
    # The CLI's reports carry both sizes too.
    text = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", str(packed_path)], capture_output=True, text=True)
    stored, inflated = sum(i.size for i in packed.images), sum(i.decompressed_size for i in packed.images)
    assert f"; 8 compressed ({stored:,} bytes stored, {inflated:,} decompressed)" in text.stdout, text.stdout + text.stderr
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", "--json", str(packed_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    images = [i for f in doc["files"] for i in f["images"]]
    assert images and all(i["compressed"] and i["decompressed_size"] > i["size"] for i in images)


def test_compressed_manifest_records_what_is_embedded(wheels):
    docs = {}
    for c, wheel in wheels.items():
        with zipfile.ZipFile(wheel) as z:
            docs[c] = json.loads(z.read("aotwheel/_aot_manifest.json"))
    for p, q in zip(docs["OFF"]["images"], docs["ON"]["images"]):
        assert (q["size"], q["sha256"]) == (p["size"], p["sha256"])  # the image itself, before zstd
        assert "compression" not in p and q["compression"]["codec"] == "zstd" and q["compression"]["size"] < q["size"]


def _installed(wheel: Path, into: Path) -> dict[str, str]:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(into), str(wheel)], check=True)
    env = opencl_cpu_env()
    env["PYTHONPATH"] = str(into)
    return env


def test_selftest_passes_on_the_compressed_build(wheels, tmp_path):
    env = _installed(wheels["ON"], tmp_path / "site")
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "selftest", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (cpu,) = [r for r in json.loads(proc.stdout)["results"] if r["kind"] == "cpu"]
    assert cpu["ok"] and cpu["verdict"] == "jit" and cpu["kernels"]


def test_loader_gives_the_uncompressed_builds_images(wheels, tmp_path):
    code = ("import json, aotwheel, aotwheel._kernels as k\n"
            "from aotwheel.opencl import device_code\n"
            "assert aotwheel.__file__.startswith(%r), aotwheel.__file__\n"
            "out = {}\n"
            "for s in sorted({s for _, s, _ in k.images()}):\n"
            "    c = device_code(k, source=s)\n"
            "    out[s] = [c.spirv.hex(), c.fatbinary.hex(), [t for t, src, b in k.images() if src == s and b[:4] == b'\\x28\\xb5\\x2f\\xfd']]\n"
            "print(json.dumps(out))\n")
    seen = {}
    for c in ("OFF", "ON"):
        site = tmp_path / c
        env = _installed(wheels[c], site)
        proc = subprocess.run([sys.executable, "-c", code % str(site)], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        seen[c] = json.loads(proc.stdout)
    assert seen["ON"].keys() == seen["OFF"].keys() and len(seen["ON"]) == 4
    for s in seen["ON"]:
        assert seen["ON"][s][:2] == seen["OFF"][s][:2]  # byte for byte, after decompression
        assert bytes.fromhex(seen["ON"][s][0])[:4] == SPIRV_MAGIC and bytes.fromhex(seen["ON"][s][1])[:8] == b"!<arch>\n"
        assert sorted(seen["ON"][s][2]) == ["spir64", "spir64_gen"] and seen["OFF"][s][2] == []


# ---- the switch: COMPRESS argument, else USE_AOT_COMPRESS (CMake variable, then environment) ----

_PROJECT = """cmake_minimum_required(VERSION 3.21)
project(zpkg LANGUAGES C)
find_package(aotwheel CONFIG REQUIRED)
add_library(ext MODULE ext.c)
aotwheel_add_device_code(ext SOURCES {source} DEVICES tgllp NAME zk {extra})
"""


def _configure(tmp_path: Path, name: str, extra: str, *defs: str, **env_extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    src = tmp_path / name
    src.mkdir()
    (src / "CMakeLists.txt").write_text(_PROJECT.format(source=REPO / "csrc" / "kernels" / "gemm.cl", extra=extra))
    (src / "ext.c").write_text('#include "zk_aot.h"\nunsigned long count(void) { return aotwheel_zk_image_count; }\n')
    env = build_env(tmp_path / "cache", **env_extra)
    env.pop("USE_AOT_COMPRESS", None)
    env.update(env_extra)
    build = tmp_path / f"{name}-build"
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(build), f"-DPython_EXECUTABLE={sys.executable}",
                           f"-Daotwheel_DIR={REPO / 'cmake'}", *defs], capture_output=True, text=True, env=env, timeout=300)
    return proc, build


def _embeds_frames(build: Path) -> bool:
    embed = (build / "aotwheel" / "zk" / "zk_aot_embed.c").read_text()
    assert "gemm.fatbin" in embed and "gemm.spv" in embed
    return "gemm.fatbin.zst" in embed and "gemm.spv.zst" in embed


@pytest.mark.parametrize(("extra", "defs", "env", "expected"), [
    ("", (), {}, True),                                                          # default ON
    ("", (), {"USE_AOT_COMPRESS": "OFF"}, False),                                # environment
    ("", (), {"USE_AOT_COMPRESS": "ON"}, True),
    ("", ("-DUSE_AOT_COMPRESS=ON",), {"USE_AOT_COMPRESS": "OFF"}, True),         # CMake variable before environment
    ("COMPRESS OFF", ("-DUSE_AOT_COMPRESS=ON",), {}, False),                     # the argument wins
    ("COMPRESS ON", (), {}, True),
])
def test_compress_switch_precedence(tmp_path, extra, defs, env, expected):
    require("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV)
    proc, build = _configure(tmp_path, "p", extra, *defs, **env)
    assert proc.returncode == 0, proc.stderr
    assert _embeds_frames(build) is expected


@pytest.mark.parametrize(("extra", "defs", "word"), [("COMPRESS maybe", (), "COMPRESS"),
                                                     ("", ("-DUSE_AOT_COMPRESS=zstd",), "USE_AOT_COMPRESS")])
def test_bad_compress_value_is_one_configure_error(tmp_path, extra, defs, word):
    require("cmake", "ninja", "cc", CLANG, LLVM_SPIRV)
    proc, _ = _configure(tmp_path, "p", extra, *defs)
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())  # CMake wraps the message's line
    assert f"aotwheel_add_device_code: {word} is '" in text and f"Try: {word} ON or {word} OFF" in text


def test_compress_without_zstandard_in_the_build_python_stops_configure(tmp_path):
    require("cmake", "ninja", "cc", CLANG, LLVM_SPIRV)
    bare = "/usr/bin/python3"  # Debian's interpreter, not the venv: no zstandard unless apt installed it
    if not os.path.exists(bare) or subprocess.run([bare, "-c", "import zstandard"], capture_output=True).returncode == 0:
        pytest.skip(f"{bare} is missing or has zstandard")
    proc, _ = _configure(tmp_path, "p", "COMPRESS ON", f"-DPython_EXECUTABLE={bare}")
    text = " ".join(proc.stderr.split())
    assert proc.returncode != 0
    assert f"aotwheel_add_device_code: COMPRESS ON needs the Python module zstandard in {bare}." in text, text
    assert 'Add "zstandard" to build-system.requires' in text
    # Nothing set: the default asks for zstandard too, and the line says so and how to turn it off.
    proc, _ = _configure(tmp_path, "q", "", f"-DPython_EXECUTABLE={bare}")
    text = " ".join(proc.stderr.split())
    assert proc.returncode != 0
    assert (f"aotwheel_add_device_code: USE_AOT_COMPRESS ON (aotwheel's default when unset) needs the Python module "
            f"zstandard in {bare}.") in text, text
    assert "or set USE_AOT_COMPRESS OFF." in text


def test_nvidia_only_devlist_needs_no_zstandard_for_the_default(tmp_path, nvcc: str):
    # A list naming no Intel device embeds no image through aotwheel_add_device_code, so the
    # default COMPRESS ON asks nothing of the build's Python there (the NVIDIA images are CUDA's).
    require("cmake", "ninja", "cc")
    bare = "/usr/bin/python3"
    if not os.path.exists(bare) or subprocess.run([bare, "-c", "import zstandard"], capture_output=True).returncode == 0:
        pytest.skip(f"{bare} is missing or has zstandard")
    src = tmp_path / "src"
    src.mkdir()
    gemm = REPO / "csrc" / "kernels" / "gemm.cl"
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(zpkg LANGUAGES C)\nfind_package(aotwheel CONFIG REQUIRED)\n"
        "add_library(ext MODULE ext.c)\naotwheel_resolve_devlist(DL)\n"
        f"aotwheel_add_device_code(ext SOURCES {gemm} DEVLIST DL NAME zk)\n"
        f"aotwheel_add_cuda_device_code(ext SOURCES {gemm} DEVLIST DL NAME zk)\n")
    (src / "ext.c").write_text("unsigned long count(void) { return 0; }\n")
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="sm_90", AOTWHEEL_NVCC=nvcc)
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"), f"-DPython_EXECUTABLE={bare}",
                           f"-Daotwheel_DIR={REPO / 'cmake'}"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "zstandard" not in proc.stderr
    # The same project with an Intel device does need it.
    env["USE_AOT_DEVLIST"] = "sm_90,tgllp"
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b2"), f"-DPython_EXECUTABLE={bare}",
                           f"-Daotwheel_DIR={REPO / 'cmake'}"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0 and "needs the Python module zstandard" in " ".join(proc.stderr.split()), proc.stderr
