"""aotwheel.setuptools: a setup.py project built through the same CMake/ninja machinery.

The project is examples/downstream's CMakeLists.txt, kernel and extension with a setup.py in
place of its scikit-build-core pyproject. Results are read with binutils and by importing the
built module; expected ar members come from docs/formats.md §2 (see tests/_aotdemo_util.py). Images
are embedded compressed (COMPRESS ON, aotwheel's default) and decompressed by zstandard itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _aotdemo_util import (
    ACM_G10_MEMBER,
    FAT_SECTION,
    PVC_MEMBER,
    REPO,
    SPIRV_MAGIC,
    SPIRV_SECTION,
    ar_members,
    copy_example,
    require_tools,
    section_bytes,
    section_names,
    unpack,
    unzstd,
)

pytestmark = pytest.mark.usefixtures("builds")

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
    code = "import aotdemo, json; print(json.dumps([(t, s, b.hex()) for t, s, b in aotdemo.images()]))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)}, check=True)
    found = json.loads(proc.stdout)
    assert {s for _, s, _ in found} == {"saxpy.cl"}  # (triple, source, bytes): the loader's contract
    return [(t, bytes.fromhex(h)) for t, _, h in found]


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

    fat = unzstd(section_bytes(so, FAT_SECTION, tmp_path))  # one zstd frame: COMPRESS ON is the default
    assert fat.startswith(b"!<arch>\n")
    assert sorted(ar_members(fat, tmp_path)) == sorted([PVC_MEMBER, ACM_G10_MEMBER, "generic_ir"])

    # The module itself hands back the same bytes the sections hold.
    images = _images(lib)
    assert [t for t, _ in images] == ["spir64_gen", "spir64"]
    assert images[0][1] == section_bytes(so, FAT_SECTION, tmp_path) and unzstd(images[0][1]) == fat
    assert unzstd(images[1][1]).startswith(SPIRV_MAGIC)
    assert section_bytes(so, SPIRV_SECTION, tmp_path).startswith(images[1][1])


def test_setuptools_devlist_change_rebuilds_in_the_same_tree(tmp_path: Path) -> None:
    # Three builds in one build tree: an unset USE_AOT_DEVLIST must not keep the previous
    # build's cached list, and `none` must drop the fat binary. The second asks for plain images
    # (USE_AOT_COMPRESS=OFF); the third, with nothing set, is compressed again (the default).
    require_tools()
    project = _project(tmp_path)
    base = tmp_path / "b"
    lib = _build(project, base, _env(USE_AOT_DEVLIST="pvc"))
    fat = unzstd(section_bytes(lib / "aotdemo" / "_demo.abi3.so", FAT_SECTION, tmp_path))
    assert ar_members(fat, tmp_path) == [PVC_MEMBER, "generic_ir"]

    lib = _build(project, base, _env(USE_AOT_DEVLIST="none", USE_AOT_COMPRESS="OFF"))
    names = section_names(lib / "aotdemo" / "_demo.abi3.so")
    assert FAT_SECTION not in names and SPIRV_SECTION in names
    assert section_bytes(lib / "aotdemo" / "_demo.abi3.so", SPIRV_SECTION, tmp_path).startswith(SPIRV_MAGIC)

    lib = _build(project, base, _env())  # aotwheel's default: pvc,ats-m150
    fat = unzstd(section_bytes(lib / "aotdemo" / "_demo.abi3.so", FAT_SECTION, tmp_path))
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
    fat = unzstd(section_bytes(site / "aotdemo" / "_demo.abi3.so", FAT_SECTION, tmp_path))
    assert ar_members(fat, tmp_path) == [PVC_MEMBER, "generic_ir"]


def test_setuptools_bad_devlist_fails_before_cmake_with_one_line(tmp_path: Path) -> None:
    from aotwheel.errors import DevlistError
    from aotwheel.setuptools import CMakeExtension, _devlist_defines

    with pytest.raises(DevlistError) as info:
        _devlist_defines(CMakeExtension("x._y", devlist='pvc"; touch pwned'))
    assert "\n" not in str(info.value)
    assert _devlist_defines(CMakeExtension("x._y", devlist="pvc", jit_fallback=False)) == [
        "-DUSE_AOT_DEVLIST=pvc", "-DUSE_AOT_JIT_FALLBACK=OFF", "-UUSE_AOT_COMPRESS",
    ]
    assert _devlist_defines(CMakeExtension("x._y", devlist="pvc", compress=False))[-1] == "-DUSE_AOT_COMPRESS=OFF"


def test_setuptools_missing_module_names_the_install_rule(tmp_path: Path) -> None:
    from aotwheel.errors import ToolchainError
    from aotwheel.setuptools import CMakeExtension, build_ext

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "other.abi3.so").write_bytes(b"")
    with pytest.raises(ToolchainError, match=r"install\(TARGETS _ext LIBRARY DESTINATION pkg\)"):
        build_ext._find_module(tmp_path, CMakeExtension("pkg._ext"))


def _shim(folder: Path, name: str) -> Path:
    """The entry script pip writes for the cmake/ninja PyPI packages (as in .venv/bin/cmake), with an
    interpreter that lacks the package: what pip's isolated build environment runs when the
    activated venv's bin/ comes first on PATH (issue 30 item 2)."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / name
    shim.write_text(f"#!/usr/bin/python3 -I\nimport sys\nfrom {name} import {name}\nif __name__ == '__main__':\n    sys.exit({name}())\n")
    shim.chmod(0o755)
    return shim


