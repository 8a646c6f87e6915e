"""AMD builds: ``gfx*`` targets in USE_AOT_DEVLIST built by the real hipcc (Debian 12's 5.2.3:
clang-15's AMDGPU back end and rocm-device-libs) through aotwheel_add_hip_device_code() in real
CMake + ninja builds, alone and beside Intel and NVIDIA targets.

What was built is read back by tools that are not aotwheel: the extension's ``.hip_fatbin`` cut out
by llvm-objcopy and listed by clang-offload-bundler, roc-obj-ls (hipcc's own lister) on the
extension, GNU readelf on the code object the bundler unbundles, and cuobjdump for the NVIDIA
part; then ``aotwheel inspect``, the manifest, the generated ``_aot.py`` and the verdicts must
agree with them. No AMD GPU is reachable: AMD devices are named (``--device gfx90a``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import tool_logger
from conftest import BUNDLER, REPO, run_tool

pytestmark = [
    pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake and ninja"),
    pytest.mark.skipif(shutil.which("hipcc") is None, reason="hipcc is not installed (ci/setup.sh --test installs it in the Debian 12 lane)"),
    pytest.mark.usefixtures("builds"),
]

HIP = REPO / "csrc" / "hip" / "elementwise.hip"
KERNELS = REPO / "csrc" / "kernels"
OBJCOPY = BUNDLER.replace("clang-offload-bundler-", "llvm-objcopy-")  # llvm-N beside the bundler of clang-tools-N
HIP_ID = "hipv4-amdgcn-amd-amdhsa--"
NO_INTEL_TOOLS = {"AOTWHEEL_CLANG": "/nonexistent/clang", "AOTWHEEL_LLVM_SPIRV": "/nonexistent/llvm-spirv",
                  "AOTWHEEL_OCLOC": "/nonexistent/ocloc"}

PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(hipdemo LANGUAGES C)
find_package(aotwheel CONFIG REQUIRED)
add_library(_k MODULE stub.c)
set_target_properties(_k PROPERTIES PREFIX "" SUFFIX ".so")
aotwheel_resolve_devlist(AOT)
{calls}
install(TARGETS _k LIBRARY DESTINATION hippkg)
"""
HIP_CALL = ('aotwheel_add_hip_device_code(_k NAME kernels DEVLIST AOT {dest} SOURCES "{hip}" OUT_TARGETS made)\n'
            'file(WRITE "${{CMAKE_BINARY_DIR}}/made.txt" "${{made}}")')
CUDA_CALL = 'aotwheel_add_cuda_device_code(_k NAME kernels DEVLIST AOT SOURCES "{kernels}/elementwise.cl")'
INTEL_CALL = 'aotwheel_add_device_code(_k NAME kernels DEVLIST AOT DESTINATION hippkg SOURCES "{kernels}/elementwise.cl")'
STUB = '#include "kernels_hip.h"\nunsigned k_images(void) { return aotwheel_kernels_hip_image_count; }\n'


def project(*calls: str, hip_destination: bool = False) -> str:
    words = {"hip": HIP, "kernels": KERNELS, "dest": "DESTINATION hippkg" if hip_destination else ""}
    return PROJECT.format(calls="\n".join(c.format(**words) for c in calls))


