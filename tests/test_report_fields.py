"""A vendor's own fields of the inspection report (issue 40): the core report
(``aotwheel/report.py``) names no vendor format; NVIDIA's loadable targets and modules live in
``backends/nvidia/report.py``, and the JSON keeps every documented key where schema 2 has it."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from test_layering import VENDOR_WORD

from aotwheel.backends.nvidia.report import CudaFields, cuda_fields
from aotwheel.inspector import inspect
from aotwheel.report import FileReport, Report

REPO = Path(__file__).resolve().parents[1]
CUDA_LIB = REPO / "tests" / "data" / "cuda-h100" / "libkern_sm_90.so"
ZEBIN = REPO / "tests" / "data" / "ocloc-26.27" / "ptl-h.bin"  # a bare zebin: no NVIDIA reader reads it


def _documented_fields() -> list[str]:
    """``files[]``'s fields in docs/report-schema.md's table, in its order."""
    text = (REPO / "docs" / "report-schema.md").read_text(encoding="utf-8").split("## `files[]`", 1)[1]
    table = text.split("\n\n", 2)[1]
    return re.findall(r"^\| `(\w+)` \|", table, re.M)


def test_the_core_report_names_no_vendor() -> None:
    # Identifiers (classes, functions, fields, attributes, arguments) and strings, docstrings aside.
    tree = ast.parse((REPO / "python" / "aotwheel" / "report.py").read_text(encoding="utf-8"))
    prose = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
             and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    names = [getattr(n, attr) for n in ast.walk(tree) for attr in ("id", "attr", "arg", "name")
             if isinstance(getattr(n, attr, None), str)]
    names += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose]
    assert [w for w in names if VENDOR_WORD.search(w.replace("_", " "))] == []


def test_every_file_has_the_documented_keys_with_the_vendor_keys_in_place() -> None:
    # A file no NVIDIA reader touched (a bare zebin, a report made here) still has `cuda` and
    # `cuda_modules` (empty), after the keys the schema table puts them after.
    documented = _documented_fields()
    made = Report("x.so", [FileReport("x.so", [], [], [], None)]).to_dict()["files"][0]
    read = inspect(ZEBIN).to_dict()["files"]
    assert read and read[0]["native_targets"]
    for doc in [made, *read]:
        keys = list(doc)
        assert sorted(keys) == sorted(documented) and doc["cuda"] == [] and doc["cuda_modules"] == []
        for key in ("cuda", "cuda_modules"):
            assert keys[keys.index(key) - 1] == documented[documented.index(key) - 1]


def test_nvidia_fields_fill_the_json_and_the_attribute_published_wheels_read() -> None:
    report = inspect(CUDA_LIB)
    [fr] = report.files
    fields = cuda_fields(fr)
    assert isinstance(fields, CudaFields) and fields.loadable and all(t.startswith(("sm_", "compute_")) for t in fields.loadable)
    assert json.loads(json.dumps(report.to_dict()))["files"][0]["cuda"] == fields.loadable
    # The _aot.py of wheels built by older aotwheel reads FileReport.cuda (aotwheel.aot)
    assert fr.cuda is fields.loadable  # type: ignore[attr-defined]


def test_a_failed_read_takes_back_what_it_added_to_the_vendor_fields() -> None:
    fields = CudaFields(["sm_80"])
    mark = fields.mark()
    fields.loadable.append("sm_90")
    fields.undo(mark)
    assert fields.loadable == ["sm_80"] and fields.modules == []