def test_setuptools_skips_a_cmake_shim_that_cannot_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from aotwheel.errors import ToolchainError
    from aotwheel.setuptools import find_cmake, find_ninja

    if not all(shutil.which(name, path="/usr/bin") for name in ("cmake", "ninja")):
        pytest.skip("needs Debian's cmake and ninja in /usr/bin (bash ci/setup.sh)")
    shims = tmp_path / "venv-bin"
    for name in ("cmake", "ninja"):
        _shim(shims, name)
        proc = subprocess.run([str(shims / name), "--version"], capture_output=True, text=True)
        assert proc.returncode != 0 and f"No module named '{name}'" in proc.stderr  # the shim really fails here
    monkeypatch.setenv("PATH", os.pathsep.join([str(shims), "/usr/bin", "/bin"]))
    monkeypatch.setitem(sys.modules, "cmake", None)  # nor is the PyPI package importable, as in pip's overlay
    monkeypatch.setitem(sys.modules, "ninja", None)
    assert (find_cmake(), find_ninja()) == ("/usr/bin/cmake", "/usr/bin/ninja")  # the next ones on PATH, which run
    monkeypatch.setenv("PATH", str(shims))
    with pytest.raises(ToolchainError) as info:
        find_cmake()
    message = str(info.value)
    assert "\n" not in message and "No module named 'cmake'" in message and 'add "cmake" to build-system.requires' in message


SETUP_PY_CP310 = SETUP_PY.replace('py_limited_api=True', 'py_limited_api="cp310"')

# The CMakeLists a scikit-build-core user writes (the SABI component and version come from the
# build backend; aotwheel.setuptools passes them as scikit-build-core does): the setuptools example's.
STANDARD_CMAKELISTS = REPO / "examples" / "setuptools" / "CMakeLists.txt"


@pytest.mark.parametrize("setup_py, tag", [(SETUP_PY, f"cp3{sys.version_info.minor}"), (SETUP_PY_CP310, "cp310")])
def test_setuptools_py_limited_api_tags_the_wheel_abi3_without_setup_cfg(tmp_path: Path, setup_py: str, tag: str) -> None:
    """Issue 30 item 2: py_limited_api alone (no [bdist_wheel] py_limited_api in setup.cfg) gives an
    abi3 wheel, with the standard scikit-build-core CMakeLists."""
    require_tools()
    if not _can_bdist_wheel():
        pytest.skip("setuptools < 70.1 without the wheel package cannot build wheels")
    project = _project(tmp_path)
    (project / "setup.cfg").unlink()
    (project / "setup.py").write_text(setup_py)
    (project / "CMakeLists.txt").write_text(STANDARD_CMAKELISTS.read_text())
    out = tmp_path / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "--no-build-isolation", "--no-cache-dir", "-w", str(out)],
        capture_output=True, text=True, env=_env(USE_AOT_DEVLIST="pvc"), timeout=900,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    (wheel,) = out.glob("*.whl")
    assert wheel.name == f"aotdemo-0.1.0-{tag}-abi3-linux_x86_64.whl"
    site = unpack(wheel, tmp_path / "site")
    assert (site / "aotdemo" / "_demo.abi3.so").is_file()


def test_setuptools_cmake_failure_shows_cmakes_output_and_its_last_line(tmp_path: Path) -> None:
    require_tools()
    project = _project(tmp_path)
    (project / "CMakeLists.txt").write_text('cmake_minimum_required(VERSION 3.21)\nproject(x NONE)\nmessage(FATAL_ERROR "no-such-sdk: install it")\n')
    proc = subprocess.run([sys.executable, "setup.py", "build", "--build-base", str(tmp_path / "b")],
                          capture_output=True, text=True, env=_env(), cwd=project, timeout=600)
    assert proc.returncode != 0
    err = proc.stderr
    assert "no-such-sdk: install it" in err and "CMake Error" in err
    last = [line for line in err.splitlines() if "ToolchainError" in line or "error:" in line.lower() and "cmake -S" in line]
    assert last and "CMake's output is above" in last[-1] and "last line:" in last[-1], err[-3000:]
    assert err.index("no-such-sdk") < err.index(last[-1])
