"""Two `pip wheel` of one checkout at the same time (issue 37 item 4): scikit-build-core keeps
one build tree per wheel tag (build/{wheel_tag}), where two builds collided ("missing
CMakeCache.txt"). With aotwheel.pep517 as the build backend the second waits for the first,
saying so, and both succeed. Real pip + scikit-build-core + CMake + ninja; the project's build
takes a few seconds (a sleeping custom target), so the two overlap."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from _build_util import PYTHONPATH, require

pytestmark = pytest.mark.usefixtures("builds")

PYPROJECT = """
[build-system]
requires = ["scikit-build-core>=0.10", "aotwheel"]
build-backend = "aotwheel.pep517"

[project]
name = "turns"
version = "0.1.0"

[tool.scikit-build]
build-dir = "build/{wheel_tag}"
wheel.packages = []
"""
CMAKELISTS = """
cmake_minimum_required(VERSION 3.21)
project(turns LANGUAGES NONE)
add_custom_command(OUTPUT slow.txt COMMAND ${CMAKE_COMMAND} -E sleep 4
                   COMMAND ${CMAKE_COMMAND} -E echo built > slow.txt)
add_custom_target(slow ALL DEPENDS slow.txt)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/slow.txt DESTINATION turns)
"""


def test_two_pip_builds_of_one_checkout_take_turns(tmp_path: Path) -> None:
    require("cmake", "ninja")
    pytest.importorskip("scikit_build_core")
    project = tmp_path / "turns"
    project.mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "CMakeLists.txt").write_text(CMAKELISTS)
    env = {**os.environ, "PYTHONPATH": PYTHONPATH}
    procs = [subprocess.Popen([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                               "--no-cache-dir", "-w", str(tmp_path / f"wheels{i}"), str(project)],
                              cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for i in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(o[-3000:] for o in outs)
    waited = [o for o in outs if "another build of this checkout is running" in o]
    assert len(waited) == 1, "\n".join(o[-3000:] for o in outs)
    for i in range(2):
        (wheel,) = (tmp_path / f"wheels{i}").glob("turns-0.1.0-*.whl")
        with zipfile.ZipFile(wheel) as z:
            assert z.read("turns/slow.txt").strip() == b"built"
