"""A misspelled variable never builds the wrong devices (issue 41 item 2): at configure, a
``USE_AOT_*``, ``AOTWHEEL_*`` or ``TORCH_XPU_*`` name aotwheel does not declare but that is close to
one it does (case, or up to two edits) stops configure with one "did you mean" line saying how
close; ``AOTWHEEL_ALLOW_UNDECLARED`` lets a name be; the names this project's own CI and tests use
are declared."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.config import all_variables
from aotwheel.errors import SettingError
from aotwheel.varcheck import check, edits

from conftest import REPO, require

DECLARED = [v.name for v in all_variables()]


@pytest.mark.parametrize(("name", "near", "how"), [
    ("USE_AOT_DEV_LIST", "USE_AOT_DEVLIST", "1 edit away"),       # an underscore added
    ("USE_AOT_DEVLSIT", "USE_AOT_DEVLIST", "1 edit away"),        # two letters swapped
    ("TORCH_XPU_ARCH_LST", "TORCH_XPU_ARCH_LIST", "1 edit away"),
    ("AOTWHEEL_OCLOC_JOB", "AOTWHEEL_OCLOC_JOBS", "1 edit away"),
    ("USE_AOT_JITFALLBAK", "USE_AOT_JIT_FALLBACK", "2 edits away"),
    ("use_aot_devlist", "USE_AOT_DEVLIST", "differs only in case"),
])
def test_a_close_undeclared_name_is_one_did_you_mean_line(name: str, near: str, how: str) -> None:
    with pytest.raises(SettingError) as caught:
        check({name: "environment"}, DECLARED, None)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"{name} (environment) is not a variable aotwheel reads; did you mean {near} ({how})?"), line
    assert f"AOTWHEEL_ALLOW_UNDECLARED={name}" in line


def test_far_names_declared_names_and_allowed_names_pass() -> None:
    check({"AOTWHEEL_SOMETHING_ELSE": "environment", "TORCH_XPU_LOG": "environment", "USE_AOT_DEVLIST": "environment",
           "PATH": "environment", "USE_AOT": "environment"}, DECLARED, None)
    check({"USE_AOT_DEV_LIST": "environment"}, DECLARED, "OTHER, USE_AOT_DEV_LIST")
    check({"USE_AOT_DEV_LIST": "environment", "AOTWHEEL_SHARDS": "CMake variable"}, DECLARED, "*")
    with pytest.raises(SettingError, match="AOTWHEEL_SHARDS \\(CMake variable\\)"):
        check({"AOTWHEEL_SHARDS": "CMake variable"}, DECLARED, "USE_AOT_DEV_LIST")


def test_edit_distance_counts_as_written() -> None:
    assert [edits("ABC", w) for w in ("ABC", "AC", "ABCD", "ACB", "XBC", "CBA")] == [0, 1, 1, 1, 1, 2]
    assert edits("A" * 10, "B" * 10) == 3  # stops past the limit


def test_the_projects_own_ci_and_test_variables_pass_the_check() -> None:
    # Every such name ci/, .ci/, tests/ and benchmarks/ spell (CMake properties and C macros are
    # never set in an environment; the ones that are, are declared).
    names: dict[str, str] = {}
    for path in [*REPO.joinpath("ci").rglob("*"), *REPO.joinpath(".ci").rglob("*"), *REPO.joinpath("benchmarks").rglob("*.py"),
                 *REPO.joinpath("tests").glob("*.py")]:
        if path.is_file() and path.name != Path(__file__).name:
            for name in re.findall(r"\b((?:USE_AOT|AOTWHEEL|TORCH_XPU)_[A-Z0-9_]*[A-Z0-9])\b", path.read_text(errors="replace")):
                names.setdefault(name, str(path.relative_to(REPO)))
    assert {"AOTWHEEL_TOOLCHAIN", "AOTWHEEL_TEST_WHEEL", "AOTWHEEL_CI_LANES"} <= set(names)
    check(names, DECLARED, None)


def _configure(tmp_path: Path, *defines: str, **env: str) -> subprocess.CompletedProcess[str]:
    require("cmake", "ninja")
    tmp_path.mkdir(parents=True)
    (tmp_path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.21)\nproject(typo LANGUAGES NONE)\n"
                                             "find_package(aotwheel CONFIG REQUIRED)\naotwheel_resolve_devlist(DEVS)\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_ALLOW", "TORCH_XPU_"))}
    clean["PYTHONPATH"] = str(REPO / "python")
    return subprocess.run(["cmake", "-G", "Ninja", "-S", str(tmp_path), "-B", str(tmp_path / "b"), f"-Daotwheel_DIR={REPO / 'cmake'}",
                           *defines], capture_output=True, text=True, env={**clean, **env}, timeout=120, check=False)


@pytest.mark.usefixtures("builds")
def test_configure_stops_on_a_misspelled_environment_variable_and_a_cache_entry(tmp_path: Path) -> None:
    proc = _configure(tmp_path / "env", USE_AOT_DEV_LIST="acm-g11")
    assert proc.returncode != 0
    lines = [line.strip() for line in proc.stderr.splitlines() if "did you mean" in line]
    assert lines == ["aotwheel_resolve_devlist: USE_AOT_DEV_LIST (environment) is not a variable aotwheel reads; did you mean "
                     "USE_AOT_DEVLIST (1 edit away)? Rename it, or set AOTWHEEL_ALLOW_UNDECLARED=USE_AOT_DEV_LIST to keep it"], proc.stderr
    proc = _configure(tmp_path / "cache", "-DTORCH_XPU_ARCH_LST=pvc")
    assert proc.returncode != 0 and "TORCH_XPU_ARCH_LST (CMake variable) is not a variable aotwheel reads; did you mean " \
        "TORCH_XPU_ARCH_LIST (1 edit away)?" in proc.stderr, proc.stderr
    # The escape hatch: configure goes on with the default list.
    proc = _configure(tmp_path / "allowed", USE_AOT_DEV_LIST="acm-g11", AOTWHEEL_ALLOW_UNDECLARED="USE_AOT_DEV_LIST")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.usefixtures("builds")
def test_pip_wheel_with_a_misspelled_devlist_fails_with_one_line_naming_it(tmp_path: Path) -> None:
    # The real `USE_AOT_DEV_LIST=acm-g11 pip wheel .` of this checkout, as tests/test_first_hour.py runs the `pcv` typo.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_ALLOW"))}
    env["USE_AOT_DEV_LIST"] = "acm-g11"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(REPO)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and not list(tmp_path.glob("*.whl"))
    lines = [line.strip() for line in out.splitlines()]
    box = next(i for i, line in enumerate(lines) if line.endswith("[1 lines of output]"))
    assert lines[box + 1].startswith("aotwheel: error: USE_AOT_DEV_LIST (environment) is not a variable aotwheel reads; "
                                     "did you mean USE_AOT_DEVLIST (1 edit away)?"), out[-3000:]
