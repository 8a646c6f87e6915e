"""Missing and broken tools (issue 7.4), for real: CMake configure and ninja builds with a PATH
that lacks the tool (a folder of symlinks to every other program), an ocloc that is not a
program, and ocloc really failing (an fp64 kernel for acm-g10, which has no fp64; a SPIR-V
module with an opcode IGC does not know). Each must stop with one line that names the tool and
the fix, and ocloc's / clang's own log must be shown, not swallowed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import PYTHONPATH, REPO, build_env, compile_spirv, require
from conftest import CLANG, LLVM_SPIRV

pytestmark = pytest.mark.usefixtures("builds")

TOOLS = ("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV)
FP64_KERNEL = "__kernel void halve(__global double *x) { x[get_global_id(0)] = sqrt(x[get_global_id(0)]) * 0.5; }\n"
FINE_KERNEL = "__kernel void inc(__global int *x) { x[get_global_id(0)] += 1; }\n"
PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(bt LANGUAGES C)
add_library(btext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_add_device_code(btext SOURCES k.cl DEVICES {devices} NAME bt)
"""


def _project(root: Path, kernel: str, devices: str) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(PROJECT.format(devices=devices))
    (src / "k.cl").write_text(kernel)
    (src / "ext.c").write_text("int bt(void) { return 0; }\n")
    return src


def _path_without(root: Path, *patterns: str) -> str:
    """A folder of symlinks to every program on PATH except those matching ``patterns``."""
    folder = root / "path"
    folder.mkdir()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            link = folder / name
            if link.exists() or link.is_symlink() or any(re.fullmatch(p, name) for p in patterns):
                continue
            full = os.path.join(d, name)
            if os.path.isfile(full) and os.access(full, os.X_OK):
                link.symlink_to(full)
    return str(folder)


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = build_env(root / "cache", **extra)
    for var in ("AOTWHEEL_OCLOC", "AOTWHEEL_CLANG", "AOTWHEEL_LLVM_SPIRV"):
        if var not in extra:
            env.pop(var, None)
    return env


def _configure(src: Path, build: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmake = shutil.which("cmake")
    assert cmake
    return subprocess.run([cmake, "-G", "Ninja", "-S", str(src), "-B", str(build), f"-Daotwheel_DIR={REPO / 'cmake'}",
                           f"-DPython_EXECUTABLE={sys.executable}", f"-DCMAKE_MAKE_PROGRAM={shutil.which('ninja')}"],
                          env=env, capture_output=True, text=True, timeout=300)


def _cmake_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The one CMake error paragraph: a single message, whatever CMake's indentation."""
    assert proc.returncode != 0, proc.stdout[-2000:]
    errors = re.findall(r"CMake Error at [^\n]*:\n(.*?)\n\n", proc.stderr, re.S)
    assert len(errors) == 1, proc.stderr
    message = " ".join(errors[0].split())
    assert message.startswith("aotwheel_add_device_code: "), message
    assert "Traceback" not in proc.stderr
    return message


@pytest.mark.parametrize(
    "hidden,tool,fix",
    [
        ((r"ocloc.*",), "ocloc", "apt-get install intel-opencl-icd"),
        ((r"clang.*",), "clang", "apt-get install clang-15 llvm-spirv-15"),
        ((r"llvm-spirv.*",), LLVM_SPIRV, f"apt-get install {LLVM_SPIRV}"),
    ],
)
def test_tool_missing_from_path_stops_configure_with_one_line(tmp_path: Path, hidden: tuple[str, ...], tool: str, fix: str) -> None:
    require(*TOOLS)
    src = _project(tmp_path, FINE_KERNEL, "pvc")
    env = _env(tmp_path, PATH=_path_without(tmp_path, *hidden))
    message = _cmake_error(_configure(src, tmp_path / "b", env))
    assert f"Missing {tool} " in message and fix in message


def test_ocloc_that_is_not_a_program_stops_configure_with_one_line(tmp_path: Path) -> None:
    require(*TOOLS)
    fake = tmp_path / "bin" / "ocloc"
    fake.parent.mkdir()
    fake.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(57))  # an ELF header and nothing else
    fake.chmod(0o755)
    src = _project(tmp_path, FINE_KERNEL, "pvc")
    env = _env(tmp_path, PATH=f"{fake.parent}{os.pathsep}{_path_without(tmp_path, r'ocloc.*')}")
    message = _cmake_error(_configure(src, tmp_path / "b", env))
    assert f"Cannot run ocloc at {fake}" in message and "Exec format error" in message
    assert "apt-get install intel-opencl-icd" in message


