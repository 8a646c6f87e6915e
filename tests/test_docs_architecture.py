"""docs/architecture.md's module map is true: every path it names exists, every package and every
core module of python/aotwheel is in it, and no module imports one the map puts in a higher layer
(its "Layers" rule), read from the source's import statements, lazy ones included.

The registry's by-name imports of vendor modules are no import statement and not edges here (the
registry sits above the vendors it loads); an import of a module's own parent package is none
either (Python imports it first anyway), as in tests/test_model.py's graph.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from _imports_util import package_modules, static_imports

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "python" / "aotwheel"
DOC = REPO / "docs" / "architecture.md"


def _map_rows() -> list[tuple[list[str], int]]:
    """``(paths, layer)`` per row of the module-map table, paths relative to python/aotwheel."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Module map\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[1].isdigit():
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        first = names[0]
        base = first if first.endswith("/") else first.rpartition("/")[0] + "/" if "/" in first else ""
        paths = [first] + [base + n for n in names[1:]]
        rows.append((paths, int(cells[1])))
    return rows


def _module_name(path: str) -> str:
    """``backends/intel/`` -> ``aotwheel.backends.intel``; ``cli/check.py`` -> ``aotwheel.cli.check``."""
    parts = ["aotwheel", *[p for p in path.rstrip("/").removesuffix(".py").split("/") if p]]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layers() -> dict[str, int]:
    """Module name -> its layer: a file's row wins over its folder's."""
    layers: dict[str, int] = {}
    for paths, layer in _map_rows():
        for p in paths:
            if p.endswith(".py"):
                layers[_module_name(p)] = layer
    return layers


def test_every_path_in_the_map_exists() -> None:
    rows = _map_rows()
    assert len(rows) > 20
    missing = [p for paths, _ in rows for p in paths if not (ROOT / p).exists()]
    assert missing == []


def test_every_package_and_every_core_module_is_in_the_map() -> None:
    listed = {p.rstrip("/") for paths, _ in _map_rows() for p in paths}
    packages = {d.relative_to(ROOT).as_posix() for d in ROOT.rglob("__init__.py") for d in [d.parent] if d != ROOT}
    assert sorted(packages - listed) == []
    core = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")
            if not re.match(r"backends/[^/]+/", p.relative_to(ROOT).as_posix())}
    assert sorted(core - listed) == []


def test_every_module_has_a_layer_and_imports_none_above_it() -> None:
    layers = _layers()
    unplaced = sorted(m for m in package_modules() if m not in layers and not any(m.startswith(f"aotwheel.backends.{v}.") or
                                                                          m == f"aotwheel.backends.{v}" for v in _vendors()))
    assert unplaced == []

    def layer(m: str) -> int:
        return layers.get(m, 2)  # a vendor's module the map does not name is in its vendor's layer

    upward = {m: sorted(e for e in out if layer(e) > layer(m)) for m, out in static_imports().items()}
    assert {m: e for m, e in upward.items() if e} == {}


def _vendors() -> list[str]:
    return sorted(d.name for d in (ROOT / "backends").iterdir() if (d / "__init__.py").is_file())


def test_the_map_reading_finds_a_wrong_row(tmp_path, monkeypatch) -> None:
    # The checks themselves: a row naming a missing file, and a layer-1 row for a module that imports the registry.
    text = DOC.read_text(encoding="utf-8").replace("| `config.py` | 4 |", "| `config.py` `nothere.py` | 1 |")
    doc = tmp_path / "architecture.md"
    doc.write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "DOC", doc)
    rows = _map_rows()
    assert (["config.py", "nothere.py"], 1) in rows
    layers = _layers()
    assert layers["aotwheel.config"] == 1
    assert "aotwheel.backends" in static_imports()["aotwheel.config"] and layers["aotwheel.backends"] == 3
