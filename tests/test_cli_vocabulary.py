"""One CLI vocabulary (issue 41 item 4): `--devlist` names a device list in check, devices, compile,
build toolchain and build warm; the older spellings still parse and stay out of --help; JIT
fallback is `--no-jit-fallback` in compile as in resolve; `aotwheel build --help` says what each of
its commands does, in plain text."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from aotwheel.cli import build_parser

from conftest import REPO

COMMANDS = [("check", ["check", "aotwheel._kernels"], "device", ["--device"]),
            ("devices", ["devices"], "device", ["--device"]),
            ("compile", ["compile", "k.spv"], "devlist", ["-d"]),
            ("build toolchain", ["build", "toolchain"], "devlist", ["--devices"]),
            ("build warm", ["build", "warm"], "devlist", [])]


@pytest.mark.parametrize(("name", "argv", "dest", "old"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_command_takes_devlist_and_its_old_spelling(name: str, argv: list[str], dest: str, old: list[str]) -> None:
    parser = build_parser(argv[0])
    assert getattr(parser.parse_args([*argv, "--devlist", "pvc,acm-g10"]), dest) == "pvc,acm-g10"
    for spelling in old:
        assert getattr(parser.parse_args([*argv, spelling, "pvc"]), dest) == "pvc"


def _help(*argv: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")])), COLUMNS="100")
    proc = subprocess.run([sys.executable, "-m", "aotwheel", *argv, "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("argv", [["check"], ["devices"], ["build", "toolchain"], ["build", "warm"], ["compile"]])
def test_help_shows_devlist_and_hides_the_old_spellings(argv: list[str]) -> None:
    text = _help(*argv)
    assert "--devlist" in text
    for old in ("--device ", "--device,", "--devices", "--no-jit ", "--no-jit]"):
        assert old not in text, (old, text)


def test_compile_and_resolve_spell_jit_fallback_alike() -> None:
    assert "--no-jit-fallback" in _help("compile") and "--no-jit-fallback" in _help("resolve")
    parser = build_parser("compile")
    assert parser.parse_args(["compile", "k.spv", "--no-jit-fallback"]).no_jit and parser.parse_args(["compile", "k.spv", "--no-jit"]).no_jit


def test_build_help_says_what_each_command_does_in_plain_text() -> None:
    text = _help("build")
    assert "``" not in text and ":func:" not in text
    described = [line.split()[0] for line in text.split("commands:", 1)[1].splitlines() if line.startswith("  ") and not line.startswith("   ")]
    assert described[:3] == ["toolchain", "cache", "warm"], text
    assert "(builds no wheel)" in " ".join(_help().split())  # the top-level list says it is a group
