"""The common ``aotwheel inspect PATH [switches]`` call is parsed without argparse
(:func:`aotwheel.cli.quick_args`, for the start-up): for every call it takes, it must give what
argparse gives, and it must leave every other call (help, errors, abbreviations) to argparse."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aotwheel.cli import build_parser, quick_args

TAKEN = [
    ["inspect", "lib.so"],
    ["inspect", "lib.so", "--json"],
    ["inspect", "--deep", "lib.so"],
    ["inspect", "--json", "--deep", "--all", "lib.so"],
    ["inspect", "lib.so", "--json", "--json"],
    ["inspect", "dpctl"],
    ["inspect", "wheel.whl!pkg/lib.so"],
    ["inspect", ""],
]
LEFT = [
    [],
    ["inspect"],
    ["inspect", "-h"],
    ["inspect", "--help"],
    ["inspect", "--js", "lib.so"],  # argparse takes an unambiguous prefix
    ["inspect", "--", "-lib.so"],
    ["inspect", "-"],
    ["inspect", "a.so", "b.so"],
    ["inspect", "lib.so", "--bogus"],
    ["inspect", "--json=1", "lib.so"],
    ["resolve", "pvc"],
    ["check", "--device", "pvc", "lib.so"],
    ["--version"],
]


@pytest.mark.parametrize("argv", TAKEN, ids=" ".join)
def test_quick_parse_gives_what_argparse_gives(argv: list[str]) -> None:
    quick = quick_args(argv)
    assert quick is not None
    assert vars(quick) == vars(build_parser(argv[0]).parse_args(argv))


@pytest.mark.parametrize("argv", LEFT, ids=lambda a: " ".join(a) or "(none)")
def test_every_other_call_is_left_to_argparse(argv: list[str]) -> None:
    assert quick_args(argv) is None


def test_a_call_left_to_argparse_still_gets_its_answer() -> None:
    # The abbreviation and the bad option reach argparse, which answers as it always did.
    run = [sys.executable, "-m", "aotwheel", "inspect"]
    proc = subprocess.run([*run, "--bogus", "x.so"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unrecognized arguments: --bogus" in proc.stderr
    proc = subprocess.run([*run, "-h"], capture_output=True, text=True)
    assert proc.returncode == 0 and "--deep" in proc.stdout and "PATH" in proc.stdout


def test_version_without_argparse_prints_what_argparse_prints() -> None:
    fast = subprocess.run([sys.executable, "-m", "aotwheel", "--version"], capture_output=True, text=True)
    with pytest.raises(SystemExit) as stop:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            build_parser().parse_args(["--version"])
    assert stop.value.code == 0 and fast.returncode == 0 and fast.stdout == out.getvalue() and fast.stdout.startswith("aotwheel ")


@pytest.mark.parametrize("extra", [[], ["--deep"], ["--json"], ["--all"]], ids=lambda e: " ".join(e) or "plain")
def test_the_quick_commands_emit_no_python_warning(extra: list[str]) -> None:
    # Why the quick path installs no formatter for warnings: with every warning an error, inspect
    # of a CUDA library, an ocloc fat binary and a bare zebin still succeeds and prints no warning.
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "tests" / "data"
    for path in (data / "cuda-h100" / "libkern_sm_90.so", data / "ocloc-26.27" / "bmg+ptl+dg2.ar", data / "ocloc-26.27" / "ptl-h.bin"):
        proc = subprocess.run([sys.executable, "-W", "error", "-m", "aotwheel", "inspect", str(path), *extra], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == "", (path, proc.stderr[-2000:])
