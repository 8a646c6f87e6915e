"""What every build edge shares, standard library only (each edge is a process of its own): its
entry in the build plan (:mod:`aotwheel.buildsteps.plan`) and writing a file only when it changes."""

from __future__ import annotations

import json
from pathlib import Path

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: an edge must not import typing
if TYPE_CHECKING:
    import argparse


def load_edge(plan: str, edge_id: str) -> tuple[dict, dict]:
    """``(plan, edge)``: the plan document and its edge ``edge_id``, as plain JSON objects."""
    from aotwheel.errors import AotwheelError

    try:
        with open(plan, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise AotwheelError(f"cannot read the build plan {plan} ({exc}); re-run CMake configure") from None
    for edge in doc.get("edges", ()):
        if edge.get("id") == edge_id:
            return doc, edge
    raise AotwheelError(f"the build plan {plan} has no edge '{edge_id}'; re-run CMake configure")


def write_if_changed(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` unless it holds exactly that already, so that ninja reruns
    nothing that depends on an unchanged file."""
    p = Path(path)
    if p.is_file() and p.read_text() == text:
        return
    from aotwheel.buildsteps.cache import atomic_write

    atomic_write(p, text.encode())


def _fixed_width(prog: str) -> argparse.HelpFormatter:
    # With a width, argparse's formatter does not import shutil to ask the terminal.
    import argparse

    return argparse.RawDescriptionHelpFormatter(prog, width=100)


def step_parser(prog: str, description: str | None, steps: dict, only: str | None = None) -> argparse.ArgumentParser:
    """A parser with one subcommand per step of ``steps`` (name -> (add_arguments, run));
    ``only``: that step's alone (each build edge is a process of its own: it builds the one
    parser it needs, with a fixed width, so that argparse imports no shutil)."""
    import argparse

    formatter = argparse.RawDescriptionHelpFormatter if only is None else _fixed_width
    p = argparse.ArgumentParser(prog=prog, description=description, formatter_class=formatter)
    sub = p.add_subparsers(dest="step", required=True)
    for name, (add_arguments, fn) in steps.items():
        if only is None or name == only:
            s = sub.add_parser(name, formatter_class=formatter)
            add_arguments(s)
            s.set_defaults(fn=fn)
    return p
