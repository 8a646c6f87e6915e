"""`pip wheel .` of this repository through scikit-build-core: a fat abi3 wheel for real, the
devlist from the environment or -C cmake.define, a persistent build-dir, a downstream
find_package against the installed package, and no wheel at all when a tool is missing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from _build_util import REPO, ar_members, build_env, embedded_images, logged_runs, ocloc_ip, ocloc_logger, other_pythons, require, run
from conftest import CLANG, LLVM_SPIRV

pytestmark = pytest.mark.usefixtures("builds")

TOOLS = ("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV, "ar")


def _pip_wheel(out: Path, build_dir: Path, env: dict[str, str], *config: str, isolated: bool = True
               ) -> subprocess.CompletedProcess[str]:
    """`pip wheel .`; isolated=False reuses this interpreter's scikit-build-core when it has one
    (seconds faster), else builds isolated like pip install does."""
    if not isolated:
        import importlib.util

        isolated = importlib.util.find_spec("scikit_build_core") is None
    flags = [] if isolated else ["--no-build-isolation"]
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *flags, "-w", str(out), str(REPO),
         "-C", f"build-dir={build_dir}", *config],
        env=env, capture_output=True, text=True)


def _unpack(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as z:
        z.extractall(dest)
    return dest


def _fat_members(so: Path, tmp: Path) -> list[list[str]]:
    out = []
    for n, img in enumerate(i for i in embedded_images(so) if i.triple == "spir64_gen"):
        p = tmp / f"m{n}.ar"
        p.write_bytes(img.image)  # COMPRESS ON (default): decompressed by zstandard
        out.append([m for m in ar_members(p) if not m.startswith("pad_")])
    return out


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """Three builds sharing one build-dir: env devlist, then -C pvc, then the env devlist again."""
    require(*TOOLS)
    root = tmp_path_factory.mktemp("wheel")
    wrapper, log = ocloc_logger(root / "bin")
    env = build_env(root / "cache", AOTWHEEL_OCLOC=str(wrapper), USE_AOT_DEVLIST="pvc,ats-m150")
    builds = {}
    for name, config in (("env", ()), ("cdefine", ("-C", "cmake.define.USE_AOT_DEVLIST=pvc")), ("again", ())):
        before = len(logged_runs(log))
        # The first build is exactly `pip wheel .` (isolated); the others only change the devlist.
        proc = _pip_wheel(root / name, root / "build", env, *config, isolated=name == "env")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        whl = next((root / name).glob("*.whl"))
        site = _unpack(whl, root / f"site-{name}")
        builds[name] = dict(wheel=whl, site=site, so=next((site / "aotwheel").glob("_kernels*.so")),
                            ocloc_runs=len(logged_runs(log)) - before)
    builds["root"] = root
    return builds


def test_wheel_is_abi3_and_ships_the_extension_manifest_and_cmake_files(wheels):
    whl = wheels["env"]["wheel"]
    assert re.fullmatch(r"aotwheel-[^-]+-cp310-abi3-linux_x86_64\.whl", whl.name)
    names = zipfile.ZipFile(whl).namelist()
    for want in ("aotwheel/_aot_manifest.json", "aotwheel/cmake/aotwheel-config.cmake", "aotwheel/cmake/aotwheel-intel.cmake"):
        assert want in names
    assert [n for n in names if n.startswith("aotwheel/_kernels")] == ["aotwheel/_kernels.abi3.so"]
    assert [n for n in names if n.startswith("aotwheel/_fastscan")] == ["aotwheel/_fastscan.abi3.so"]  # the inspector's C scanner
    # The run-time hook is rendered by aotwheel.hook when this checkout has it.
    assert ("aotwheel/_aot.py" in names) == (REPO / "python" / "aotwheel" / "hook.py").is_file()


def test_env_devlist_gives_native_images_for_both_ips_and_spirv(wheels, tmp_path):
    so = wheels["env"]["so"]
    ips = [f"64.{ocloc_ip('pvc')}", f"64.{ocloc_ip('ats-m150')}"]
    assert ips == ["64.12.60.7", "64.12.55.8"]
    members = _fat_members(so, tmp_path)
    assert members and all(m == ips + ["generic_ir"] for m in members)
    assert any(i.triple == "spir64" and i.image[:4] == bytes.fromhex("03022307") for i in embedded_images(so))


def test_cmake_define_wins_and_gives_a_pvc_only_wheel(wheels, tmp_path):
    members = _fat_members(wheels["cdefine"]["so"], tmp_path)
    assert members and all(m == [f"64.{ocloc_ip('pvc')}", "generic_ir"] for m in members)
    assert wheels["cdefine"]["ocloc_runs"] == 0  # pvc images were already in the cache


def test_persistent_build_dir_keeps_no_stale_devlist_and_reuses_the_cache(wheels, tmp_path):
    assert _fat_members(wheels["again"]["so"], tmp_path) == _fat_members(wheels["env"]["so"], tmp_path)
    assert wheels["again"]["ocloc_runs"] == 0
    assert wheels["env"]["ocloc_runs"] > 0


def test_installed_module_imports_and_returns_its_images(wheels):
    site = wheels["env"]["site"]
    code = "import aotwheel._kernels as k; print(len(k.images()), ' '.join(k.kernel_names()))"
    env = dict(os.environ, PYTHONPATH=str(site))
    out = run([sys.executable, "-c", code], env=env, cwd=str(wheels["root"])).stdout.split()
    assert int(out[0]) == len(embedded_images(wheels["env"]["so"]))
    assert set(out[1:]) >= {"vector_add", "saxpy", "reduce_sum", "softmax_rows", "gemm_tiled"}


def test_downstream_find_package_against_the_installed_package(wheels, tmp_path):
    # scikit-build-core puts each cmake.root entry point's directory on CMAKE_PREFIX_PATH.
    prefix = wheels["env"]["site"] / "aotwheel"
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cl").write_text("__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }\n")
    (src / "ext.c").write_text('#include "ext_aot.h"\nunsigned long n(void) { return aotwheel_ext_image_count; }\n')
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(ds LANGUAGES C)\nadd_library(ext MODULE ext.c)\n"
        "find_package(aotwheel CONFIG REQUIRED)\naotwheel_resolve_devlist(DEVS)\n"
        "aotwheel_add_device_code(ext SOURCES k.cl DEVLIST DEVS)\n")
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="acm-g11")
    env["PYTHONPATH"] = ""  # only the installed aotwheel may serve this build
    run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"), f"-DCMAKE_PREFIX_PATH={prefix}",
         f"-DPython_EXECUTABLE={sys.executable}"], env=env)
    cache = (tmp_path / "b" / "CMakeCache.txt").read_text()
    assert f"aotwheel_DIR:PATH={prefix / 'cmake'}" in cache
    assert str(wheels["env"]["site"]) in (tmp_path / "b" / "build.ninja").read_text()
    run(["ninja", "-C", str(tmp_path / "b")], env=env)
    so = next((tmp_path / "b").glob("libext*.so"))
    assert _fat_members(so, tmp_path) == [[f"64.{ocloc_ip('acm-g11')}", "generic_ir"]]


def test_missing_ocloc_fails_the_build_with_one_line_and_no_wheel(tmp_path):
    require("cmake", "ninja", "cc")
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc", AOTWHEEL_OCLOC=str(tmp_path / "none" / "ocloc"))
    proc = _pip_wheel(tmp_path / "out", tmp_path / "build", env, isolated=False)
    assert proc.returncode != 0
    assert not list((tmp_path / "out").glob("*.whl"))
    text = " ".join((proc.stdout + proc.stderr).split())
    assert re.search(r"aotwheel_add_device_code: Cannot run ocloc at \S+ocloc: .*apt-get install intel-opencl-icd", text)


def test_abi3_extension_loads_in_other_python_versions(wheels):
    others = other_pythons()
    if not others:
        pytest.skip("no other CPython >= 3.10 installed to load the abi3 module with")
    site = wheels["env"]["site"]
    code = "import sys, aotwheel._kernels as k; sys.stdout.write(k.fatbinary().hex())"
    env = dict(os.environ, PYTHONPATH=str(site))
    first_fat = next(i.data for i in embedded_images(wheels["env"]["so"]) if i.triple == "spir64_gen")
    for py in others:
        out = run([py, "-c", code], env=env, cwd=str(wheels["root"])).stdout
        assert bytes.fromhex(out) == first_fat, py