def _ninja(build: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ninja", "-C", str(build)], env=env, capture_output=True, text=True, timeout=600)


def _aotwheel_errors(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("aotwheel: error: ")]


def test_ocloc_failure_fails_the_build_showing_its_log(tmp_path: Path) -> None:
    """acm-g10 (DG2) has no fp64: with the field defaults off (no -cl-poison-unsupported-fp64-kernels)
    IGC rejects the kernel and ocloc exits non-zero."""
    require(*TOOLS)
    src = _project(tmp_path, FP64_KERNEL, "pvc acm-g10 FIELD_DEFAULTS OFF")
    env = _env(tmp_path)
    assert _configure(src, tmp_path / "b", env).returncode == 0
    proc = _ninja(tmp_path / "b", env)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Double type is not supported on this platform" in output  # ocloc's own log
    errors = _aotwheel_errors(output)
    assert len(errors) == 1, output[-3000:]
    assert "ocloc" in errors[0] and "-device acm-g10" in errors[0] and "k.spv" in errors[0]
    assert "USE_AOT_DEVLIST" in errors[0]  # the fix: change the kernel or drop the device,
    assert "add -cl-poison-unsupported-fp64-kernels to the ocloc options" in errors[0]  # or poison fp64 kernels
    # Nothing half-made is left for the next build to pick up, and the failure is not cached.
    assert not (tmp_path / "b" / "aotwheel" / "bt" / "k.acm-g10.bin").exists()
    log = tmp_path / "cache" / "v2" / "events.log"
    stores = [line for line in (log.read_text().splitlines() if log.exists() else []) if line.startswith("store ")]
    assert not [line for line in stores if line.split()[2] == "acm-g10"]


def test_ocloc_rejecting_corrupt_spirv_shows_its_log_and_one_line(tmp_path: Path) -> None:
    """The ocloc build step on a SPIR-V module whose first instruction has opcode 0xFFFF."""
    require("ocloc", CLANG, LLVM_SPIRV)
    (tmp_path / "k.cl").write_text(FINE_KERNEL)
    spv = tmp_path / "k.spv"
    data = bytearray(compile_spirv(tmp_path / "k.cl", spv))
    data[20:22] = b"\xff\xff"  # word 5 (first instruction): opcode 65535, same word count
    spv.write_bytes(data)
    toolchain = tmp_path / "toolchain.json"
    toolchain.write_text('{"ocloc": "%s", "ocloc_version": "test", "ocloc_names": {}}' % shutil.which("ocloc"))
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "aotwheel.buildsteps", "intel", "ocloc", "--toolchain", str(toolchain), "--spirv", str(spv),
                           "--device", "pvc", "--output", str(tmp_path / "k.pvc.bin")], env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    # What ocloc itself does with this file (22.43: IGC's "does not support the following opcode:
    # 65535", exit 2xx; 26.27: a crash with SIGSEGV and no log): the build step passes it on.
    direct = subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc", "-output", "x",
                             "-out_dir", str(tmp_path / "direct"), "-output_no_suffix"], capture_output=True, text=True)
    assert direct.returncode != 0
    said = [line for line in (direct.stdout + direct.stderr).splitlines() if "opcode" in line]
    assert all(line.strip() in proc.stderr for line in said)
    errors = _aotwheel_errors(proc.stderr)
    assert len(errors) == 1 and "ocloc" in errors[0] and "-device pvc" in errors[0]
    if direct.returncode < 0:
        assert "crashed with SIG" in errors[0]
    else:
        assert said and f"exit {direct.returncode}" in errors[0]
    assert "Traceback" not in proc.stderr and not (tmp_path / "k.pvc.bin").exists()


def test_clang_failure_fails_the_build_showing_its_diagnostics(tmp_path: Path) -> None:
    require(*TOOLS)
    src = _project(tmp_path, "__kernel void broken(__global int *x) { x[0] = undeclared_thing; }\n", "pvc")
    env = _env(tmp_path)
    assert _configure(src, tmp_path / "b", env).returncode == 0
    proc = _ninja(tmp_path / "b", env)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "use of undeclared identifier 'undeclared_thing'" in output  # clang's own diagnostic
    errors = _aotwheel_errors(output)
    assert len(errors) == 1 and errors[0].startswith("aotwheel: error: clang failed on ") and "k.cl" in errors[0]
