"""pyproject.toml's run-time dependencies are exactly the third-party modules python/aotwheel imports.

Imports are read from the source with ``ast`` (every ``import``, lazy ones included); what is not
the standard library or aotwheel itself must be a declared dependency or one of the optional
modules below, each of which the code imports only where the user opted in.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "python" / "aotwheel"

# Distribution name -> the module it installs (where the two differ, or may).
MODULE_OF = {"pyelftools": "elftools", "zstandard": "zstandard", "packaging": "packaging", "lz4": "lz4"}
# Imported only on an opted-in path: the `selftest` extra (numpy, pyopencl), a SYCL or PyTorch
# installation the user already has (dpctl, torch), aotwheel.setuptools inside a setuptools build,
# `aotwheel variant` labelling wheels (the `variants` extra; the provider plugin itself needs none),
# aotwheel.pep517 inside a scikit-build-core build (a project's build-system.requires names both).
OPTIONAL = {"numpy", "pyopencl", "dpctl", "torch", "setuptools", "variantlib", "scikit_build_core"}


def _imported() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "aotwheel" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(path.relative_to(REPO).as_posix())
    return found


def _declared() -> set[str]:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0].strip().lower() for req in project["dependencies"]}
    return {MODULE_OF.get(n, n) for n in names}


def test_every_declared_dependency_is_imported() -> None:
    unused = _declared() - set(_imported())
    assert not unused, f"declared in [project].dependencies but never imported by python/aotwheel: {sorted(unused)}"


def test_every_imported_module_is_declared_or_optional() -> None:
    undeclared = {m: sorted(files) for m, files in _imported().items() if m not in _declared() | OPTIONAL}
    assert not undeclared, f"imported but not in [project].dependencies: {undeclared}"