def fake_nvcc(directory: Path) -> tuple[Path, Path]:
    """An ``nvcc`` that answers ``--version`` and logs every run: hipcc without HIP_PLATFORM=amd
    would take it for its compiler (it looks for nvcc on PATH), and the log would show it."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "nvcc-runs.log"
    nvcc = directory / "nvcc"
    nvcc.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\necho "Cuda compilation tools, release 12.0, V12.0.76"\n')
    nvcc.chmod(0o755)
    return nvcc, log


def configure_build_install(tmp_path: Path, text: str, devlist: str, env: dict[str, str] | None = None, *,
                            build: Path | None = None) -> tuple[list[subprocess.CompletedProcess[str]], Path, Path]:
    """cmake + ninja + cmake --install (stops at the first failing step)."""
    src = tmp_path / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "CMakeLists.txt").write_text(text)
    (src / "stub.c").write_text(STUB if "add_hip_device_code" in text else "int k_nothing(void) { return 0; }\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_ALLOW", "AOTWHEEL_REMOTE", "HIP_PLATFORM"))}
    base.update(AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"), USE_AOT_DEVLIST=devlist, **(env or {}))
    bld, prefix = build or tmp_path / "b", tmp_path / "prefix"
    procs = []
    for cmd in (["cmake", "-S", str(src), "-B", str(bld), "-G", "Ninja", f"-Daotwheel_DIR={REPO / 'cmake'}",
                 f"-DPython_EXECUTABLE={sys.executable}"],
                ["ninja", "-C", str(bld)], ["cmake", "--install", str(bld), "--prefix", str(prefix)]):
        procs.append(subprocess.run(cmd, capture_output=True, text=True, env=base, timeout=600, check=False))
        if procs[-1].returncode != 0:
            break
    return procs, bld, prefix


def bundled_ids(so: Path, tmp_path: Path) -> list[list[str]]:
    """The ids of every offload bundle in ``so``'s .hip_fatbin, per clang-offload-bundler -list on
    the section llvm-objcopy cuts out (bundles start page-aligned, zero padding between them), the
    host entry (its id is the host triple as hipcc's clang spells it) as ``host``."""
    section = tmp_path / "hip_fatbin.bin"
    run_tool([OBJCOPY, "-O", "binary", "--only-section=.hip_fatbin", str(so), str(section)])
    data = section.read_bytes()
    starts = [m.start() for m in re.finditer(re.escape(b"__CLANG_OFFLOAD_BUNDLE__"), data)]
    listed = []
    for i, start in enumerate(starts):
        one = tmp_path / f"bundle{i}.bin"
        one.write_bytes(data[start:starts[i + 1] if i + 1 < len(starts) else len(data)])
        ids = run_tool([BUNDLER, "-list", "-type=o", f"-input={one}"]).stdout.split()
        listed.append(sorted("host" if i.startswith("host-x86_64-") else i for i in ids))
    return listed


def roc_obj_ids(so: Path) -> list[str]:
    """hipcc's roc-obj-ls on the extension: the bundle entry ids it lists (column 2), sorted, the
    host entry as ``host``."""
    out = run_tool(["roc-obj-ls", str(so)]).stdout
    ids = [line.split()[1] for line in out.splitlines() if line.strip() and line.split()[0].isdigit()]
    return sorted("host" if i.startswith("host-x86_64-") else i for i in ids)


def hipcc_runs(log: Path, what: str) -> list[str]:
    """The logged device-code runs of hipcc: ``compile`` (a code object) or ``preprocess`` (-E)."""
    runs = [ln for ln in log.read_text().splitlines() if "--no-gpu-bundle-output" in ln]
    return [ln for ln in runs if (" -E " in f" {ln} ") == (what == "preprocess")]


def aot_targets(prefix: Path, tmp_path: Path) -> list[str]:
    env = dict(os.environ, PYTHONPATH=f"{prefix}{os.pathsep}{REPO / 'python'}")
    out = subprocess.run([sys.executable, "-c", "import hippkg._aot as a; print(','.join(a.targets()))"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().split(",")


def cli_check(so: Path, device: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(so), "--device", device, "--json"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    [verdict] = json.loads(proc.stdout)["verdicts"]
    return f"{verdict['verdict']} {verdict['rule']}"


def test_amd_only_list_builds_bundles_the_tools_read_back(tmp_path: Path) -> None:
    """USE_AOT_DEVLIST=gfx90a,gfx1030 with the Intel tools pointing nowhere, HIP_PLATFORM=nvidia
    in the environment and an nvcc on PATH: hipcc still builds AMD code objects (aotwheel sets
    HIP_PLATFORM=amd), one per target, bundled and embedded page-aligned in .hip_fatbin, where
    clang-offload-bundler, roc-obj-ls and readelf find what aotwheel inspect, the manifest,
    _aot.targets() and the verdicts say. A second build from a clean build tree runs no hipcc
    compile: every code object comes from the cache."""
    from aotwheel.inspector import inspect

    fake_dir = tmp_path / "fakebin"
    _, nvcc_log = fake_nvcc(fake_dir)
    hipcc, hipcc_log = tool_logger(tmp_path / "logged", "hipcc")
    env = {**NO_INTEL_TOOLS, "HIP_PLATFORM": "nvidia", "PATH": f"{fake_dir}{os.pathsep}{os.environ['PATH']}", "AOTWHEEL_HIPCC": str(hipcc)}
    procs, bld, prefix = configure_build_install(tmp_path, project(HIP_CALL, hip_destination=True), "gfx90a,gfx1030", env)
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    assert not nvcc_log.exists()
    assert (bld / "made.txt").read_text() == "gfx90a;gfx1030"
    compiles = hipcc_runs(hipcc_log, "compile")
    assert sorted(re.search(r"--offload-arch=(\S+)", ln)[1] for ln in compiles) == ["gfx1030", "gfx90a"]  # type: ignore[index]
    # Each compile's cache key came from the same command preprocessing only (-E).
    assert sorted(ln.replace(" -E ", " ") for ln in hipcc_runs(hipcc_log, "preprocess")) == sorted(ln.split(" -o ")[0] for ln in compiles)

    so = prefix / "hippkg" / "_k.so"
    want = sorted(["host", HIP_ID + "gfx90a", HIP_ID + "gfx1030"])
    assert bundled_ids(so, tmp_path) == [want]
    if shutil.which("roc-obj-ls"):  # Debian 12's hipcc has it; sid's moved it to hip-utils
        assert roc_obj_ids(so) == want
    assert re.search(r"\.hip_fatbin\s+PROGBITS(\s+\S+){4}\s+A\s+0\s+0\s+4096", run_tool(["readelf", "-SW", str(so)]).stdout)
    # The gfx90a entry, unbundled by the bundler, is a code object readelf calls gfx90a.
    section = tmp_path / "bundle0.bin"  # bundled_ids' cut of the first bundle
    co = tmp_path / "gfx90a.co"
    run_tool([BUNDLER, "-unbundle", "-type=o", f"-input={section}", f"-targets={HIP_ID}gfx90a", f"-output={co}"])
    assert re.search(r"Flags:\s+0x[0-9a-f]+, gfx90a\b", run_tool(["readelf", "-h", str(co)]).stdout)

    (fr,) = inspect(so).files
    assert [(t.name, t.vendor, t.member) for t in fr.native_targets] == [("gfx90a", "amd", HIP_ID + "gfx90a"), ("gfx1030", "amd", HIP_ID + "gfx1030")]
    assert fr.warnings == []
    manifest = json.loads((prefix / "hippkg" / "_aot_manifest.json").read_text())
    assert manifest["devlist"]["amd"] == ["gfx90a", "gfx1030"]
    [image] = manifest["images"]
    assert (image["vendor"], image["triple"], image["source"]) == ("amd", "amdgcn-amd-amdhsa", "elementwise.hip")
    assert [(m["device"], m["name"], m["kind"]) for m in image["members"]] == [("gfx90a", HIP_ID + "gfx90a", "code-object"),
                                                                               ("gfx1030", HIP_ID + "gfx1030", "code-object")]
    assert manifest["toolchain"]["hipcc"] == os.path.realpath(hipcc)
    assert aot_targets(prefix, tmp_path) == ["gfx90a", "gfx1030"]
    # The HIP runtime's choice (aotwheel's AMD rules): native for the listed processors, whatever
    # the device's xnack setting (the code objects leave it open); no fallback to a sibling.
    assert {d: cli_check(so, d) for d in ("gfx90a", "gfx90a:xnack-", "gfx1030", "gfx1031", "gfx942")} == {
        "gfx90a": "native amd-exact", "gfx90a:xnack-": "native amd-exact", "gfx1030": "native amd-exact",
        "gfx1031": "unsupported amd-no-match", "gfx942": "unsupported amd-no-match"}

    hipcc_log.unlink()
    again, _, _ = configure_build_install(tmp_path, project(HIP_CALL, hip_destination=True), "gfx90a,gfx1030", env, build=tmp_path / "b2")
    assert again[-1].returncode == 0, again[-1].stdout[-3000:] + again[-1].stderr[-3000:]
    assert hipcc_runs(hipcc_log, "compile") == [] and len(hipcc_runs(hipcc_log, "preprocess")) == 2
    events = (tmp_path / "cache" / "v2" / "events.log").read_text().split("\n")
    assert sorted(ln.split()[0] for ln in events if " amd:" in ln) == ["hit", "hit", "miss", "miss", "store", "store"]


@pytest.mark.usefixtures("nvcc")
def test_mixed_intel_nvidia_amd_list_builds_every_vendor(tmp_path: Path) -> None:
    """USE_AOT_DEVLIST=pvc,sm_90,gfx90a: ocloc, nvcc and hipcc each build their part into one
    extension; the bundler lists gfx90a in .hip_fatbin, cuobjdump the sm_90 cubin, and aotwheel
    inspect, the manifest and _aot.targets() name all three."""
    from aotwheel.inspector import inspect

    from _cuda_util import listing

    for tool in ("ocloc", "clang-15", "llvm-spirv-15"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (ci/setup.sh installs it)")
    procs, _, prefix = configure_build_install(tmp_path, project(INTEL_CALL, CUDA_CALL, HIP_CALL), "pvc,sm_90,gfx90a")
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    so = prefix / "hippkg" / "_k.so"
    assert bundled_ids(so, tmp_path) == [sorted(["host", HIP_ID + "gfx90a"])]
    assert listing(so) == [("cubin", "sm_90")]
    (fr,) = inspect(so).files
    assert {(t.vendor, t.name) for t in fr.native_targets} == {("intel", "pvc"), ("nvidia", "sm_90"), ("amd", "gfx90a")}
    manifest = json.loads((prefix / "hippkg" / "_aot_manifest.json").read_text())
    listed = manifest["devlist"]
    assert ([t["name"] for t in listed["targets"]], listed["cuda"], listed["amd"]) == (["pvc"], ["sm_90"], ["gfx90a"])
    assert sorted(i["vendor"] for i in manifest["images"]) == ["amd", "intel", "intel", "nvidia"]  # Intel: native + SPIR-V
    assert sorted(aot_targets(prefix, tmp_path)) == ["gfx90a", "pvc", "sm_90"]
    assert cli_check(so, "gfx90a") == "native amd-exact" and cli_check(so, "gfx1030") == "unsupported amd-no-match"


def _hipcc_builds(processor: str, tmp_path: Path) -> bool:
    """Whether the installed hipcc itself builds a code object for ``processor``."""
    env = dict(os.environ, HIP_PLATFORM="amd")
    proc = subprocess.run(["hipcc", f"--offload-arch={processor}", "--genco", str(HIP), "-o", str(tmp_path / f"{processor}.co")],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    return proc.returncode == 0


def test_a_processor_this_hipcc_cannot_build_stops_configure(tmp_path: Path) -> None:
    """gfx1100 is a processor clang-15 knows but Debian 12's rocm-device-libs 5.2 serve no
    library for: hipcc fails on it, and configure stops first with one line naming the fix."""
    if _hipcc_builds("gfx1100", tmp_path):
        pytest.skip("this hipcc builds gfx1100 (a ROCm newer than Debian 12's 5.2)")
    procs, _, _ = configure_build_install(tmp_path, project(HIP_CALL, hip_destination=True), "gfx90a,gfx1100", NO_INTEL_TOOLS)
    assert len(procs) == 1 and procs[0].returncode != 0
    lines = [ln.strip() for ln in procs[0].stderr.splitlines() if "gfx1100" in ln]
    assert len(lines) == 1 and lines[0].startswith("aotwheel_add_hip_device_code: hipcc "), procs[0].stderr[-3000:]
    assert "cannot build gfx1100" in lines[0] and "drop gfx1100 from USE_AOT_DEVLIST" in lines[0]


def test_rdna3_and_a_generic_processor_where_hipcc_builds_them(tmp_path: Path) -> None:
    """USE_AOT_DEVLIST=gfx90a,gfx1100,gfx11-generic with a hipcc that builds them (Debian sid's:
    ROCm 6.4, clang-21): the bundler lists all three, and the HIP runtime's rule for generic code
    objects makes gfx1101 native through gfx11-generic (aotwheel's AMD rules, amd-generic)."""
    if not _hipcc_builds("gfx11-generic", tmp_path):
        pytest.skip("this hipcc builds no gfx11-generic (Debian 12's 5.2 stops at gfx1036 and has no generic processors)")
    procs, _, prefix = configure_build_install(tmp_path, project(HIP_CALL, hip_destination=True), "gfx90a,gfx1100,gfx11-generic",
                                               NO_INTEL_TOOLS)
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    so = prefix / "hippkg" / "_k.so"
    assert bundled_ids(so, tmp_path) == [sorted(["host", *(HIP_ID + t for t in ("gfx90a", "gfx1100", "gfx11-generic"))])]
    assert aot_targets(prefix, tmp_path) == ["gfx90a", "gfx1100", "gfx11-generic"]
    assert {d: cli_check(so, d) for d in ("gfx1100", "gfx1101", "gfx1030")} == {
        "gfx1100": "native amd-exact", "gfx1101": "native amd-generic", "gfx1030": "unsupported amd-no-match"}


def test_a_misspelt_processor_stops_configure_with_suggestions(tmp_path: Path) -> None:
    procs, _, _ = configure_build_install(tmp_path, project(HIP_CALL, hip_destination=True), "gfx90b", NO_INTEL_TOOLS)
    assert procs[0].returncode != 0
    [line] = [ln.strip() for ln in procs[0].stderr.splitlines() if "gfx90b" in ln]
    assert "'gfx90b' is not a known AMD GPU processor; did you mean" in line and "gfx90a" in line.split("did you mean")[1]


def test_no_amd_target_needs_no_hipcc(tmp_path: Path) -> None:
    """A list naming no AMD GPU: the HIP call builds nothing, hipcc may be missing, and the
    project's code still compiles against the header (no image)."""
    procs, bld, _ = configure_build_install(tmp_path, project(INTEL_CALL, HIP_CALL), "pvc", {"AOTWHEEL_HIPCC": "/nonexistent/hipcc"})
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    assert "aotwheel: no AMD targets in the device list; kernels gets no HIP code objects" in procs[0].stdout
    assert (bld / "made.txt").read_text() == ""
    assert "aotwheel_kernels_hip_image_count = 0;" in (bld / "aotwheel" / "kernels_amd" / "kernels_hip_embed.c").read_text()


def test_an_amd_list_without_the_hip_call_stops_configure(tmp_path: Path) -> None:
    """Never a silent drop: gfx90a listed, only the Intel call in the project."""
    procs, _, _ = configure_build_install(tmp_path, project(INTEL_CALL), "gfx90a", NO_INTEL_TOOLS)
    assert procs[0].returncode != 0
    said = " ".join(procs[0].stderr.split())
    assert "USE_AOT_DEVLIST names AMD targets (gfx90a) but no aotwheel_add_hip_device_code() call" in said, procs[0].stderr[-3000:]


def test_this_repository_builds_its_hip_kernel_for_amd_alone(tmp_path: Path) -> None:
    """This repository's own build (CMakeLists.txt) with USE_AOT_DEVLIST=gfx90a,gfx1030 and the
    Intel tools pointing nowhere: _kernels carries csrc/hip/elementwise.hip's code objects for
    both, as the bundler lists them, and its manifest names them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_ALLOW", "AOTWHEEL_REMOTE"))}
    env.update(NO_INTEL_TOOLS, USE_AOT_DEVLIST="gfx90a,gfx1030", AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    bld = tmp_path / "b"
    for cmd in (["cmake", "-S", str(REPO), "-B", str(bld), "-G", "Ninja", f"-DPython_EXECUTABLE={sys.executable}"],
                ["ninja", "-C", str(bld)]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [so] = bld.glob("_kernels*.so")
    assert bundled_ids(so, tmp_path) == [sorted(["host", HIP_ID + "gfx90a", HIP_ID + "gfx1030"])]
    # the kernel is there under its own name: the bundler's gfx90a entry, unbundled, defines vector_add
    co = tmp_path / "gfx90a.co"
    run_tool([BUNDLER, "-unbundle", "-type=o", f"-input={tmp_path / 'bundle0.bin'}", f"-targets={HIP_ID}gfx90a", f"-output={co}"])
    assert re.search(r"\bFUNC\s+GLOBAL\s+\w+\s+\d+\s+vector_add$", run_tool(["readelf", "-sW", str(co)]).stdout, re.M)
    manifest = json.loads((bld / "aotwheel" / "kernels" / "_aot_manifest.json").read_text())
    assert manifest["devlist"]["amd"] == ["gfx90a", "gfx1030"]
    assert [(i["vendor"], i["source"]) for i in manifest["images"]] == [("amd", "elementwise.hip")]


SCALED_HIP = """#include <hip/hip_runtime.h>
#include "scale.h"
extern "C" __global__ void scale(float *x) { x[threadIdx.x] *= SCALE; }
"""


def test_a_header_edit_is_a_cache_miss_and_a_rebuild(tmp_path: Path) -> None:
    """The cache key is the source as hipcc's preprocessor sees it: a kernel #including scale.h
    (SCALE 1234.5f) is built, the header is edited (4321.5f) and the same list is built in a
    fresh tree with the same cache: both targets miss and the extension carries the new constant
    (its IEEE bits, a literal in the code object), not the old one. The same tree, rebuilt after
    the edit back, reruns the compile edges (their depfiles list scale.h) and hits."""
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    (kernel / "scaled.hip").write_text(SCALED_HIP)
    header = kernel / "scale.h"
    call = f'aotwheel_add_hip_device_code(_k NAME kernels DEVLIST AOT DESTINATION hippkg SOURCES "{kernel / "scaled.hip"}")'
    old, new = struct.pack("<f", 1234.5), struct.pack("<f", 4321.5)

    def amd_events() -> list[str]:
        return [ln.split()[0] for ln in (tmp_path / "cache" / "v2" / "events.log").read_text().splitlines() if " amd:" in ln]

    header.write_text("#define SCALE 1234.5f\n")
    procs, bld, prefix = configure_build_install(tmp_path, project(call), "gfx90a,gfx1030", NO_INTEL_TOOLS)
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    so = (prefix / "hippkg" / "_k.so").read_bytes()
    assert old in so and new not in so
    assert sorted(amd_events()) == ["miss", "miss", "store", "store"]

    header.write_text("#define SCALE 4321.5f\n")
    procs, _, prefix2 = configure_build_install(tmp_path, project(call), "gfx90a,gfx1030", NO_INTEL_TOOLS, build=tmp_path / "b2")
    assert procs[-1].returncode == 0, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    so = (prefix2 / "hippkg" / "_k.so").read_bytes()
    assert new in so and old not in so
    assert sorted(amd_events()[4:]) == ["miss", "miss", "store", "store"]

    header.write_text("#define SCALE 1234.5f\n")  # back: the first tree's ninja reruns both compiles, from the cache
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_REMOTE", "HIP_PLATFORM"))}
    env.update(NO_INTEL_TOOLS, USE_AOT_DEVLIST="gfx90a,gfx1030", AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    rebuilt = subprocess.run(["ninja", "-C", str(bld)], capture_output=True, text=True, timeout=600, check=False, env=env)
    assert rebuilt.returncode == 0, rebuilt.stdout[-3000:]
    assert amd_events()[8:] == ["hit", "hit"]
    assert old in (bld / "_k.so").read_bytes()


def test_both_xnack_settings_of_one_processor_build_apart(tmp_path: Path) -> None:
    """USE_AOT_DEVLIST=gfx90a:xnack+,gfx90a:xnack-: two code objects of one processor, as hipcc
    builds them (readelf: xnack on, xnack off), bundled under their own ids; each device setting
    gets its own native code object."""
    procs, bld, prefix = configure_build_install(tmp_path, project(HIP_CALL, hip_destination=True), "gfx90a:xnack+,gfx90a:xnack-",
                                                 NO_INTEL_TOOLS)
    assert procs[-1].returncode == 0 and len(procs) == 3, procs[-1].stdout[-3000:] + procs[-1].stderr[-3000:]
    assert (bld / "made.txt").read_text() == "gfx90a:xnack+;gfx90a:xnack-"
    so = prefix / "hippkg" / "_k.so"
    assert bundled_ids(so, tmp_path) == [sorted(["host", HIP_ID + "gfx90a:xnack+", HIP_ID + "gfx90a:xnack-"])]
    for setting, said in (("+", "on"), ("-", "off")):
        co = tmp_path / f"xnack{said}.co"
        run_tool([BUNDLER, "-unbundle", "-type=o", f"-input={tmp_path / 'bundle0.bin'}", f"-targets={HIP_ID}gfx90a:xnack{setting}",
                  f"-output={co}"])
        assert re.search(rf"Flags:\s+0x[0-9a-f]+, gfx90a, xnack {said}\b", run_tool(["readelf", "-h", str(co)]).stdout)
    assert cli_check(so, "gfx90a:xnack+") == "native amd-exact" and cli_check(so, "gfx90a:xnack-") == "native amd-exact"
    assert cli_check(so, "gfx1030") == "unsupported amd-no-match"

