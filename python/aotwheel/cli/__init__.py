"""``aotwheel`` command line. Each subcommand lives in its own module with
``register(subparsers)`` and a handler ``run(args) -> int``; heavy imports stay inside ``run``.

Every command takes ``--json``. Exit status: 0 ok; 1 a verdict the policy rejects (a device that
cannot run the code, a JIT under ``--jit error``, a failing selftest kernel); 2 bad input (an
unknown device, a corrupt binary, a bad option). Warnings are one line each on stderr:
``aotwheel: warning: ...``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from aotwheel.errors import run_command

# Subcommand modules, in --help order. Each must import only light modules at top level.
_COMMAND_MODULES = (
    "aotwheel.cli.resolve",
    "aotwheel.cli.inspect",
    "aotwheel.cli.check",
    "aotwheel.cli.build",
    "aotwheel.cli.compile",
    "aotwheel.cli.variant",
)


def build_parser() -> argparse.ArgumentParser:
    from aotwheel import __version__

    parser = argparse.ArgumentParser(prog="aotwheel", description="Ahead-of-time GPU device code for Python wheels.",
                                     epilog="Exit status: 0 ok, 1 a verdict the policy rejects, 2 bad input.")
    parser.add_argument("--version", action="version", version=f"aotwheel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue  # subcommand not present in this build of aotwheel
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    with warnings.catch_warnings():
        warnings.showwarning = _one_line
        try:
            return run_command(lambda: args.handler(args))
        except BrokenPipeError:
            return 1


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: object = None, line: str | None = None) -> None:
    """Warnings for people: ``aotwheel: warning: <message>``, without Python's file:line and source echo."""
    text = " ".join(str(message).split())
    print(f"aotwheel: warning: {text}", file=sys.stderr)
