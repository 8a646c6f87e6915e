"""The code passes the project's ruff configuration ([tool.ruff] in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PATHS = ("python", "tests", "benchmarks", "ci", "fuzz", "examples")


def _ruff() -> str:
    found = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("needs ruff (ci/setup.sh installs it)")
    return found


def test_ruff_check_passes() -> None:
    proc = subprocess.run([_ruff(), "check", "--no-cache", *PATHS], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-1000:]


def test_every_source_file_is_checked() -> None:
    # An exclude pattern that names a folder ("build") drops every folder of that name, such as
    # the backends' build-step packages: each .py git tracks under python/ is in ruff's file list.
    import subprocess as sp

    listed = sp.run([_ruff(), "check", "--show-files", *PATHS], cwd=REPO, capture_output=True, text=True, timeout=120).stdout
    checked = {Path(line.strip()).resolve() for line in listed.splitlines() if line.strip().endswith(".py")}
    tracked = sp.run(["git", "ls-files", "python/*.py", "python/**/*.py"], cwd=REPO, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    assert sorted(p for p in tracked if (REPO / p).resolve() not in checked) == []


def test_no_source_folder_is_named_like_build_output() -> None:
    # Tools skip folders called build, dist, ... as output (ruff's default excludes, .gitignore
    # templates, sdist filters): a source package of that name drops out of them unnoticed.
    output_names = {"build", "dist", "out", "target", "_build", "__pypackages__"}
    # (a folder with sources: a checkout that pulled a rename keeps the old folder's __pycache__)
    named = sorted(str(d.relative_to(REPO)) for d in (REPO / "python").rglob("*")
                   if d.is_dir() and d.name in output_names and any(d.glob("*.py")))
    assert named == []


def test_the_configuration_is_the_one_in_pyproject() -> None:
    # ruff reads [tool.ruff]; a stray ruff.toml or .ruff.toml would silently take over.
    assert not (REPO / "ruff.toml").exists() and not (REPO / ".ruff.toml").exists()
    proc = subprocess.run([_ruff(), "check", "--show-settings", "python/aotwheel/model.py"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "pyproject.toml" in proc.stdout and "line_length = 160" in proc.stdout


def test_a_test_module_sets_its_markers_once() -> None:
    # A second `pytestmark = ...` replaces the first silently (test_fastscan_cuda lost its nvcc
    # fixture that way, and with it the cuda marker the sid lane deselects by).
    import ast

    twice = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        names = [t.id for node in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name)]
        if names.count("pytestmark") > 1:
            twice.append(path.name)
    assert twice == []
