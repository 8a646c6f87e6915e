"""nvcc backend: csrc kernels through aotwheel_portable.h, and aotwheel_add_cuda_device_code()
in a real CMake + ninja build (nvcc jobs, cache, fatbinary, .nv_fatbin embedding).

Expected kernel names come from the .cl sources (regex), images from cuobjdump listings.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from aotwheel.backends.nvidia.buildsteps import render_embed

from _cuda_util import HEADER, KERNELS, listing, nvcc_path, run
from conftest import CLANG, LLVM_SPIRV

REPO = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake and ninja"),
    pytest.mark.usefixtures("builds", "nvcc"),
]

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
    # The Intel devices need an Intel build step, which this project lacks: allowed here, and said.
    proc, bld = build(tmp_path, "", env_devlist="pvc,sm_80,ats-m150", defines=("AOTWHEEL_ALLOW_UNBUILT=intel",))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (bld / "made.txt").read_text() == "sm_80"
    assert sorted(listing(bld / "libkern.so")) == [("cubin", "sm_80")] * 2


def test_targets_from_the_resolvers_devlist(tmp_path: Path) -> None:
    nvcc_path()
    proc, bld = build(tmp_path, "DEVLIST AOT", pre='aotwheel_resolve_devlist(AOT DEVLIST "pvc,sm_80,ptx")',
                      defines=("AOTWHEEL_ALLOW_UNBUILT=intel",))  # no Intel build step in this project
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (bld / "made.txt").read_text() == "sm_80;compute_80"  # 'ptx' = PTX of the newest sm_XY
    assert sorted(listing(bld / "libkern.so")) == sorted([("cubin", "sm_80"), ("ptx", "sm_80")] * 2)


def test_no_nvidia_token_adds_nothing(tmp_path: Path) -> None:
    proc, bld = build(tmp_path, "", stub=STUB_NONE, env_devlist="pvc,ats-m150", defines=("AOTWHEEL_ALLOW_UNBUILT=intel",))
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
    """USE_AOT_DEVLIST=sm_80,ptx built for real (nvcc) and installed as a package: the manifest
    lists the CUDA fat binaries with their cubin/PTX members (and no Intel image: the list names no
    Intel device, so no SPIR-V is kept), and the package's generated _aot.targets() names the cubin."""
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
    assert [i for i in manifest["images"] if i["vendor"] == "intel"] == []

    # The generated <pkg>/_aot.py, run from the installed package: the cubin target is native.
    code = "import mixedpkg._aot as a; print(','.join(a.targets()))"
    run_env = dict(env, PYTHONPATH=f"{prefix}{os.pathsep}{REPO / 'python'}")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "sm_80"


# ---- Each vendor's build step only for its own targets (issue 28) -----------------------------------

NO_INTEL_TOOLS = {"AOTWHEEL_CLANG": "/nonexistent/clang", "AOTWHEEL_LLVM_SPIRV": "/nonexistent/llvm-spirv",
                  "AOTWHEEL_OCLOC": "/nonexistent/ocloc"}


