"""Records: the data classes ``aotwheel inspect`` builds, made without :mod:`dataclasses`.

``import dataclasses`` imports :mod:`inspect` and with it ``ast``, ``dis`` and ``tokenize``:
about 11 ms, more than starting Python itself (``python -c pass``, 9 ms here), while the goal
for ``aotwheel inspect`` of a small library is 1.5 times that in all (benchmarks/cli_startup.py).
Generating ``__init__`` as dataclasses does (compiling its source) cost 1.6 ms for the 15
classes of that path, so a record writes its ``__init__`` and :func:`record` adds the rest of
what ``@dataclass`` (``eq=True``, not frozen) gives: ``__repr__``, ``__eq__``,
``__match_args__``, no ``__hash__``, and ``slots=True`` as dataclass's; it checks at class
creation that ``__init__`` takes exactly the annotated fields, in order. Types outside that path
(verdicts, probe and selftest results) stay dataclasses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing is what this module avoids
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


def record(cls: type[T] | None = None, *, slots: bool = False) -> Any:
    """Make ``cls`` a record (used as ``@record`` or ``@record(slots=True)``)."""
    def wrap(c: type[T]) -> type[T]:
        return _make(c, slots)

    return wrap if cls is None else wrap(cls)


def asdict(value: Any) -> Any:
    """``dataclasses.asdict`` for records: a record as a dict of its fields, into lists, tuples,
    dicts and nested records; other values as they are (no deep copy of every leaf: the 11k
    images of cuFFT took 1 s that way)."""
    cls = type(value)
    if cls is list:
        return [asdict(v) for v in value]
    if cls is dict:
        return {k: asdict(v) for k, v in value.items()}
    if cls is tuple:
        return tuple(asdict(v) for v in value)
    names = cls.__dict__.get("__record_fields__")
    if names is not None:
        return {n: asdict(getattr(value, n)) for n in names}
    return value


def _make(cls: type[T], slots: bool) -> type[T]:
    names = tuple(cls.__dict__.get("__annotations__", {}))
    init = cls.__dict__.get("__init__")
    code = getattr(init, "__code__", None)
    if code is None or code.co_varnames[1:code.co_argcount + code.co_kwonlyargcount] != names:
        raise TypeError(f"record {cls.__qualname__}: write an __init__(self, {', '.join(names)}) taking its fields in order")
    if slots:  # a new class, as dataclass(slots=True) makes: __slots__ must exist when a class is made
        ns = {k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
        ns["__slots__"] = names
        metaclass: Any = type(cls)
        cls = metaclass(cls.__name__, cls.__bases__, ns)
    cls.__repr__ = _repr  # type: ignore[assignment,method-assign]
    cls.__eq__ = _eq  # type: ignore[assignment,method-assign]
    cls.__hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as dataclass(eq=True)
    setattr(cls, "__match_args__", names)  # noqa: B010 -- (mypy refuses the assignment)
    setattr(cls, "__record_fields__", names)  # noqa: B010
    return cls


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in type(self).__record_fields__)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names: tuple[str, ...] = type(self).__record_fields__  # type: ignore[attr-defined]  # lists compare as dataclass's tuples do
    return [getattr(self, n) for n in names] == [getattr(other, n) for n in names]


class TupleRecord(tuple):  # type: ignore[type-arg]
    """``typing.NamedTuple``'s class syntax without ``typing``, for types a C scanner makes as
    tuples by the thousand: a subclass's annotated fields become its items, named by the C
    accessors ``collections.namedtuple`` uses, with defaults, ``_fields``, ``_replace`` and a
    named ``repr``. Spell it ``NamedTuple`` for type checkers::

        if TYPE_CHECKING:
            from typing import NamedTuple as TupleRecord
        else:
            from aotwheel.records import TupleRecord
    """

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _field_defaults: dict[str, Any] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = tuple(cls.__dict__.get("__annotations__", {}))
        cls._fields = names
        cls._field_defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
        for i, n in enumerate(names):
            setattr(cls, n, _item(i))

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        names = cls._fields
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments but {len(args)} were given")
        values = list(args)
        for n in names[len(args):]:
            if n in kwargs:
                values.append(kwargs.pop(n))
            elif n in cls._field_defaults:
                values.append(cls._field_defaults[n])
            else:
                raise TypeError(f"{cls.__name__}() missing required argument {n!r}")
        if kwargs:
            raise TypeError(f"{cls.__name__}() got unexpected or repeated arguments {sorted(kwargs)!r}")
        return tuple.__new__(cls, values)

    def _replace(self, **changes: Any) -> Any:
        """A copy with ``changes``, as a named tuple's."""
        values = [changes.pop(n, v) for n, v in zip(self._fields, self)]
        if changes:
            raise TypeError(f"Got unexpected field names: {list(changes)!r}")
        return tuple.__new__(type(self), values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self))})"

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickle and copy make it from its items, as a named tuple
        return tuple(self)


def _item(index: int) -> Any:
    try:  # the descriptor collections.namedtuple uses: C speed for the hot attribute reads
        from _collections import _tuplegetter
    except ImportError:  # another Python than CPython
        return property(lambda self: self[index], doc=f"Alias for field number {index}")
    return _tuplegetter(index, f"Alias for field number {index}")
