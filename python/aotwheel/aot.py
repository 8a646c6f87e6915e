"""The run-time API of a package's generated ``<pkg>/_aot.py``, kept compatible across releases.

A wheel built with aotwheel ships ``_aot.py`` (rendered by :mod:`aotwheel.hook`), and that file
runs with whichever aotwheel is installed where the wheel is used, years later perhaps. So it
imports this module and no other part of aotwheel, and this module only grows: a function or
keyword may be added (and :data:`API_VERSION` raised, so that a newer ``_aot.py`` can tell an
older aotwheel), none is removed or changes meaning. Each function takes the path of the
extension that embeds the device code and delegates to the current internals.

Failure contract (what ``_aot.py`` does with it): aotwheel not installed -> empty answers; this
module failing to import (an ``ImportError`` inside aotwheel, or an aotwheel older than the
``API_VERSION`` the file needs) -> one ``RuntimeWarning`` naming the cause and the fix, then
empty answers, because the check is advisory and the package's kernels load without it;
anything a call raises (``JITError``, ``UnsupportedDeviceError``, a bad ``devices`` value)
reaches the caller.

Kept for wheels already published: ``_aot.py`` files written before this module existed import
``aotwheel.inspector.inspect`` (and read ``Report.files``,
``FileReport.native_targets``, ``FileReport.cuda``), ``aotwheel.backends.intel.rules.target_names``
and ``aotwheel.runtime.check(path, devices)`` / ``aotwheel.runtime.ensure(path)``; those names stay.
``tests/test_published_wheels.py`` loads a wheel built by such an aotwheel with this one.
"""

from __future__ import annotations

from typing import Any

from aotwheel import backends, runtime
from aotwheel.inspector import inspect
from aotwheel.results import Verdict

#: Raised when a function or keyword is added; ``_aot.py`` files say which version they need.
API_VERSION = 1

__all__ = ["API_VERSION", "check", "ensure", "targets"]


def targets(path: str) -> tuple[str, ...]:
    """Native targets embedded in the binary at ``path``, every vendor's, each named once: per file,
    each backend's names in registry order (Intel catalog names or IP versions, NVIDIA cubins
    ``sm_XY``, AMD ``gfx``). IR that a driver JIT-compiles (SPIR-V, PTX) is not a target."""
    names: dict[str, None] = {}
    for f in inspect(path).files:
        for backend in backends.all_backends():
            for name in backend.code_in(f)[0]:
                names.setdefault(name)
    return tuple(names)


def check(path: str, devices: Any = None) -> list[Verdict]:
    """One verdict per (device, file with device code) of ``path``: :func:`aotwheel.check`, with the
    ``AOTWHEEL_JIT`` policy. ``devices``: ``None`` (probe, or ``AOTWHEEL_DEVICE``), a string in
    ``AOTWHEEL_DEVICE`` syntax (``"pvc,cpu"``, ``"sm_90"``) or probed devices."""
    return runtime.check(path, devices)


def ensure(path: str) -> list[Verdict]:
    """:func:`check` on this machine's devices, then ``UnsupportedDeviceError`` if none of them
    can run the code: :func:`aotwheel.ensure`."""
    return runtime.ensure(path)
