"""The aotwheel package's modules and the imports between them, read from its source (no import
runs): what the layering, architecture and cycle tests walk."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "aotwheel"


def package_modules() -> dict[str, Path]:
    """Module name (``aotwheel.cli.check``; a package's ``__init__.py`` is the package) -> its file."""
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def static_imports(*, run_time: bool = False) -> dict[str, set[str]]:
    """Module -> the aotwheel modules it imports, at module level or inside functions (``from a.b
    import c`` is ``a.b.c`` where that is a module, else ``a.b``). An import of a module's own
    parent package is no edge (Python imports parents first anyway). ``run_time``: only the imports
    that run, not those under ``if TYPE_CHECKING:`` (annotations' names, for the type checker)."""
    mods = package_modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        tree = ast.parse(p.read_text(encoding="utf-8"))
        typing_only = {id(n) for block in ast.walk(tree) if run_time and _is_type_checking(block) for n in ast.walk(block)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for n in names:
                while n and n not in mods:
                    n = n.rpartition(".")[0]
                if n and n != m and not m.startswith(n + "."):
                    edges[m].add(n)
    return edges


def _is_type_checking(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` block (typing's flag or the package's own ``TYPE_CHECKING = False``)."""
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
