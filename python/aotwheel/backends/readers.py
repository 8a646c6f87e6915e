"""The vendors' binary readers, in the order the inspector asks them: each registry entry's
``reader`` module (:data:`aotwheel.backends._VENDORS`).

Apart from the backend objects (:mod:`aotwheel.backends`) because the inspector needs only the
readers, while backend objects reach up to code that uses the inspector (self-tests, the JIT
cache): the inspector imports this module, never the backend objects. Readers are asked in
their ``READS.order``, then registry order.
"""

from __future__ import annotations

from aotwheel import backends

TYPE_CHECKING = False  # not typing's: the inspector imports this module
if TYPE_CHECKING:
    from types import ModuleType


def modules() -> dict[str, str]:
    """Reader module names by vendor name (not imported), in registry order; vendors that read
    no binary left out."""
    return {name: module for name in backends.names() if (module := backends.reader_module(name))}


def _imported() -> list[tuple[str, ModuleType]]:
    """``(name, module)`` of every reader, in the order they are asked (``READS.order``, then
    registry order)."""
    found = [(name, backends.load_module(module)) for name, module in modules().items()]
    return sorted(found, key=lambda item: item[1].READS.order)  # stable: ties keep registry order


def names() -> tuple[str, ...]:
    """Vendors with a reader, in the order they are asked."""
    return tuple(name for name, _ in _imported())


def all_readers() -> tuple[ModuleType, ...]:
    """Every reader module (:class:`aotwheel.backends.protocol.Reader`), imported, in the order they are asked."""
    return tuple(module for _, module in _imported())
