"""The backends' binary readers: each backend's package's ``reader`` module, in the order the
inspector asks them.

Apart from the backend objects (:mod:`aotwheel.backends`) because the inspector needs only the
readers, while backend objects reach up to code that uses the inspector (self-tests, the JIT
cache): the inspector imports this module, never the backend objects. A vendor's reader needs no
line here: it is ``<package>.reader`` of the vendor's line in ``aotwheel.backends._BUILTIN``
(:func:`aotwheel.backends.reader_module`), asked in its ``READS.order``, then registry order.
"""

from __future__ import annotations

from aotwheel import backends

TYPE_CHECKING = False  # not typing's: the inspector imports this module (aotwheel.records says why)
if TYPE_CHECKING:
    from types import ModuleType

# Readers added by register(), by backend name: they replace (or add to) the backends' own.
_REGISTERED: dict[str, str] = {}


def register(name: str, module: str) -> None:
    """Add (or replace) a backend's reader: ``module`` defines ``READS`` and the Reader functions."""
    _REGISTERED[name] = module


def modules() -> dict[str, str]:
    """Reader module names by backend name (not imported): every backend's ``<package>.reader``,
    in registry order, then those :func:`register` added."""
    found = {name: backends.reader_module(name) or "" for name in backends.names()}
    return {**found, **_REGISTERED}


def _imported() -> list[tuple[str, ModuleType]]:
    """``(name, module)`` of every reader, in the order they are asked (``READS.order``, then
    registry order); a backend whose package has no ``reader`` module reads nothing."""
    found: list[tuple[str, ModuleType]] = []
    for name, module in modules().items():
        try:
            found.append((name, backends.load_module(module)))
        except ModuleNotFoundError as exc:
            if exc.name != module or name in _REGISTERED:
                raise
    return sorted(found, key=lambda item: item[1].READS.order)  # stable: ties keep registry order


def names() -> tuple[str, ...]:
    """Backends with a reader, in the order they are asked."""
    return tuple(name for name, _ in _imported())


def all_readers() -> tuple[ModuleType, ...]:
    """Every reader module (:class:`aotwheel.backends.protocol.Reader`), imported, in the order they are asked."""
    return tuple(module for _, module in _imported())

