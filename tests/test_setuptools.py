"""aotwheel.setuptools: a setup.py project built through the same CMake/ninja machinery.

The project is examples/downstream's CMakeLists.txt, kernel and extension with a setup.py in
place of its scikit-build-core pyproject. Results are read with binutils and by importing the
built module; expected ar members come from docs/formats.md §2 (see tests/_aotdemo_util.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _aotdemo_util import (
    ACM_G10_MEMBER, FAT_SECTION, PVC_MEMBER, REPO, SPIRV_MAGIC, SPIRV_SECTION,
    ar_members, copy_example, require_tools, section_bytes, section_names, unpack,
)

SETUP_PY = """\
from setuptools import setup
from aotwheel.setuptools import CMakeExtension, build_ext

setup(
    name="aotdemo",
    version="0.1.0",
    packages=["aotdemo"],
    package_dir={"": "src"},
    ext_modules=[CMakeExtension("aotdemo._demo", sourcedir=".", py_limited_api=True)],
    cmdclass={"build_ext": build_ext},
)
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61", "wheel"]
build-backend = "setuptools.build_meta"
"""

SETUP_CFG = """\
[bdist_wheel]
py_limited_api = cp310
"""


def _project(tmp_path: Path) -> Path:
    project = copy_example(tmp_path / "proj")
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "setup.py").write_text(SETUP_PY)
    (project / "setup.cfg").write_text(SETUP_CFG)
    return project


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    # This checkout's aotwheel, so the test covers the source-tree layout of cmake_dir().
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python"), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _build(project: Path, build_base: Path, env: dict[str, str]) -> Path:
    """`setup.py build` (build_ext through aotwheel.setuptools); returns the build_lib directory."""
    proc = subprocess.run(
        [sys.executable, "setup.py", "build", "--build-base", str(build_base)],
        capture_output=True, text=True, env=env, cwd=project, timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    libs = [p for p in build_base.glob("lib*") if p.is_dir()]
    assert len(libs) == 1, libs
    return libs[0]


def _images(site: Path) -> list[tuple[str, bytes]]:
    code = "import aotdemo, json; print(json.dumps([(t, b.hex()) for t, b in aotdemo.images()]))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)}, check=True)
    return [(t, bytes.fromhex(h)) for t, h in json.loads(proc.stdout)]


def _can_bdist_wheel() -> bool:
    import importlib.util

    import setuptools

    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


def test_setuptools_project_builds_the_same_extension(tmp_path: Path) -> None:
    require_tools()
    project = _project(tmp_path)
    lib = _build(project, tmp_path / "b", _env(USE_AOT_DEVLIST="pvc,ats-m150"))
    so = lib / "aotdemo" / "_demo.abi3.so"
    assert so.is_file()
    assert (lib / "aotdemo" / "_aot_manifest.json").is_file()  # installed by CMake, carried over
    names = section_names(so)
    assert FAT_SECTION in names and SPIRV_SECTION in names

    fat = section_bytes(so, FAT_SECTION, tmp_path)
    assert fat.startswith(b"!<arch>\n")
    assert sorted(ar_members(fat, tmp_path)) == sorted([PVC_MEMBER, ACM_G10_MEMBER, "generic_ir"])

    # The module itself hands back the same bytes the sections hold.
    images = _images(lib)
    assert [t for t, _ in images] == ["spir64_gen", "spir64"]
    assert images[0][1] == fat
    assert images[1][1].startswith(SPIRV_MAGIC)
    assert section_bytes(so, SPIRV_SECTION, tmp_path).startswith(images[1][1])


def test_setuptools_devlist_change_rebuilds_in_the_same_tree(tmp_path: Path) -> None:
    # Three builds in one build tree: an unset USE_AOT_DEVLIST must not keep the previous
    # build's cached list, and `none` must drop the fat binary.
    require_tools()
    project = _project(tmp_path)
    base = tmp_path / "b"
    lib = _build(project, base, _env(USE_AOT_DEVLIST="pvc"))
    fat = section_bytes(lib / "aotdemo" / "_demo.abi3.so", FAT_SECTION, tmp_path)
    assert ar_members(fat, tmp_path) == [PVC_MEMBER, "generic_ir"]

    lib = _build(project, base, _env(USE_AOT_DEVLIST="none"))
    names = section_names(lib / "aotdemo" / "_demo.abi3.so")
    assert FAT_SECTION not in names and SPIRV_SECTION in names

    lib = _build(project, base, _env())  # aotwheel's default: pvc,ats-m150
    fat = section_bytes(lib / "aotdemo" / "_demo.abi3.so", FAT_SECTION, tmp_path)
    assert sorted(ar_members(fat, tmp_path)) == sorted([PVC_MEMBER, ACM_G10_MEMBER, "generic_ir"])


def test_setuptools_pip_wheel_is_abi3(tmp_path: Path) -> None:
    require_tools()
    if not _can_bdist_wheel():
        pytest.skip("setuptools < 70.1 without the 'wheel' package cannot bdist_wheel; pip install wheel")
    project = _project(tmp_path)
    out = tmp_path / "wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "--no-build-isolation", "--no-cache-dir", "-w", str(out)],
        capture_output=True, text=True, env=_env(USE_AOT_DEVLIST="pvc"), timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    (wheel,) = out.glob("*.whl")
    assert wheel.name == "aotdemo-0.1.0-cp310-abi3-linux_x86_64.whl"
    site = unpack(wheel, tmp_path / "site")
    assert (site / "aotdemo" / "_aot_manifest.json").is_file()
    fat = section_bytes(site / "aotdemo" / "_demo.abi3.so", FAT_SECTION, tmp_path)
    assert ar_members(fat, tmp_path) == [PVC_MEMBER, "generic_ir"]


def test_setuptools_bad_devlist_fails_before_cmake_with_one_line(tmp_path: Path) -> None:
    from aotwheel.errors import DevlistError
    from aotwheel.setuptools import CMakeExtension, _devlist_defines

    with pytest.raises(DevlistError) as info:
        _devlist_defines(CMakeExtension("x._y", devlist='pvc"; touch pwned'))
    assert "\n" not in str(info.value)
    assert _devlist_defines(CMakeExtension("x._y", devlist="pvc", jit_fallback=False)) == [
        "-DUSE_AOT_DEVLIST=pvc", "-DUSE_AOT_JIT_FALLBACK=OFF",
    ]


def test_setuptools_missing_module_names_the_install_rule(tmp_path: Path) -> None:
    from aotwheel.errors import ToolchainError
    from aotwheel.setuptools import CMakeExtension, build_ext

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "other.abi3.so").write_bytes(b"")
    with pytest.raises(ToolchainError, match=r"install\(TARGETS _ext LIBRARY DESTINATION pkg\)"):
        build_ext._find_module(tmp_path, CMakeExtension("pkg._ext"))
