"""What every build edge shares, standard library only (each edge is a process of its own): its
entry in the build plan (:mod:`aotwheel.buildsteps.plan`), its argument parser, and writing a
file only when it changes."""

from __future__ import annotations

import json
from pathlib import Path

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: an edge must not import typing
if TYPE_CHECKING:
    import argparse


def edge_digest(edge: dict) -> str:
    """A short digest of one plan entry (without its own ``digest``): the edge's command carries
    it, so ninja reruns exactly the edges whose entry changed."""
    import hashlib

    text = json.dumps({k: v for k, v in edge.items() if k != "digest"}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_edge(plan: str, edge_id: str, digest: str | None = None) -> tuple[dict, dict]:
    """``(plan, edge)``: the plan document and its edge ``edge_id``, as plain JSON objects;
    ``digest``: what CMake saw of the entry (an entry changed since means a stale build graph)."""
    from aotwheel.errors import AotwheelError

    try:
        with open(plan, encoding="utf-8") as f:
            doc = json.load(f)
    except RecursionError:  # nesting deeper than the interpreter's stack
        raise AotwheelError(f"cannot read the build plan {plan} (nested too deeply); re-run CMake configure") from None
    except (OSError, ValueError) as exc:
        raise AotwheelError(f"cannot read the build plan {plan} ({exc}); re-run CMake configure") from None
    problem = _plan_problem(doc)
    if problem:
        raise AotwheelError(f"the build plan {plan} is malformed ({problem}); re-run CMake configure")
    for edge in doc["edges"]:
        if edge.get("id") == edge_id:
            if digest and edge_digest(edge) != digest:
                raise AotwheelError(f"the build plan {plan} changed since CMake generated edge '{edge_id}'; re-run CMake configure")
            return doc, edge
    raise AotwheelError(f"the build plan {plan} has no edge '{edge_id}'; re-run CMake configure")


# What every plan and edge holds, by type (plan.py writes them): a step may index these unchecked.
_PLAN_FIELDS = {"vendor": str, "name": str, "toolchain": str, "settings": str, "edges": list, "outputs": list}
_EDGE_FIELDS = {"id": str, "step": str, "source": str, "outputs": list, "inputs": list, "depfile": str}


def _plan_problem(doc: object) -> str:
    """What is wrong with a plan document's shape, "" when nothing (the vendor's ``data`` is its own)."""
    if not isinstance(doc, dict):
        return f"a JSON {type(doc).__name__}, not an object"
    if not isinstance(doc.get("edges"), list):
        return "'edges' is not a list"
    for name, kind in _PLAN_FIELDS.items():  # what a plan holds has its type (a step reads only some)
        if name in doc and not isinstance(doc[name], kind):
            return f"'{name}' is not a {kind.__name__}"
    for n, edge in enumerate(doc["edges"]):
        if not isinstance(edge, dict) or not isinstance(edge.get("id"), str):
            return f"edge {n} is not an object with an id"
        for name, kind in _EDGE_FIELDS.items():
            if name in edge and not isinstance(edge[name], kind):
                return f"edge {n}: '{name}' is not a {kind.__name__}"
        if not all(isinstance(p, str) for p in edge.get("outputs", []) + edge.get("inputs", [])):
            return f"edge {n}: its outputs and inputs are not paths"
        if not isinstance(edge.get("data"), (dict, type(None))):
            return f"edge {n}: 'data' is not an object"
    return ""


def plan_data(edge: dict, plan: str, read):  # type: ignore[no-untyped-def]
    """``read(edge["data"])``: a vendor step's reading of its edge (and of the plan's fields it
    needs), where a field missing or of another type (a plan edited by hand) is one error line,
    not a traceback."""
    from aotwheel.errors import AotwheelError

    try:
        return read(edge["data"])
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise AotwheelError(f"the build plan {plan} has a malformed edge '{edge['id']}' "
                            f"({type(exc).__name__}: {exc}); re-run CMake configure") from None


def edge_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--plan``, ``--edge`` and ``--digest``: the arguments of a step that runs a plan's edge."""
    parser.add_argument("--plan", required=required, help="the build plan the configure step wrote")
    parser.add_argument("--edge", required=required, help="this edge's id in the plan")
    parser.add_argument("--digest", help="the entry's digest as CMake saw it (a changed entry: re-run CMake)")


def embed_arguments(parser: argparse.ArgumentParser, inputs: str) -> None:
    """A vendor's ``embed`` step: the image set's ``--name``, the C source and header it writes,
    and its ``inputs`` (the files the C source .incbin's)."""
    parser.add_argument("--name", required=True)
    parser.add_argument("--out-c", required=True)
    parser.add_argument("--out-h", required=True)
    parser.add_argument(inputs, nargs="*")


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


def run_step(prog: str, description: str | None, steps: dict, argv: list[str]) -> int:
    """Parse ``argv`` with its step's parser alone (every step's for ``--help`` or an unknown
    step) and run it; an :class:`~aotwheel.errors.AotwheelError` prints one line and returns 2."""
    from aotwheel.errors import run_command

    args = step_parser(prog, description, steps, argv[0] if argv and argv[0] in steps else None).parse_args(argv)
    return run_command(lambda: args.fn(args))


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


def render_depfile(target: str, paths: list[str]) -> str:
    """A depfile ninja reads: ``target: dep...`` with spaces, ``#`` and ``$`` escaped."""
    def esc(p: str) -> str:
        return p.replace("$", "$$").replace("#", "\\#").replace(" ", "\\ ")

    return f"{esc(target)}: " + " \\\n  ".join(esc(p) for p in paths) + "\n"
