"""nvcc backend: csrc kernels through aotwheel_portable.h, and aotwheel_add_cuda_device_code()
in a real CMake + ninja build (nvcc jobs, cache, fatbinary, .nv_fatbin embedding).

Expected kernel names come from the .cl sources (regex), images from cuobjdump listings.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from _cuda_util import HEADER, KERNELS, listing, nvcc_path, run
from aotwheel.buildsteps.cuda import render_embed
from conftest import CLANG, LLVM_SPIRV  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake and ninja")

PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(cuda_demo LANGUAGES C)
include("{cmake}/aotwheel-cuda.cmake")
add_library(kern SHARED stub.c)
{pre}
aotwheel_add_cuda_device_code(kern NAME kernels {targets}
  SOURCES "{kernels}/elementwise.cl" "{kernels}/reduce.cl" OUT_TARGETS made)
file(WRITE "${{CMAKE_BINARY_DIR}}/made.txt" "${{made}}")
"""
STUB = '#include "kernels_cuda.h"\nunsigned kern_images(void) { return aotwheel_kernels_cuda_image_count; }\n'
STUB_NONE = "int kern_nothing(void) { return 0; }\n"


def kernel_names(cl: Path) -> list[str]:
    return re.findall(r"__kernel\s+(?:__attribute__\(\(.*?\)\)\s*)?void\s+(\w+)", cl.read_text(), re.DOTALL)


@pytest.mark.parametrize("cl", sorted(KERNELS.glob("*.cl")), ids=lambda p: p.stem)
def test_portable_header_compiles_csrc_kernels_as_cuda(cl: Path, tmp_path: Path) -> None:
    out = tmp_path / f"{cl.stem}.cubin"
    proc = run([nvcc_path(), "-x", "cu", "-include", str(HEADER), "-cubin", "-arch=sm_90", str(cl), "-o", str(out)])
    assert "warning" not in proc.stderr.lower(), proc.stderr
    symbols = run(["readelf", "-sW", str(out)]).stdout
    functions = {line.split()[-1] for line in symbols.splitlines() if " FUNC " in line and " GLOBAL " in line}
    names = kernel_names(cl)
    assert names and set(names) <= functions  # extern "C": the OpenCL kernel names, unmangled


