"""aotwheel.setuptools: a setup.py project built through the same CMake/ninja machinery.

The project is examples/downstream's CMakeLists.txt, kernel and extension with a setup.py in
place of its scikit-build-core pyproject. Results are read with binutils and by importing the
built module; expected ar members come from REFERENCE.md §2 (see tests/_aotdemo_util.py).
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


def _wheel(project: Path, out: Path, env: dict[str, str]) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "--no-build-isolation", "--no-cache-dir", "-w", str(out)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _images(site: Path) -> list[tuple[str, bytes]]:
    code = "import aotdemo, json; print(json.dumps([(t, b.hex()) for t, b in aotdemo.images()]))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)}, check=True)
    return [(t, bytes.fromhex(h)) for t, h in json.loads(proc.stdout)]


def test_setuptools_project_builds_the_same_extension(tmp_path: Path) -> None:
    require_tools()
    project = _project(tmp_path)
    wheel = _wheel(project, tmp_path / "wheels-1", _env(USE_AOT_DEVLIST="pvc,ats-m150"))
    assert wheel.name.endswith("-cp310-abi3-linux_x86_64.whl"), wheel.name

    site = unpack(wheel, tmp_path / "site")
    so = site / "aotdemo" / "_demo.abi3.so"
    assert so.is_file()
    assert (site / "aotdemo" / "_aot_manifest.json").is_file()  # installed by CMake, carried over
    names = section_names(so)
    assert FAT_SECTION in names and SPIRV_SECTION in names

    fat = section_bytes(so, FAT_SECTION, tmp_path)
    assert fat.startswith(b"!<arch>\n")
    assert sorted(ar_members(fat, tmp_path)) == sorted([PVC_MEMBER, ACM_G10_MEMBER, "generic_ir"])

    # The module itself hands back the same bytes the sections hold.
    images = _images(site)
    assert [t for t, _ in images] == ["spir64_gen", "spir64"]
    assert images[0][1] == fat
    assert images[1][1].startswith(SPIRV_MAGIC)
    assert section_bytes(so, SPIRV_SECTION, tmp_path).startswith(images[1][1])


def test_setuptools_devlist_change_rebuilds_in_the_same_tree(tmp_path: Path) -> None:
    # Second build in the same project (same build_temp): an unset USE_AOT_DEVLIST must not
    # keep the first build's cached list, and `none` must drop the fat binary.
    require_tools()
    project = _project(tmp_path)
    first = unpack(_wheel(project, tmp_path / "w1", _env(USE_AOT_DEVLIST="pvc")), tmp_path / "s1")
    fat = section_bytes(first / "aotdemo" / "_demo.abi3.so", FAT_SECTION, tmp_path)
    assert ar_members(fat, tmp_path) == [PVC_MEMBER, "generic_ir"]

    second = unpack(_wheel(project, tmp_path / "w2", _env(USE_AOT_DEVLIST="none")), tmp_path / "s2")
    names = section_names(second / "aotdemo" / "_demo.abi3.so")
    assert FAT_SECTION not in names and SPIRV_SECTION in names

    third = unpack(_wheel(project, tmp_path / "w3", _env()), tmp_path / "s3")  # aotwheel's default: pvc,ats-m150
    fat = section_bytes(third / "aotdemo" / "_demo.abi3.so", FAT_SECTION, tmp_path)
    assert sorted(ar_members(fat, tmp_path)) == sorted([PVC_MEMBER, ACM_G10_MEMBER, "generic_ir"])


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
