"""One record system (issue 40): aotwheel's data classes are plain ``@dataclass`` (and
``typing.NamedTuple`` where the C scanner makes tuples), no hand-written ``__init__`` that only
assigns its fields, no home-made record base. The types the inspector makes by the thousand keep
what the record system gave them: slots, value equality, a JSON form walked without copying."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest

from aotwheel.backends.nvidia.fatbin import FatbinContainer, FatbinEntry
from aotwheel.model import Image, ImageKind, Target
from aotwheel.report import FileReport, Report

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "aotwheel"
NOT_YET: set[tuple[str, str]] = set()


def _field_only_inits() -> list[tuple[str, str]]:
    """``(file, class)`` of every class whose ``__init__`` does nothing but store its parameters as
    public attributes (``self.x = x``, ``self.x = [] if x is None else x``, tuple assignments): a
    record written by hand."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
            if init is None:
                continue
            params = {a.arg for a in init.args.args[1:] + init.args.kwonlyargs}
            body = [s for s in init.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            stores = [s for s in body if isinstance(s, (ast.Assign, ast.AnnAssign))]
            if params and body and len(stores) == len(body) and all(_stores_params(s, params) for s in stores):
                found.append((path.relative_to(PACKAGE).as_posix(), node.name))
    return found


def _stores_params(stmt: ast.Assign | ast.AnnAssign, params: set[str]) -> bool:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    # Public attributes: a class that keeps private state (self._sock = sock) is no record.
    if not all(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" and not t.attr.startswith("_")
               for t in flat):
        return False
    names = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)} if stmt.value is not None else set()
    return bool(names & params) and names <= params | {"None", "list", "dict", "tuple", "set"}


def test_no_hand_written_record_init_remains() -> None:
    assert set(_field_only_inits()) <= NOT_YET, _field_only_inits()


def test_the_scan_finds_a_hand_written_record(tmp_path: Path) -> None:
    # The scan above, on the shape every record of the old system had.
    src = ("class Pair:\n    a: int\n    b: list[int]\n\n"
           "    def __init__(self, a: int, b: list[int] | None = None) -> None:\n"
           "        self.a = a\n        self.b = [] if b is None else b\n")
    [cls] = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ClassDef)]
    init = cls.body[-1]
    assert isinstance(init, ast.FunctionDef)
    assert all(_stores_params(s, {"a", "b"}) for s in init.body if isinstance(s, ast.Assign))


def test_no_home_made_record_system_remains() -> None:
    assert not (PACKAGE / "buildsteps" / "values.py").exists() or "class Value" not in (PACKAGE / "buildsteps" / "values.py").read_text()
    assert not (PACKAGE / "records.py").exists()
    users = sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                   if "@record" in p.read_text(encoding="utf-8") or "TupleRecord" in p.read_text(encoding="utf-8"))
    assert users == [], users


def test_images_have_slots_and_compare_by_value() -> None:
    img = Image(0, 1, 2, ImageKind.SPIRV, None, False)
    assert not hasattr(img, "__dict__") and "kind" in Image.__slots__
    with pytest.raises(AttributeError):
        img.not_a_field = 1  # type: ignore[attr-defined]
    assert img == Image(0, 1, 2, ImageKind.SPIRV, None, False) and img != Image(0, 1, 3, ImageKind.SPIRV, None, False)
    assert Image.__hash__ is None  # mutable: the inspector renumbers archive members' images
    assert Image(0, 1, 2, ImageKind.AR, None, False).members is not Image(0, 1, 2, ImageKind.AR, None, False).members  # a fresh default


def test_the_report_json_walks_nested_records() -> None:
    t = Target("pvc", "12.60.7", "m", ImageKind.AR, 3, 0)
    img = Image(0, 16, 3, ImageKind.AR, "spir64_gen", False, ".tgtimg", members=["m"])
    doc = json.loads(json.dumps(Report("lib.so", [FileReport("lib.so", [t], ["spirv"], [img], 2)]).to_dict()))
    [f] = doc["files"]
    assert f["native_targets"][0]["name"] == "pvc" and f["native_targets"][0]["format"] == "ar"
    assert f["images"][0]["members"] == ["m"] and f["images"][0]["kind"] == "ar" and f["kernels"] == 2 and f["carried"] is None


def test_fatbin_entries_are_named_tuples_as_the_c_scanner_makes_them() -> None:
    # csrc/_fastscan.c makes FatbinEntry with tuple's own constructor: a tuple subclass.
    e = FatbinEntry(64, "cubin", 2, 90, False, False, (1, 8), 0x11, 64, 128, 256, 0, 0, None, None, None, 0, "sm_90")
    assert isinstance(e, tuple) and e.target == "sm_90" and e.stored_size == 256 and not e.compressed
    assert e._replace(compression="zstd", compressed_size=10).stored_size == 10
    assert pickle.loads(pickle.dumps(e)) == e and type(pickle.loads(pickle.dumps(e))) is FatbinEntry
    c = FatbinContainer(0, 1, 64, (e,))
    assert c.section is None and not c.relocatable and FatbinContainer._fields[-1] == "section"
    with pytest.raises(TypeError):
        FatbinContainer(0, 1)  # type: ignore[call-arg]