def configure_and_install(tmp_path: Path, cmakelists: str, devlist: str, extra_env: dict[str, str] | None = None,
                          ) -> tuple[list[subprocess.CompletedProcess[str]], Path, Path]:
    """cmake + ninja + cmake --install of a project (stops at the first failing step)."""
    import sys

    src = tmp_path / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "CMakeLists.txt").write_text(cmakelists)
    (src / "stub.c").write_text(STUB_NONE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_ALLOW", "AOTWHEEL_REMOTE"))}
    env.update(AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"), USE_AOT_DEVLIST=devlist, **(extra_env or {}))
    bld, prefix = tmp_path / "b", tmp_path / "prefix"
    procs = []
    for cmd in (["cmake", "-S", str(src), "-B", str(bld), "-G", "Ninja", f"-Daotwheel_DIR={REPO / 'cmake'}",
                 f"-DPython_EXECUTABLE={sys.executable}"],
                ["ninja", "-C", str(bld)], ["cmake", "--install", str(bld), "--prefix", str(prefix)]):
        procs.append(subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False))
        if procs[-1].returncode != 0:
            break
    return procs, bld, prefix


def aot_targets(prefix: Path, package: str, tmp_path: Path) -> list[str]:
    """The installed package's generated ``_aot.targets()``, run in a child interpreter."""
    import sys

    env = dict(os.environ, PYTHONPATH=f"{prefix}{os.pathsep}{REPO / 'python'}")
    out = subprocess.run([sys.executable, "-c", f"import {package}._aot as a; print(','.join(a.targets()))"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().split(",")


@pytest.mark.parametrize("jit", ["ON", "OFF"])
def test_nvidia_only_list_needs_no_intel_tool(tmp_path: Path, jit: str) -> None:
    """USE_AOT_DEVLIST=sm_80,sm_90 with clang, llvm-spirv and ocloc pointing nowhere: the Intel call
    builds nothing (no SPIR-V either: JIT fallback is SPIR-V for Intel devices only) and still
    writes the manifest and _aot.py; USE_AOT_JIT_FALLBACK=OFF builds the same."""
    nvcc_path()
    project = MIXED_PROJECT.format(first=CUDA_CALL.format(kernels=KERNELS), second=INTEL_CALL.format(kernels=KERNELS))
    procs, bld, prefix = configure_and_install(tmp_path, project, "sm_80,sm_90", {**NO_INTEL_TOOLS, "USE_AOT_JIT_FALLBACK": jit})
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    so = prefix / "mixedpkg" / "_k.so"
    assert sorted(listing(so)) == sorted([("cubin", "sm_80"), ("cubin", "sm_90")] * 2)  # cuobjdump's view
    sections = run(["readelf", "-SW", str(so)]).stdout
    assert "__CLANG_OFFLOAD_BUNDLE__" not in sections  # no Intel image at all
    manifest = __import__("json").loads((prefix / "mixedpkg" / "_aot_manifest.json").read_text())
    assert manifest["devlist"]["cuda"] == ["sm_80", "sm_90"] and manifest["devlist"]["targets"] == []
    assert {i["vendor"] for i in manifest["images"]} == {"nvidia"}
    assert aot_targets(prefix, "mixedpkg", tmp_path) == ["sm_80", "sm_90"]


def test_nvcc_only_project_gets_manifest_and_hook(tmp_path: Path) -> None:
    """A project whose only device-code call is aotwheel_add_cuda_device_code(... DESTINATION)."""
    nvcc_path()
    call = CUDA_CALL.format(kernels=KERNELS).replace("DEVLIST AOT", "DEVLIST AOT DESTINATION mixedpkg")
    procs, _, prefix = configure_and_install(tmp_path, MIXED_PROJECT.format(first=call, second=""), "sm_80,sm_90,ptx", NO_INTEL_TOOLS)
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    manifest = __import__("json").loads((prefix / "mixedpkg" / "_aot_manifest.json").read_text())
    assert manifest["devlist"]["cuda"] == ["sm_80", "sm_90", "compute_90"]
    assert [(m["name"], m["kind"]) for m in manifest["images"][0]["members"]] == [("sm_80", "cubin"), ("sm_90", "cubin"), ("compute_90", "ptx")]
    assert manifest["toolchain"]["nvcc"] == nvcc_path()
    assert aot_targets(prefix, "mixedpkg", tmp_path) == ["sm_80", "sm_90"]


@pytest.mark.parametrize("calls,devlist,line", [
    ("intel", "pvc,sm_90", "aotwheel_add_device_code: USE_AOT_DEVLIST names NVIDIA targets (sm_90) but no aotwheel_add_cuda_device_code() "
     "call in this project builds them; add one, drop them from the list, or set AOTWHEEL_ALLOW_UNBUILT=nvidia to build without them"),
    ("cuda", "pvc,ats-m150,sm_90", "aotwheel_add_cuda_device_code: USE_AOT_DEVLIST names Intel devices (pvc, acm-g10) but no "
     "aotwheel_add_device_code() or aotwheel_target_sycl() call in this project builds them; add one, drop them from the list, "
     "or set AOTWHEEL_ALLOW_UNBUILT=intel to build without them"),
], ids=["sm_90-without-cuda-call", "pvc-without-intel-call"])
def test_a_vendor_without_build_step_stops_configure(tmp_path: Path, calls: str, devlist: str, line: str) -> None:
    """Never a silent drop: one line naming the call to add; the opt-out turns it into a warning."""
    call = (INTEL_CALL if calls == "intel" else CUDA_CALL).format(kernels=KERNELS)
    project = MIXED_PROJECT.format(first=call, second="")
    proc = configure_and_install(tmp_path / "a", project, devlist)[0][0]
    assert proc.returncode != 0
    errors = [ln.strip() for ln in proc.stderr.splitlines() if "USE_AOT_DEVLIST names" in ln]
    assert errors == [line], proc.stderr[-3000:]
    vendor = "nvidia" if calls == "intel" else "intel"
    env = {"AOTWHEEL_ALLOW_UNBUILT": vendor} | (NO_INTEL_TOOLS if calls == "cuda" else {})
    procs, _, _ = configure_and_install(tmp_path / "b", project, devlist, env)
    assert procs[0].returncode == 0, procs[0].stderr[-3000:]
    assert line in " ".join(procs[0].stderr.split())  # still said, as a warning


def test_remedy_keeps_every_vendor_and_agrees(tmp_path: Path) -> None:
    """A pvc,sm_90,ptx build checked on sm_100: the JITWarning and `aotwheel check` advise the same
    list, keeping pvc, the sm_90 cubin and the PTX (NVIDIA's rules: compute_90 PTX JITs on 10.0)."""
    import sys
    import warnings

    nvcc_path()
    for tool in ("ocloc", "clang-15", "llvm-spirv-15"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (ci/setup.sh installs it)")
    project = MIXED_PROJECT.format(first=CUDA_CALL.format(kernels=KERNELS), second=INTEL_CALL.format(kernels=KERNELS))
    procs, _, prefix = configure_and_install(tmp_path, project, "pvc,sm_90,ptx")
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    so = prefix / "mixedpkg" / "_k.so"
    want = "rebuild with USE_AOT_DEVLIST=pvc,sm_90,sm_100,ptx"
    from aotwheel import JITWarning, check

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [v] = check(str(so), devices="sm_100", policy="warn")
    assert v.verdict == "jit" and v.remedy == want
    assert [str(w.message) for w in caught if issubclass(w.category, JITWarning)][0].count(want) == 1
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    cli = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(so), "--device", "sm_100"], capture_output=True, text=True,
                         env=env, timeout=120, check=False)
    assert cli.returncode == 0 and cli.stdout.strip().endswith(want), cli.stdout + cli.stderr


def test_this_repository_builds_for_nvidia_alone(tmp_path: Path) -> None:
    """`USE_AOT_DEVLIST=sm_80,sm_90 pip wheel .` of this repository with clang, llvm-spirv and ocloc
    pointing nowhere and nvcc from PyPI: the wheel's manifest and aotwheel._aot.targets() name
    sm_80 and sm_90, and cuobjdump reads both cubins of every kernel source in _kernels."""
    import importlib.util
    import json
    import sys
    import zipfile

    nvcc_path()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_REMOTE"))}
    env.update(NO_INTEL_TOOLS, USE_AOT_DEVLIST="sm_80,sm_90", AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    flags = ["--no-build-isolation"] if importlib.util.find_spec("scikit_build_core") else []
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *flags, "-w", str(tmp_path / "dist"), str(REPO),
                           "-C", f"build-dir={tmp_path / 'build'}"], env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("aotwheel-*.whl")
    root = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(root)
    manifest = json.loads((root / "aotwheel" / "_aot_manifest.json").read_text())
    assert manifest["devlist"]["cuda"] == ["sm_80", "sm_90"] and manifest["devlist"]["targets"] == []
    assert {i["vendor"] for i in manifest["images"]} == {"nvidia"}
    [so] = (root / "aotwheel").glob("_kernels*.so")
    sources = len(list(KERNELS.glob("*.cl")))
    assert sorted(listing(so)) == sorted([("cubin", "sm_80"), ("cubin", "sm_90")] * sources)
    out = subprocess.run([sys.executable, "-c", "import aotwheel._aot as a; print(','.join(a.targets()))"], capture_output=True,
                         text=True, env=dict(env, PYTHONPATH=str(root)), cwd=tmp_path, timeout=120, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "sm_80,sm_90", out.stdout + out.stderr


def test_family_specific_targets_build_and_follow_the_family_rule(tmp_path: Path) -> None:
    """sm_100f and sm_120f from USE_AOT_DEVLIST build with nvcc (cuobjdump lists the cubins, and
    prints 'f' cubins without the suffix: REFERENCE §12); NVIDIA's family rule: an 'f' cubin runs on
    its major's later minors (10.3, 12.1), never on another major (11.0)."""
    from aotwheel import check

    nvcc_path()
    proc, bld = build(tmp_path, "", env_devlist="sm_100f,sm_120f,ptx")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (bld / "made.txt").read_text() == "sm_100f;sm_120f;compute_120"
    so = bld / "libkern.so"
    assert sorted(listing(so)) == sorted([("cubin", "sm_100"), ("cubin", "sm_120"), ("ptx", "sm_120")] * 2)
    got = {v.device: (v.verdict, v.image, v.rule) for v in check(str(so), devices="sm_103,sm_121,sm_110,sm_90", policy="ignore")}
    assert got == {"sm_103": ("native", "sm_100f", "cubin-family"), "sm_121": ("native", "sm_120f", "cubin-family"),
                   "sm_110": ("unsupported", None, "no-match"), "sm_90": ("unsupported", None, "no-match")}


SCALED_PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(cuda_scaled LANGUAGES C)
include("{cmake}/aotwheel-cuda.cmake")
add_library(kern SHARED stub.c)
aotwheel_add_cuda_device_code(kern NAME kernels TARGETS sm_90 ptx SOURCES "{kernel}")
"""


def scaled_build(tmp_path: Path, kernel: Path, bld: Path, cache: str) -> subprocess.CompletedProcess[str]:
    """Configure (SCALED_PROJECT over ``kernel``) and build in ``bld`` with AOTWHEEL_CACHE_DIR=``cache``."""
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "CMakeLists.txt").write_text(SCALED_PROJECT.format(cmake=REPO / "cmake", kernel=kernel))
    (src / "stub.c").write_text(STUB)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_REMOTE_CACHE"))}
    env["AOTWHEEL_CACHE_DIR"] = cache
    proc = subprocess.run(["cmake", "-S", str(src), "-B", str(bld), "-G", "Ninja"], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    if proc.returncode == 0:
        proc = subprocess.run(["ninja", "-C", str(bld)], capture_output=True, text=True, env=env, timeout=600, check=False)
    return proc


def scaled_kernel(directory: Path, scale: str, include: str = "scale.h") -> Path:
    """``directory/scaled.cu`` (written once: later calls edit only the header) and its scale.h."""
    directory.mkdir(exist_ok=True)
    (directory / "scale.h").write_text(f"#define SCALE {scale}\n")
    kernel = directory / "scaled.cu"
    if not kernel.exists():
        kernel.write_text(f'#include "{include}"\n__kernel void scale(__global float *x) {{ x[0] *= SCALE; }}\n')
    return kernel


def test_a_header_edit_is_a_cache_miss_and_a_rebuild(tmp_path: Path) -> None:
    """The cache key is the source as nvcc's preprocessor sees it for the target: a kernel
    #including scale.h (SCALE 1234.5f) is built, the header is edited (4321.5f) and the project is
    built in a fresh tree with the same cache: both targets miss, and the cubin carries the new
    constant's IEEE bits and the PTX its 0f literal, not the old ones. The first tree, rebuilt after
    the edit back, reruns both compile edges (their depfiles list scale.h) and hits."""
    nvcc_path()
    kernel = scaled_kernel(tmp_path / "kernel", "1234.5f")
    cache = tmp_path / "cache"

    def configure_and_build(bld: Path) -> Path:
        proc = scaled_build(tmp_path, kernel, bld, str(cache))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return bld / "aotwheel" / "kernels_cuda"

    def constants(work: Path) -> tuple[bool, bool]:
        """Whether the cubin and the PTX hold 1234.5 (else 4321.5: both checked absent/present)."""
        cubin, ptx = (work / "scaled.sm_90.cubin").read_bytes(), (work / "scaled.compute_90.ptx").read_text()
        old, new = struct.pack("<f", 1234.5), struct.pack("<f", 4321.5)
        assert (old in cubin) != (new in cubin) and ("0f449A5000" in ptx) != ("0f45870C00" in ptx), ptx[-800:]
        return old in cubin, "0f449A5000" in ptx

    first = configure_and_build(tmp_path / "a")
    assert constants(first) == (True, True)
    assert sorted(events(cache)) == ["miss", "miss", "store", "store"]

    scaled_kernel(tmp_path / "kernel", "4321.5f")
    assert constants(configure_and_build(tmp_path / "b")) == (False, False)
    assert sorted(events(cache)[4:]) == ["miss", "miss", "store", "store"]

    scaled_kernel(tmp_path / "kernel", "1234.5f")
    configure_and_build(tmp_path / "a")
    assert events(cache)[8:] == ["hit", "hit"]
    assert constants(first) == (True, True)


def test_a_missing_header_fails_the_build_with_nvccs_own_line(tmp_path: Path) -> None:
    """The key's preprocessing and the compile both need the header: the build stops with nvcc's
    error naming it (the preprocessing failure only notes that the step went uncached)."""
    nvcc_path()
    kernel = scaled_kernel(tmp_path / "kernel", "2.0f", include="absent_scale.h")
    proc = scaled_build(tmp_path, kernel, tmp_path / "b", str(tmp_path / "cache"))
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(r"aotwheel: scaled\.cu \(sm_90\): not cached: nvcc -E failed \(.*absent_scale\.h", said), said[-3000:]
    assert re.search(r"nvcc could not compile scaled\.cu for sm_90: .*absent_scale\.h", said), said[-3000:]
    assert not any((tmp_path / "cache").rglob("*.obj")) and not (tmp_path / "cache" / "v2" / "objects").is_dir()


def test_without_a_cache_the_depfile_still_lists_the_header(tmp_path: Path) -> None:
    """AOTWHEEL_CACHE_DIR=off: no key is made (no preprocessing), and nvcc's own -MD depfile
    lists scale.h, so editing it rebuilds the cubin in the same tree."""
    nvcc_path()
    kernel = scaled_kernel(tmp_path / "kernel", "1234.5f")
    cubin = tmp_path / "b" / "aotwheel" / "kernels_cuda" / "scaled.sm_90.cubin"
    assert scaled_build(tmp_path, kernel, tmp_path / "b", "off").returncode == 0
    assert struct.pack("<f", 1234.5) in cubin.read_bytes()
    scaled_kernel(tmp_path / "kernel", "4321.5f")
    assert scaled_build(tmp_path, kernel, tmp_path / "b", "off").returncode == 0
    assert struct.pack("<f", 4321.5) in cubin.read_bytes()
