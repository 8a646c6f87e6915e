"""``aotwheel`` command line. Each subcommand lives in its own module with
``register(subparsers)`` and a handler ``run(args) -> int``; heavy imports stay inside ``run``."""

from __future__ import annotations

import argparse
import importlib
import sys

from aotwheel.errors import run_command

# Subcommand modules, in --help order. Each must import only light modules at top level.
_COMMAND_MODULES = (
    "aotwheel.cli.resolve",
    "aotwheel.cli.inspect",
    "aotwheel.cli.check",
    "aotwheel.cli.build",
    "aotwheel.cli.compile",
)


def build_parser() -> argparse.ArgumentParser:
    from aotwheel import __version__

    parser = argparse.ArgumentParser(prog="aotwheel", description="Ahead-of-time GPU device code for Python wheels.")
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
    try:
        return run_command(lambda: args.handler(args))
    except BrokenPipeError:
        return 1
