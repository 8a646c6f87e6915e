"""A narrow Backend (issue 40): few required members, the rest declared as capabilities, nothing
probed for, one registry. Read from the source (the protocol, the core modules) and from the
registered backends, so that a new required member, a ``getattr(backend, ...)`` in the core, a
``__getattr__`` on the device list or a second registry fails here."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from aotwheel import backends
from aotwheel.backends import capabilities, readers
from aotwheel.backends.capabilities import Capabilities

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "aotwheel"
PROTOCOL = PACKAGE / "backends" / "protocol.py"
CAPABILITIES = PACKAGE / "backends" / "capabilities.py"
MAX_REQUIRED = 10


def _class_members(path: Path, name: str) -> list[str]:
    """The members a class body declares: annotated names and methods, in order."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    found: list[str] = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node.name)
    return found


def _required() -> list[str]:
    return _class_members(PROTOCOL, "Backend")


def _core_modules() -> list[Path]:
    """Every module of the core: python/aotwheel outside the vendor packages (backends/<vendor>/)."""
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if not (p.relative_to(PACKAGE).parts[0] == "backends" and len(p.relative_to(PACKAGE).parts) > 2)]


def test_backend_has_at_most_ten_required_members() -> None:
    required = _required()
    assert len(required) == len(set(required)) and 0 < len(required) <= MAX_REQUIRED, required


def test_every_vendor_implements_the_required_members_and_declares_the_rest() -> None:
    required = set(_required())
    for name in backends.names():
        backend = backends.get(name)
        missing = sorted(m for m in required if not hasattr(backend, m))  # a test may probe; the core may not
        assert missing == [], (name, missing)
        assert backend.name == name and isinstance(backend.capabilities, Capabilities), name
        # mypy checks the object against the protocol because its module says what it is.
        module = PACKAGE / "backends" / name / "backend.py"
        annotated = [n for n in ast.parse(module.read_text(encoding="utf-8")).body
                     if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.target.id == "BACKEND"]
        assert len(annotated) == 1 and ast.unparse(annotated[0].annotation) == "Backend", name


def test_the_amd_backend_implements_only_the_required_members() -> None:
    # Issue 40: it stubbed ~16 members; what it lacks is now simply not declared in its capabilities.
    from aotwheel.backends.amd.backend import AmdBackend

    own = {n for n in vars(AmdBackend) if not n.startswith("_")}
    assert own == set(_required()), sorted(own ^ set(_required()))


def test_capabilities_are_fields_with_nothing_by_default() -> None:
    # Declared, never probed: a backend that declares nothing has no capability at all.
    empty = Capabilities()
    assert all(not getattr(empty, f.name) for f in dataclasses.fields(Capabilities))
    assert not set(_required()) & {f.name for f in dataclasses.fields(Capabilities)}


def _protocol_member_names() -> set[str]:
    """Every member a vendor object or module provides: the protocols' members, the capability
    fields, a reader's functions and spec, a build module's functions."""
    names = {"BACKEND", "READS", "main", "manifest_part", "serves"}
    for path in (PROTOCOL, CAPABILITIES):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name != "ImageWalk"):
            names |= set(_class_members(path, cls.name))
    return names - {"name", "report"}  # names too common to tell a backend's from a file's or an option's


def test_the_core_never_probes_a_backend_or_reader_for_an_attribute() -> None:
    members = _protocol_member_names()
    registries = {PACKAGE / "backends" / "__init__.py", PACKAGE / "backends" / "readers.py", PACKAGE / "devlist.py"}
    found: list[str] = []
    for path in _core_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and node.args):
                continue
            obj = ast.unparse(node.args[0])
            attr = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else None
            if path in registries or attr in members or any(w in obj.lower() for w in ("backend", "reader", "steps", "vendor")):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_the_device_list_forwards_no_attribute_to_vendor_parts() -> None:
    tree = ast.parse((PACKAGE / "devlist.py").read_text(encoding="utf-8"))
    assert [n.lineno for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in ("__getattr__", "__getattribute__")] == []
    from aotwheel.backends.intel.devlist import IntelPart
    from aotwheel.backends.nvidia.devlist import NvidiaPart
    from aotwheel.devlist import resolve

    dl = resolve("pvc,sm_90")
    with pytest.raises(AttributeError):
        dl.targets  # type: ignore[attr-defined]  # noqa: B018
    assert [t.name for t in dl.part_of(IntelPart).targets] == ["pvc"]
    cuda = dl.part_of(NvidiaPart).cuda
    assert cuda is not None and cuda.names == ("sm_90",)


def test_one_registry_names_each_vendors_modules() -> None:
    # The only register() of the backends' core modules is the registry's; readers keep no list.
    core = [PACKAGE / "backends" / "__init__.py", PACKAGE / "backends" / "readers.py", PROTOCOL]
    defined = [(p.name, n.name) for p in core for n in ast.parse(p.read_text(encoding="utf-8")).body
               if isinstance(n, ast.FunctionDef) and n.name == "register"]
    assert defined == [("__init__.py", "register")]
    readers_tree = ast.parse(core[1].read_text(encoding="utf-8"))
    assert not [n for n in readers_tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
                and isinstance(getattr(n, "value", None), ast.Dict)], "readers.py keeps a list of its own"
    # No module name is made by string surgery: each is written out in the entry.
    source = core[0].read_text(encoding="utf-8")
    assert "rpartition(" not in source and '+ ".build"' not in source and '+ ".reader"' not in source


def test_a_registered_vendor_is_seen_by_every_part_of_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = dict(backends._VENDORS)
    monkeypatch.setattr(backends, "_VENDORS", saved)
    backends.register("xdev", backend="xdev.backend", settings="xdev.variables", reader="xdev.reader")
    assert backends.names()[-1] == "xdev"
    assert readers.modules()["xdev"] == "xdev.reader" and backends.reader_module("xdev") == "xdev.reader"
    assert backends.build_module("xdev") is None  # it builds nothing: no build module is guessed
    assert backends.build_module("intel") == backends._VENDORS["intel"]["build"]
    assert backends.reader_module("amd") == "aotwheel.backends.amd.reader" and backends.build_module("amd") == "aotwheel.backends.amd.buildsteps"


def test_capability_records_declare_for_mypy_the_fields_they_have() -> None:
    # The named tuples of capabilities.py restate their fields with types for mypy: the two lists agree.
    records = [n.name for n in ast.parse(CAPABILITIES.read_text(encoding="utf-8")).body
               if isinstance(n, ast.ClassDef) and n.name != "Capabilities"]
    assert len(records) == 5, records
    for name in records:
        record = getattr(capabilities, name)
        assert tuple(_class_members(CAPABILITIES, name)) == record._fields, name


def test_the_protocols_cost_nothing_at_run_time() -> None:
    # protocol.py is for the type checker: every import of it sits under `if TYPE_CHECKING:`.
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for block in ast.walk(tree)
                       if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                       for n in ast.walk(block)}
        found += [f"{path.relative_to(PACKAGE).as_posix()}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and n.module == "aotwheel.backends.protocol" and id(n) not in typing_only]
    assert found == [], found
