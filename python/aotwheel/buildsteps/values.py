"""A base for the build steps' small value classes, in place of dataclasses.

Every SPIR-V and ocloc edge is a Python process of its own that mostly finds its result in a
cache; importing dataclasses (which imports inspect, ast and dis) was 15-30 ms of such a ~120 ms
process. The classes on that path list their fields in ``__slots__`` and write their own typed
``__init__``; :class:`Value` gives them equality, hashing and a repr over those fields.
:func:`place` orders the keys of the JSON that the backends add to (the resolver's, the manifest's).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: every build step imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


class Value:
    """Equality, hash and repr over ``__slots__`` (fields in ``_hidden`` are left out of the repr;
    fields in ``_uncompared`` out of equality and hash). Treat instances as immutable."""

    __slots__ = ()
    _hidden: tuple[str, ...] = ()
    _uncompared: tuple[str, ...] = ()

    def _compared(self) -> tuple[object, ...]:
        names: tuple[str, ...] = self.__slots__  # type: ignore[assignment]
        return tuple(getattr(self, n) for n in names if n not in self._uncompared)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._compared() == other._compared()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, self._compared()))

    def __repr__(self) -> str:
        names: tuple[str, ...] = self.__slots__  # type: ignore[assignment]
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names if n not in self._hidden)
        return f"{type(self).__qualname__}({shown})"

    def as_dict(self) -> dict[str, object]:
        """The fields by name, in declaration order."""
        names: tuple[str, ...] = self.__slots__  # type: ignore[assignment]
        return {n: getattr(self, n) for n in names}


def place(core: Mapping[str, object], extra: Sequence[tuple[str, str, object]]) -> dict[str, object]:
    """``core``'s keys with each ``(after, key, value)`` of ``extra`` placed after the key
    ``after`` (at the end if there is none): the resolver's JSON (CMake's input) and the build
    manifest kept the key order they had before the backends split them."""
    out: dict[str, object] = {}
    for key, value in core.items():
        out[key] = value
        out.update({k: v for after, k, v in extra if after == key})
    out.update({k: v for after, k, v in extra if after not in core})
    return out
