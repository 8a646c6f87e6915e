"""aotwheel.records: the inspect path's data classes without dataclasses (issue 29's start-up).
A record must behave as the dataclass it replaced: the same __init__, repr, equality, no hash,
slots; and a record whose __init__ drifts from its fields is refused when the class is made."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from aotwheel.model import Image, ImageKind, Target
from aotwheel.records import TupleRecord, asdict, record


@record
class Pair:
    a: int
    b: list[int]

    def __init__(self, a: int, b: list[int] | None = None) -> None:
        self.a = a
        self.b = [] if b is None else b


@dataclasses.dataclass
class PairDataclass:
    a: int
    b: list[int] = dataclasses.field(default_factory=list)


def test_a_record_reads_compares_and_hashes_as_the_dataclass_it_replaced() -> None:
    r, d = Pair(1, [2]), PairDataclass(1, [2])
    assert repr(r).replace("Pair", "X") == repr(d).replace("PairDataclass", "X")
    assert r == Pair(1, [2]) and r != Pair(1, [3]) and r != d and Pair.__hash__ is None
    assert Pair.__match_args__ == ("a", "b") and asdict(r) == dataclasses.asdict(d)
    assert Pair(1).b is not Pair(1).b  # a fresh default per instance


def test_slots_records_have_no_instance_dict() -> None:
    img = Image(0, 1, 2, ImageKind.SPIRV, None, False)
    assert not hasattr(img, "__dict__") and "kind" in Image.__slots__
    with pytest.raises(AttributeError):
        img.not_a_field = 1  # type: ignore[attr-defined]


def test_a_record_whose_init_drifts_from_its_fields_is_refused() -> None:
    with pytest.raises(TypeError, match=r"record .*Broken: write an __init__\(self, a, b\)"):
        @record
        class Broken:
            a: int
            b: int

            def __init__(self, a: int) -> None:
                self.a = a
    with pytest.raises(TypeError, match="record .*NoInit"):
        @record
        class NoInit:
            a: int


def test_asdict_walks_nested_records_lists_and_dicts() -> None:
    t = Target("pvc", "12.60.7", "m", ImageKind.AR, 3, 0)
    doc = asdict({"x": [t], "y": (1, None)})
    assert doc["x"][0]["name"] == "pvc" and doc["x"][0]["format"] == "ar" and doc["y"] == (1, None)


class Entry(TupleRecord):
    offset: int
    name: str
    section: str | None = None


def test_a_tuple_record_is_the_named_tuple_it_replaced() -> None:
    e = Entry(1, "x")
    assert e == (1, "x", None) and isinstance(e, tuple) and e.section is None and e.name == "x"
    assert repr(e) == "Entry(offset=1, name='x', section=None)" and Entry._fields == ("offset", "name", "section")
    assert e._replace(section=".nv_fatbin") == Entry(1, "x", ".nv_fatbin") and Entry(offset=2, name="y").offset == 2
    assert pickle.loads(pickle.dumps(e)) == e and type(pickle.loads(pickle.dumps(e))) is Entry
    with pytest.raises(TypeError, match="missing required argument 'name'"):
        Entry(1)
    with pytest.raises(TypeError):
        Entry(1, "x", None, 4)
    with pytest.raises(TypeError, match="unexpected"):
        e._replace(bogus=1)
