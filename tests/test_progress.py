"""Progress of long work (issue 41 item 6): `aotwheel compile` and `aotwheel build warm` say each
device as it finishes (`[3/11] pvc 2.1 s`); in a log one plain line each, on a terminal one live
line, erased before the report. A device's line comes while the others still build: an ocloc
wrapper holds acm-g10's job until the test has read pvc's line (the real ocloc does the work)."""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import compile_spirv
from conftest import CLANG, LLVM_SPIRV, REPO, require

GATED_OCLOC = """#!/bin/sh
# Holds a job for acm-g10 until the gate file exists, then runs the real ocloc.
case " $* " in *" -device acm-g10 "*) n=0; while [ ! -e "{gate}" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done ;; esac
exec "{ocloc}" "$@"
"""


@pytest.fixture
def spv(tmp_path: Path) -> Path:
    require(CLANG, LLVM_SPIRV, "ocloc")
    compile_spirv(REPO / "csrc" / "kernels" / "elementwise.cl", tmp_path / "k.spv")
    return tmp_path / "k.spv"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")]))
    env["AOTWHEEL_CACHE_DIR"] = "off"
    env.update(extra)
    return env


def test_compile_in_a_log_says_each_device_as_it_finishes(spv: Path, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    wrapper = tmp_path / "ocloc"
    wrapper.write_text(GATED_OCLOC.format(gate=gate, ocloc=shutil.which("ocloc")))
    wrapper.chmod(0o755)
    proc = subprocess.Popen([sys.executable, "-m", "aotwheel", "compile", str(spv), "--devlist", "pvc,acm-g10", "-j", "2",
                             "-o", str(tmp_path / "k.ar")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(tmp_path, AOTWHEEL_OCLOC=str(wrapper)))
    assert proc.stdout is not None
    first = proc.stdout.readline()
    still_running = proc.poll() is None  # acm-g10 is held: pvc's line came first, on its own
    gate.touch()
    rest, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert still_running and re.fullmatch(r"\[1/2\] pvc \(12\.60\.7\) \d+\.\d s: zebin, \d+ bytes, small GRF \(128 registers\), compiled\n", first), first
    lines = rest.splitlines()
    assert re.fullmatch(r"\[2/2\] acm-g10 \(12\.55\.8\) \d+\.\d s: zebin, \d+ bytes, small GRF \(128 registers\), compiled", lines[0]), rest
    assert lines[1].startswith("wrote ") and len(lines) == 2, rest  # the numbered lines are the report
    assert "\r" not in first + rest and "\x1b" not in first + rest


def test_compile_on_a_terminal_keeps_one_live_line_and_erases_it(spv: Path, tmp_path: Path) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "aotwheel", "compile", str(spv), "--devlist", "pvc,acm-g10", "-o", str(tmp_path / "k.ar")],
                            stdout=slave, stderr=subprocess.PIPE, env=_env(tmp_path))
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=300)
    os.close(master)
    text = out.decode()
    assert proc.returncode == 0, text
    live = re.findall(r"\r\x1b\[K\[(\d)/2\] (\S+) \d+\.\d s", text)
    assert sorted(n for n, _ in live) == ["1", "2"] and {d for _, d in live} == {"pvc", "acm-g10"}, repr(text)
    report = text.rsplit("\r\x1b[K", 1)[1]  # erased, then the report in devlist order
    assert report.splitlines()[:2] == [line for line in report.splitlines()[:2] if line.startswith(("pvc (", "acm-g10 ("))], repr(text)
    assert report.startswith("pvc (12.60.7): "), repr(text)


@pytest.mark.usefixtures("builds")
def test_build_warm_says_each_device_as_it_finishes_and_ninja_names_the_device(tmp_path: Path) -> None:
    require("cmake", "ninja", "ocloc", CLANG, LLVM_SPIRV)
    project = tmp_path / "ds"
    shutil.copytree(REPO / "examples" / "downstream", project, ignore=shutil.ignore_patterns("build", "dist", "*.whl"))
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "build", "warm", "--devlist", "pvc,acm-g10,tgllp", "--build-dir", str(tmp_path / "b"),
                           str(project)], capture_output=True, text=True, env=_env(tmp_path, AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"),
                                                                                    AOTWHEEL_OCLOC_GROUPS="3"), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    progress = re.findall(r"^\[(\d)/3\] (\S+) \d+\.\d s$", proc.stdout, re.M)
    assert [n for n, _ in progress] == ["1", "2", "3"] and {d for _, d in progress} == {"pvc", "acm-g10", "tgllp"}, proc.stdout
    # ninja's description of each ocloc edge (its status line) names the devices that edge builds
    ninja = (tmp_path / "b" / "build.ninja").read_text()
    described = re.findall(r"DESC = aotwheel: ocloc saxpy\.cl -device (\S+)", ninja)
    assert sorted(described) == ["acm-g10", "pvc", "tgllp"], described
