"""The markers follow from fixtures, and the guard tells a build from a tool run."""

from __future__ import annotations

import sys

import pytest

from conftest import SLOW_FIXTURES, _is_build


@pytest.mark.parametrize("argv", [
    ["cmake", "-G", "Ninja", "-S", "src", "-B", "build"],
    ["/usr/bin/cmake", "--build", "build"],
    ["cmake", "-Ssrc", "-Bbuild"],
    ["ninja", "-C", "build"],
    [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", "dist", "."],
    [sys.executable, "-m", "pip", "install", "--target", "site", "."],
    [sys.executable, "-m", "build", "--wheel"],
    ["pip3", "wheel", "."],
])
def test_builds_are_builds(argv: list[str]) -> None:
    assert _is_build(argv)


@pytest.mark.parametrize("argv", [
    ["cmake", "-P", "script.cmake"],
    ["cmake", "--version"],
    ["ocloc", "compile", "-file", "k.spv", "-device", "pvc"],
    [sys.executable, "-m", "aotwheel", "inspect", "lib.so"],
    [sys.executable, "-m", "pip", "--version"],
    [sys.executable, "-c", "import aotwheel"],
    [],
])
def test_tool_runs_are_not_builds(argv: list[str]) -> None:
    assert not _is_build(argv)


def test_a_test_that_builds_is_slow(request: pytest.FixtureRequest, builds: None) -> None:
    # This test requests `builds`, so collection marked it slow: the marker comes from the fixture.
    assert "builds" in SLOW_FIXTURES
    assert request.node.get_closest_marker("slow") is not None


def test_a_test_that_does_not_build_is_not_slow(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("slow") is None and request.node.get_closest_marker("cuda") is None
