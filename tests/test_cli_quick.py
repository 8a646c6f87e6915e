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