def build(tmp_path: Path, targets: str, *, stub: str = STUB, cache: Path | None = None, env_devlist: str | None = None, pre: str = "",
          defines: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess[str], Path]:
    src = tmp_path / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "CMakeLists.txt").write_text(PROJECT.format(cmake=REPO / "cmake", kernels=KERNELS, targets=targets, pre=pre))
    (src / "stub.c").write_text(stub)
    bld = tmp_path / "build"
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    env["AOTWHEEL_CACHE_DIR"] = str(cache or tmp_path / "cache")
    if env_devlist is not None:
        env["USE_AOT_DEVLIST"] = env_devlist
    env = {k: v for k, v in env.items() if not k.startswith("AOTWHEEL_REMOTE_CACHE")}
    proc = subprocess.run(["cmake", "-S", str(src), "-B", str(bld), "-G", "Ninja", *(f"-D{d}" for d in defines)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    if proc.returncode == 0:
        proc = subprocess.run(["ninja", "-C", str(bld)], capture_output=True, text=True, env=env, timeout=600, check=False)
    return proc, bld


def events(cache: Path) -> list[str]:
    log = cache / "v2" / "events.log"
    return [line.split()[0] for line in log.read_text().splitlines() if " cuda:" in line] if log.is_file() else []


def test_cmake_builds_embeds_and_caches(tmp_path: Path) -> None:
    nvcc_path()
    cache = tmp_path / "cache"
    proc, bld = build(tmp_path / "a", "TARGETS sm_90 ptx", cache=cache)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    so = bld / "libkern.so"
    assert (bld / "made.txt").read_text() == "sm_90;compute_90"
    sections = run(["readelf", "-SW", str(so)]).stdout
    assert ".nv_fatbin" in sections
    # Two sources, each one fat binary with an sm_90 cubin and sm_90 PTX, in build order.
    assert sorted(listing(so)) == sorted([("cubin", "sm_90"), ("ptx", "sm_90")] * 2)
    assert sorted(events(cache)) == ["miss"] * 4 + ["store"] * 4  # 2 sources x 2 targets, in parallel
    # A fresh build tree with the same cache runs no nvcc job at all.
    proc, bld2 = build(tmp_path / "b", "TARGETS sm_90 ptx", cache=cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert events(cache)[8:] == ["hit"] * 4
    assert sorted(listing(bld2 / "libkern.so")) == sorted(listing(so))


def test_remote_cache_set_in_cmake_serves_the_nvcc_steps(tmp_path: Path) -> None:
    """-DAOTWHEEL_REMOTE_CACHE (not the environment) reaches the nvcc steps: a second machine
    (fresh build tree and local cache) runs no nvcc; real nginx/WebDAV on loopback."""
    from conftest import start_nginx

    nvcc_path()
    server = start_nginx(tmp_path / "nginx")
    try:
        define = (f"AOTWHEEL_REMOTE_CACHE={server.url()}",)
        proc, bld = build(tmp_path / "a", "TARGETS sm_90", cache=tmp_path / "cache-a", defines=define)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert len(server.objects()) == 2  # 2 sources x sm_90, pushed from the CMake setting
        proc, bld2 = build(tmp_path / "b", "TARGETS sm_90", cache=tmp_path / "cache-b", defines=define)
        assert proc.returncode == 0, proc.stderr[-3000:]
    finally:
        server.stop()
    seen = events(tmp_path / "cache-b")
    assert seen.count("remote-hit") == 2 and "remote-miss" not in seen and "remote-store" not in seen, seen
    assert listing(bld2 / "libkern.so") == listing(bld / "libkern.so")


def test_targets_come_from_use_aot_devlist(tmp_path: Path) -> None:
    nvcc_path()
    proc, bld = build(tmp_path, "", env_devlist="pvc,sm_80,ats-m150")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (bld / "made.txt").read_text() == "sm_80"
    assert sorted(listing(bld / "libkern.so")) == [("cubin", "sm_80")] * 2


def test_targets_from_the_resolvers_devlist(tmp_path: Path) -> None:
    nvcc_path()
    proc, bld = build(tmp_path, "DEVLIST AOT", pre='aotwheel_resolve_devlist(AOT DEVLIST "pvc,sm_80,ptx")')
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (bld / "made.txt").read_text() == "sm_80;compute_80"  # 'ptx' = PTX of the newest sm_XY
    assert sorted(listing(bld / "libkern.so")) == sorted([("cubin", "sm_80"), ("ptx", "sm_80")] * 2)


def test_no_nvidia_token_adds_nothing(tmp_path: Path) -> None:
    proc, bld = build(tmp_path, "", stub=STUB_NONE, env_devlist="pvc,ats-m150")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (bld / "made.txt").read_text() == ""
    assert ".nv_fatbin" not in run(["readelf", "-SW", str(bld / "libkern.so")]).stdout


def test_bad_token_stops_configure_with_one_line(tmp_path: Path) -> None:
    nvcc_path()
    proc, _ = build(tmp_path, "TARGETS sm90")
    assert proc.returncode != 0
    assert "aotwheel_add_cuda_device_code: USE_AOT_DEVLIST: 'sm90' is not a valid NVIDIA target; did you mean sm_90?" in " ".join(proc.stderr.split())


def test_embed_places_images_in_nv_fatbin_8_aligned() -> None:
    c_text, h_text = render_embed("k", ["/x/a.fatbin", "/x/b.fatbin"])
    assert c_text.count('.pushsection .nv_fatbin, \\"a\\"') == 2 and c_text.count(".balign 8") == 2
    assert "aotwheel_k_cuda_image_count = 2" in c_text and "struct aotwheel_cuda_image" in h_text


MIXED_PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(mixed LANGUAGES C)
find_package(aotwheel CONFIG REQUIRED)
add_library(_k MODULE stub.c)
set_target_properties(_k PROPERTIES PREFIX "" SUFFIX ".so")
aotwheel_resolve_devlist(AOT)
# The manifest reads the target's CUDA images at generate time, whatever the order of the calls.
{first}
{second}
install(TARGETS _k LIBRARY DESTINATION mixedpkg)
"""


CUDA_CALL = 'aotwheel_add_cuda_device_code(_k NAME kernels DEVLIST AOT SOURCES "{kernels}/elementwise.cl" "{kernels}/reduce.cl")'
INTEL_CALL = ('aotwheel_add_device_code(_k NAME kernels DEVLIST AOT DESTINATION mixedpkg\n'
              '  SOURCES "{kernels}/elementwise.cl" "{kernels}/reduce.cl")')


@pytest.mark.parametrize("cuda_first", [True, False], ids=["cuda-call-first", "intel-call-first"])
def test_cuda_images_reach_the_manifest_and_aot_targets(tmp_path: Path, cuda_first: bool) -> None:
    """USE_AOT_DEVLIST=sm_80,ptx built for real (nvcc; clang + llvm-spirv for the SPIR-V that JIT
    fallback keeps) and installed as a package: the manifest lists the CUDA fat binaries with their
    cubin/PTX members, and the package's generated _aot.targets() names the cubin target."""
    import json
    import sys

    nvcc_path()
    for tool in (CLANG, LLVM_SPIRV):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (ci/setup.sh installs it)")
    src = tmp_path / "src"
    src.mkdir()
    calls = [CUDA_CALL.format(kernels=KERNELS), INTEL_CALL.format(kernels=KERNELS)]
    first, second = calls if cuda_first else calls[::-1]
    (src / "CMakeLists.txt").write_text(MIXED_PROJECT.format(first=first, second=second))
    (src / "stub.c").write_text(STUB_NONE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    env.update(AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"), USE_AOT_DEVLIST="sm_80,ptx")
    bld, prefix = tmp_path / "b", tmp_path / "prefix"
    for cmd in (["cmake", "-S", str(src), "-B", str(bld), "-G", "Ninja", f"-Daotwheel_DIR={REPO / 'cmake'}",
                 f"-DPython_EXECUTABLE={sys.executable}"],
                ["ninja", "-C", str(bld)], ["cmake", "--install", str(bld), "--prefix", str(prefix)]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    again = subprocess.run(["ninja", "-C", str(bld), "-n"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert "no work to do" in again.stdout  # the CUDA records and their list are written only on change
    so = prefix / "mixedpkg" / "_k.so"
    assert sorted(listing(so)) == sorted([("cubin", "sm_80"), ("ptx", "sm_80")] * 2)  # cuobjdump's view
    manifest = json.loads((prefix / "mixedpkg" / "_aot_manifest.json").read_text())
    assert manifest["devlist"]["cuda"] == ["sm_80", "compute_80"]
    cuda = [i for i in manifest["images"] if i["vendor"] == "nvidia"]
    assert [i["source"] for i in cuda] == ["elementwise.cl", "reduce.cl"]
    for image in cuda:
        assert image["triple"] == "nvptx64-nvidia-cuda"
        assert [(m["device"], m["name"], m["kind"]) for m in image["members"]] == [("sm_80", "sm_80", "cubin"), (None, "compute_80", "ptx")]
        fatbin = bld / "aotwheel" / "kernels_cuda" / image["source"].replace(".cl", ".fatbin")
        assert image["size"] == fatbin.stat().st_size
        assert image["sha256"] == __import__("hashlib").sha256(fatbin.read_bytes()).hexdigest()
        assert all(m["size"] > 0 for m in image["members"])
    assert {i["triple"] for i in manifest["images"] if i["vendor"] == "intel"} == {"spir64"}

    # The generated <pkg>/_aot.py, run from the installed package: the cubin target is native.
    code = "import mixedpkg._aot as a; print(','.join(a.targets()))"
    run_env = dict(env, PYTHONPATH=f"{prefix}{os.pathsep}{REPO / 'python'}")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "sm_80"
