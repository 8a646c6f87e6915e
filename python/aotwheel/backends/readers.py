"""The registry of the backends' binary readers: which module reads each vendor's formats.

Apart from :mod:`aotwheel.backends` (the backend objects) because the inspector needs only the
readers, while backend objects reach up to code that uses the inspector (self-tests, the JIT
cache): the inspector imports this module, never the backend objects. A vendor that reads
binaries adds one line here beside its line in ``aotwheel.backends._BUILTIN``, under the same name.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the inspector imports this module (aotwheel.records says why)
if TYPE_CHECKING:
    from types import ModuleType

# name -> module defining READS (a ReadSpec) and the Reader functions. The order they are asked
# in is the order of a host binary's images in its report: HIP bundles before CUDA fat binaries.
_BUILTIN = {"intel": "aotwheel.backends.intel.reader", "amd": "aotwheel.backends.amd.reader",
            "nvidia": "aotwheel.backends.nvidia.reader"}


def register(name: str, module: str) -> None:
    """Add (or replace) a backend's reader: ``module`` defines ``READS`` and the Reader functions."""
    _BUILTIN[name] = module


def names() -> tuple[str, ...]:
    """Backends with a reader, in the order they are asked."""
    return tuple(_BUILTIN)


def all_readers() -> tuple[ModuleType, ...]:
    """Every registered reader module (:class:`aotwheel.backends.protocol.Reader`), imported."""
    from aotwheel.backends import load_module

    return tuple(load_module(m) for m in _BUILTIN.values())
