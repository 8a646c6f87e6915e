"""``aotwheel`` command line. Each subcommand lives in its own module with
``register(subparsers)`` and a handler ``run(args) -> int``; heavy imports stay inside ``run``.

Every command takes ``--json``. Exit status: 0 ok; 1 a verdict the policy rejects (a device that
cannot run the code, a JIT under ``--jit error``, a failing selftest kernel); 2 bad input (an
unknown device, a corrupt binary, a bad option). Warnings are one line each on stderr:
``aotwheel: warning: ...``.
"""

from __future__ import annotations

import sys

from aotwheel.errors import run_command

TYPE_CHECKING = False  # not typing's: `aotwheel inspect lib.so` imports neither typing nor argparse
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from types import ModuleType

# Subcommand modules and the commands each registers, in --help order; None marks where the
# backends' own commands (``Capabilities.commands``, e.g. Intel's ``compile``) go. Each module must import
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
    import argparse

    from aotwheel import __version__

    parser = argparse.ArgumentParser(prog="aotwheel", description="Ahead-of-time GPU device code for Python wheels.",
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

    extra = {c: m for b in backends.all_backends() for c, m in b.capabilities.commands}
    if command in extra:
        return [extra[command]]
    return [m for entry in _COMMAND_MODULES for m in ([entry[0]] if entry else dict.fromkeys(extra.values()))]


def _command(argv: list[str]) -> str | None:
    """The command ``argv`` runs: its first argument when that is no option; ``""`` for
    ``--version`` alone (no command to register); ``None`` otherwise (help, errors: all commands)."""
    if argv and not argv[0].startswith("-"):
        return argv[0]
    return "" if argv == ["--version"] else None


class QuickArgs:
    """What :func:`quick_args` parsed: the attributes argparse's ``Namespace`` would have."""

    command: str
    handler: Callable[[QuickArgs], int | None]  # the command module's run()

    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)


def quick_args(argv: list[str]) -> QuickArgs | None:
    """The common call of a command whose module declares ``POSITIONAL`` and ``SWITCHES`` (one
    path and store_true switches, e.g. ``inspect lib.so --json``), parsed without building
    argparse's parser (argparse imports re, gettext and locale: a third of ``python -c pass``);
    ``None`` for anything else (help, an abbreviated or unknown option, ``--``, another
    argument count), which argparse then parses, errors included. tests/test_cli_quick.py holds
    that both parse a call alike."""
    module = _quick_module(argv[0]) if argv else None
    if module is None:
        return None
    switches: dict[str, str] = module.SWITCHES
    values: dict[str, object] = {"command": argv[0], "handler": module.run}
    values.update((flag[2:].replace("-", "_"), False) for flag in switches)
    positional: list[str] = []
    for arg in argv[1:]:
        if arg in switches:
            values[arg[2:].replace("-", "_")] = True
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
    if len(positional) != 1:
        return None
    values[module.POSITIONAL] = positional[0]
    return QuickArgs(**values)


def _quick_module(command: str) -> ModuleType | None:
    """The module of a core ``command`` when it declares the quick form, else ``None``."""
    for entry in _COMMAND_MODULES:
        if entry is not None and command in entry[1]:
            from aotwheel.backends import load_module

            module = load_module(entry[0])
            return module if hasattr(module, "SWITCHES") and hasattr(module, "POSITIONAL") else None
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--version"]:  # what argparse's version action prints, without building the parser
        from aotwheel import __version__

        print(f"aotwheel {__version__}")
        return 0
    quick = quick_args(argv)
    if quick is not None:
        # A quick command (inspect: it reads bytes) emits no Python warning (tests/test_cli_quick.py
        # runs it with warnings as errors), so it needs no formatter for them: importing warnings
        # alone cost 0.17 ms of its start-up.
        try:
            return run_command(lambda: quick.handler(quick))
        except BrokenPipeError:
            return 1
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
