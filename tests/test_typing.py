"""The package is typed (issue 2): mypy finds no errors in python/aotwheel."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mypy() -> list[str]:
    """The type checker's command (a whole-package run: tens of seconds, so ``slow``)."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy not installed (pip install .[test])")
    return [sys.executable, "-m", "mypy"]


def test_mypy_clean(mypy: list[str]) -> None:
    proc = subprocess.run(
        [*mypy, "--ignore-missing-imports", "--no-error-summary", "--cache-dir", str(REPO / "build" / "mypy-cache"), str(REPO / "python" / "aotwheel")],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
