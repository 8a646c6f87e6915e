"""Every declared variable is read through its declaration (``Variable.given`` / ``Variable.get``,
which :class:`aotwheel.config.Config` uses for all of them), never straight from a mapping: one
place decides that an empty value counts as unset and what the default is, and AOTWHEEL_OCLOC is
found one way (``backends.intel.ocloc.ocloc_path``), not two.

Read from the source (AST): a ``.get(KEY)``, ``[KEY]``, ``getenv(KEY)`` or ``KEY in ...`` whose key
is a declared name (a string, ``X.name`` of a declared ``Variable``, or a module constant holding
either) fails, in any module of python/aotwheel but variables.py, which defines the readers.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from aotwheel import config, variables

ROOT = Path(__file__).resolve().parents[1] / "python" / "aotwheel"


def _declared_names() -> set[str]:
    return {v.name for v in (*config.all_variables(), *variables.OTHER_NAMES)}


def _variable_constants() -> set[str]:
    """Names bound to ``Variable(...)`` at module level in any variables.py (``OCLOC``, ``DEVLIST``, ...)."""
    found: set[str] = set()
    for path in ROOT.rglob("variables.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "Variable":
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


def _direct_reads(tree: ast.Module, declared: set[str], constants: set[str]) -> list[tuple[int, str]]:
    aliases: dict[str, str] = {}  # module constants: ENV = DEVICE.name, ENV_URL, ... = (X.name, ...)

    def key_name(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and node.value in declared:
            return str(node.value)
        if isinstance(node, ast.Attribute) and node.attr == "name":
            owner = node.value
            word = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else None
            return f"{word}.name" if word in constants else None
        if isinstance(node, ast.Name):
            return aliases.get(node.id)
        return None

    for node in tree.body:
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
            if isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs = list(zip(node.targets[0].elts, node.value.elts))
            for target, value in pairs:
                if isinstance(target, ast.Name) and (name := key_name(value)):
                    aliases[target.id] = name
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        key: ast.AST | None = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("get", "getenv") or \
                    isinstance(func, ast.Name) and func.id == "getenv":
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            key = node.left
        if key is not None and (name := key_name(key)):
            found.append((node.lineno, name))
    return found


def test_no_module_reads_a_declared_variable_directly() -> None:
    declared, constants = _declared_names(), _variable_constants()
    reads = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "variables.py":
            continue
        found = _direct_reads(ast.parse(path.read_text(encoding="utf-8")), declared, constants)
        if found:
            reads[path.relative_to(ROOT).as_posix()] = found
    assert reads == {}


def test_the_scan_finds_each_form_of_direct_read() -> None:
    # The checker itself, on the forms the modules used before they read through the declaration.
    source = '''
import os
from aotwheel.variables import CACHE_DIR
ENV = CACHE_DIR.name
URL, TOKEN = (REMOTE_CACHE.name, REMOTE_CACHE_TOKEN.name)
a = os.environ.get(OCLOC.name)
b = os.environ["AOTWHEEL_JIT"]
c = (os.environ if env is None else env).get(ENV, "")
d = os.getenv(config.JIT_FALLBACK.name)
e = TOKEN in os.environ
f = os.environ.get("PATH")            # not declared
g = os.environ.get(name)              # not a constant
os.environ[OCLOC.name] = "x"          # a write, not a read
'''
    found = _direct_reads(ast.parse(source), _declared_names(), _variable_constants())
    assert found == [(6, "OCLOC.name"), (7, "AOTWHEEL_JIT"), (8, "CACHE_DIR.name"), (9, "JIT_FALLBACK.name"), (10, "REMOTE_CACHE_TOKEN.name")]


def test_an_empty_value_is_unset_and_the_default_applies() -> None:
    from aotwheel.backends.intel.variables import MIN_DRIVER, OCLOC

    assert OCLOC.given({"AOTWHEEL_OCLOC": "  /opt/ocloc \n"}) == "/opt/ocloc"
    assert OCLOC.given({"AOTWHEEL_OCLOC": "  "}) is None and OCLOC.get({}) is None
    assert MIN_DRIVER.given({}) is None and MIN_DRIVER.get({"USE_AOT_MIN_DRIVER": ""}) == "auto"
    assert config.read({"USE_AOT_MIN_DRIVER": " 26.05 "}).value(MIN_DRIVER) == MIN_DRIVER.get({"USE_AOT_MIN_DRIVER": " 26.05 "}) == "26.05"


def test_ocloc_is_found_one_way(tmp_path, monkeypatch) -> None:
    # AOTWHEEL_OCLOC named a link: the build (toolchain._ocloc_path) kept the link, the resolver's
    # check (ocloc.find_ocloc) followed it, so the two asked, cached and printed different paths.
    from aotwheel.backends.intel.ocloc import ocloc_path

    real = tmp_path / "ocloc-26.27"
    real.write_text("#!/bin/sh\nexit 1\n")
    real.chmod(0o755)
    link = tmp_path / "bin" / "ocloc"
    link.parent.mkdir()
    link.symlink_to(real)
    monkeypatch.setenv("AOTWHEEL_OCLOC", str(link))
    assert ocloc_path() == str(link)
    monkeypatch.setenv("AOTWHEEL_OCLOC", "")
    monkeypatch.setenv("PATH", str(link.parent))
    assert ocloc_path() == str(link)
    assert ocloc_path("ocloc") == str(link) and ocloc_path(str(real)) == str(real)
    # The resolver's check runs the same binary by the same path (this one fails its version query).
    from aotwheel.backends.intel.ocloc import find_ocloc
    from aotwheel.errors import ToolchainError

    monkeypatch.setenv("AOTWHEEL_OCLOC", str(link))
    with pytest.raises(ToolchainError, match=f"ocloc at {re.escape(str(link))} failed"):
        find_ocloc()
