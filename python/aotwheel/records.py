"""``@record``: what ``ReadSpec`` (aotwheel.backends) is made with until it is a dataclass too;
every other data class of aotwheel is a plain ``@dataclass``. Delete this module with that change.

A record writes its ``__init__`` and :func:`record` adds ``__repr__``, ``__eq__``,
``__match_args__`` and no ``__hash__``, as ``@dataclass`` (``eq=True``, not frozen) would; it
checks at class creation that ``__init__`` takes exactly the annotated fields, in order.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing the registry (aotwheel.backends) imports no typing (tests/test_layering.py)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")


def record(cls: type[T] | None = None, *, slots: bool = False) -> Any:
    """Make ``cls`` a record (used as ``@record`` or ``@record(slots=True)``)."""
    def wrap(c: type[T]) -> type[T]:
        return _make(c, slots)

    return wrap if cls is None else wrap(cls)


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

