"""Argument errors of the aotwheel_add_*_device_code functions: one FATAL_ERROR naming the
function and the fix, from a real CMake configure (the checks are shared by both functions)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake and ninja (bash ci/setup.sh)")

REPO = Path(__file__).resolve().parents[1]

CASES = [
    ("aotwheel_add_device_code(nosuch SOURCES k.cl DEVICES pvc)", "aotwheel_add_device_code: 'nosuch' is not a target"),
    ("aotwheel_add_device_code(ext DEVICES pvc)", "aotwheel_add_device_code: no SOURCES given. Pass the OpenCL C kernel files"),
    ("aotwheel_add_device_code(ext SOURCES k.cl DEVICES pvc NAME 1bad)", "aotwheel_add_device_code: NAME '1bad' must be a C identifier"),
    ("aotwheel_add_cuda_device_code(nosuch SOURCES k.cl TARGETS sm_90)", "aotwheel_add_cuda_device_code: 'nosuch' is not a target"),
    ("aotwheel_add_cuda_device_code(ext TARGETS sm_90)", "aotwheel_add_cuda_device_code: no SOURCES given. Pass the kernel files"),
    ("aotwheel_add_cuda_device_code(ext SOURCES k.cl TARGETS sm_90 NAME a-b)", "aotwheel_add_cuda_device_code: NAME 'a-b' must be a C identifier"),
]


@pytest.mark.parametrize("call,expected", CASES, ids=[c.split("(")[0] + str(i) for i, (c, _) in enumerate(CASES)])
def test_argument_errors(tmp_path: Path, call: str, expected: str, builds: None) -> None:
    (tmp_path / "ext.c").write_text("int ext_dummy;\n")
    (tmp_path / "k.cl").write_text("kernel void k(global float *a) { a[0] = 1.0f; }\n")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(args LANGUAGES C)\n"
        "find_package(aotwheel CONFIG REQUIRED)\nadd_library(ext MODULE ext.c)\n" + call + "\n"
    )
    proc = subprocess.run(
        ["cmake", "-G", "Ninja", "-S", str(tmp_path), "-B", str(tmp_path / "b"), f"-Daotwheel_DIR={REPO / 'cmake'}"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    assert expected in " ".join(proc.stderr.split())
