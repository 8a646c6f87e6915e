"""One argument parser: every ``aotwheel`` call is parsed by argparse (the hand-written parser of
the common ``aotwheel inspect PATH [switches]`` call, kept for start-up, is gone: issue 40)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import aotwheel.cli
from aotwheel.cli import build_parser

# argv -> (path, json, deep, all) as the calls mean them.
CALLS = {
    ("inspect", "lib.so"): ("lib.so", False, False, False),
    ("inspect", "lib.so", "--json"): ("lib.so", True, False, False),
    ("inspect", "--deep", "lib.so"): ("lib.so", False, True, False),
    ("inspect", "--json", "--deep", "--all", "lib.so"): ("lib.so", True, True, True),
    ("inspect", "lib.so", "--json", "--json"): ("lib.so", True, False, False),
    ("inspect", "dpctl"): ("dpctl", False, False, False),
    ("inspect", "wheel.whl!pkg/lib.so"): ("wheel.whl!pkg/lib.so", False, False, False),
    ("inspect", ""): ("", False, False, False),
    ("inspect", "--js", "lib.so"): ("lib.so", True, False, False),  # argparse takes an unambiguous prefix
    ("inspect", "--", "-lib.so"): ("-lib.so", False, False, False),
    ("inspect", "-"): ("-", False, False, False),
}


@pytest.mark.parametrize("argv", list(CALLS), ids=" ".join)
def test_inspect_calls_parse_to_their_path_and_switches(argv: tuple[str, ...]) -> None:
    args = build_parser(argv[0]).parse_args(list(argv))
    assert (args.command, args.path, args.json, args.deep, args.all) == ("inspect", *CALLS[argv])
    assert args.handler.__module__ == "aotwheel.cli.inspect"


BAD = [["inspect"], ["inspect", "a.so", "b.so"], ["inspect", "lib.so", "--bogus"], ["inspect", "--json=1", "lib.so"]]


@pytest.mark.parametrize("argv", BAD, ids=" ".join)
def test_a_bad_inspect_call_is_argparse_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        aotwheel.cli.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("usage: aotwheel") and "error:" in err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert aotwheel.cli.main([]) == 2 and "COMMAND" in capsys.readouterr().err


def test_the_cli_has_no_second_parser() -> None:
    assert not {"quick_args", "QuickArgs", "_quick_module"} & set(vars(aotwheel.cli))


def test_a_call_left_to_argparse_still_gets_its_answer() -> None:
    # A bad option and -h: argparse's answers.
    run = [sys.executable, "-m", "aotwheel", "inspect"]
    proc = subprocess.run([*run, "--bogus", "x.so"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unrecognized arguments: --bogus" in proc.stderr
    proc = subprocess.run([*run, "-h"], capture_output=True, text=True)
    assert proc.returncode == 0 and "--deep" in proc.stdout and "PATH" in proc.stdout


def test_version_prints_what_argparse_prints() -> None:
    fast = subprocess.run([sys.executable, "-m", "aotwheel", "--version"], capture_output=True, text=True)
    with pytest.raises(SystemExit) as stop:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            build_parser().parse_args(["--version"])
    assert stop.value.code == 0 and fast.returncode == 0 and fast.stdout == out.getvalue() and fast.stdout.startswith("aotwheel ")


@pytest.mark.parametrize("extra", [[], ["--deep"], ["--json"], ["--all"]], ids=lambda e: " ".join(e) or "plain")
def test_inspect_emits_no_python_warning(extra: list[str]) -> None:
    # With every warning an error, inspect of a CUDA library, an ocloc fat binary and a bare zebin
    # still succeeds and prints no warning.
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "tests" / "data"
    for path in (data / "cuda-h100" / "libkern_sm_90.so", data / "ocloc-26.27" / "bmg+ptl+dg2.ar", data / "ocloc-26.27" / "ptl-h.bin"):
        proc = subprocess.run([sys.executable, "-W", "error", "-m", "aotwheel", "inspect", str(path), *extra], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == "", (path, proc.stderr[-2000:])
