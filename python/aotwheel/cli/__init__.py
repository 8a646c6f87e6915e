"""``aotwheel`` command line. Each subcommand lives in its own module with
``register(subparsers)`` and a handler ``run(args) -> int``; heavy imports stay inside ``run``.

Every command takes ``--json``. Exit status: 0 ok; 1 a verdict the policy rejects (a device that
cannot run the code, a JIT under ``--jit error``, a failing selftest kernel); 2 bad input (an
unknown device, a corrupt binary, a bad option). Warnings are one line each on stderr:
``aotwheel: warning: ...``.
"""

from __future__ import annotations

import argparse
import os
import sys

from aotwheel.errors import run_command

TYPE_CHECKING = False  # not typing's: `check --help` loads no typing (tests/test_settings.py)
if TYPE_CHECKING:
    from typing import Any

# Subcommand modules and the commands each registers, in --help order; None marks where the
# backends' own commands (their settings' ``COMMANDS``, e.g. Intel's ``compile``) go. Each module must import
# only light modules at top level.
_COMMAND_MODULES: tuple[tuple[str, tuple[str, ...]] | None, ...] = (
    ("aotwheel.cli.resolve", ("resolve",)),
    ("aotwheel.cli.inspect", ("inspect",)),
    ("aotwheel.cli.check", ("devices", "check", "selftest")),
    ("aotwheel.cli.build", ("build",)),
    None,
    ("aotwheel.cli.variant", ("variant",)),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``aotwheel`` parser; with ``command``, only the module of that command is imported and
    registered (a command's start-up pays for its own imports only), else every command."""
    from aotwheel import __version__

    parser = Parser(prog="aotwheel", description="Ahead-of-time GPU device code for Python wheels.",
                    epilog="Exit status: 0 ok, 1 a verdict the policy rejects, 2 bad input.")
    parser.add_argument("--version", action="version", version=f"aotwheel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _modules(command):
        from aotwheel.backends import load_module

        try:
            module = load_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue  # subcommand not present in this build of aotwheel
        module.register(sub)
    return parser


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, at the width ``shutil.get_terminal_size`` gives, found without
    importing shutil: argparse makes a formatter for every argument added (help printed or not),
    and shutil's import (bz2, lzma, fnmatch) was a tenth of ``python -c pass``."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with :class:`HelpFormatter` unless given another (its
    sub-commands' parsers are of its class)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS``, else the terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _modules(command: str | None) -> list[str]:
    """The modules that register ``command`` (every command's for ``None`` or a name no module has,
    so that help and argparse's "invalid choice" list them all)."""
    if command == "":
        return []
    core = [entry for entry in _COMMAND_MODULES if entry is not None]
    own = [name for name, commands in core if command in commands]
    if own:
        return own
    from aotwheel import backends

    extra = backends.commands()
    if command in extra:
        return [extra[command]]
    return [m for entry in _COMMAND_MODULES for m in ([entry[0]] if entry else dict.fromkeys(extra.values()))]


def _command(argv: list[str]) -> str | None:
    """The command ``argv`` runs: its first argument when that is no option; ``""`` for
    ``--version`` alone (no command to register); ``None`` otherwise (help, errors: all commands)."""
    if argv and not argv[0].startswith("-"):
        return argv[0]
    return "" if argv == ["--version"] else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    import warnings

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
