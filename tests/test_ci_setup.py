"""The main job installs only what building a wheel needs (issue 41 item 4): `bash ci/setup.sh`
(ci/main.sh's call) leaves the test tools and servers out of its apt list and puts no test
dependency in .venv; `--test` (ci/test.sh's call) asks for them. Run for real in a copy of the
checkout, apt's side stubbed (dpkg-query answers "installed" and logs what it was asked: a test
cannot install Debian packages), the venv and pip for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

STUB = """#!/bin/sh
# dpkg-query -W -f=... <package>: "installed", logged
for a in "$@"; do last=$a; done
echo "$last" >> "{log}"
printf 'install ok installed'
"""


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str], Path]:
    repo = tmp_path / "repo"
    (repo / "ci").mkdir(parents=True)
    for name in ("setup.sh", "install-opencl-cpu.sh"):
        shutil.copy2(REPO / "ci" / name, repo / "ci" / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "asked.log"
    (bin_dir / "dpkg-query").write_text(STUB.format(log=log))
    (bin_dir / "dpkg-query").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", AOTWHEEL_TOOLCHAIN="debian12",
               PYTHON=getattr(sys, "_base_executable", sys.executable))
    proc = subprocess.run(["bash", "ci/setup.sh", *args], cwd=repo, capture_output=True, text=True, env=env, timeout=600, check=False)
    return proc, log.read_text().split() if log.exists() else [], repo


def test_the_main_jobs_setup_asks_for_the_toolchain_only_and_leaves_venv_bare(tmp_path: Path) -> None:
    proc, asked, repo = _run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {"intel-opencl-icd", "clang-15", "llvm-spirv-15", "cmake", "ninja-build", "python3-venv", "python3-dev"} <= set(asked), asked
    test_only = {"nginx", "redis-server", "libigc-tools", "llvm-15", "clang-tools-15", "libclang-common-15-dev", "zstd", "git", "libze1", "hipcc"}
    assert not test_only & set(asked), asked
    listed = subprocess.run([str(repo / ".venv" / "bin" / "python"), "-m", "pip", "list", "--format", "freeze"],
                            capture_output=True, text=True, check=True).stdout
    names = {line.split("==")[0].lower() for line in listed.splitlines()}
    assert names <= {"pip", "setuptools"}, names  # no pytest, pyopencl, numpy, mypy, nvcc, CPU OpenCL runtime
    assert not (repo / ".venv" / "opencl-cpu.env").exists()


def test_an_unknown_argument_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc, asked, _ = _run(tmp_path, "--tests")
    assert proc.returncode == 2 and asked == []
    assert proc.stderr.strip().splitlines() == ["ci/setup.sh: error: unknown argument '--tests'; use --test (the test suite's set-up) "
                                                "or nothing (the main job's)"], proc.stderr


def test_main_and_test_scripts_call_setup_as_their_jobs_need() -> None:
    assert "bash ci/setup.sh\n" in (REPO / "ci" / "main.sh").read_text()
    assert "bash ci/setup.sh --test\n" in (REPO / "ci" / "test.sh").read_text()
