"""Vendor backends behind one small interface, and the registry the core asks.

Each vendor is one package (``aotwheel.backends.intel``, ``aotwheel.backends.nvidia``) whose
``__init__`` defines ``BACKEND``, an object that satisfies :class:`Backend`. The core (resolver,
inspector, run-time check, CLI) never names a vendor: it asks the registry which backend owns a
devlist token or a device and calls it. Adding a vendor means adding one package and one line to
:data:`_BUILTIN` (or calling :func:`register`), as cibuildwheel adds a platform.

Backends are imported on first use, so ``import aotwheel.backends`` costs nothing, and this module
uses the standard library only (build steps run it inside pip's isolated environment).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aotwheel.model import Device, Verdict
    from aotwheel.report import FileReport

# name -> module defining BACKEND; order is the order backends are asked.
_BUILTIN = {"intel": "aotwheel.backends.intel", "nvidia": "aotwheel.backends.nvidia", "amd": "aotwheel.backends.amd"}


class Backend(Protocol):
    """What the core needs from one vendor."""

    name: str  # "intel", "nvidia": the ``vendor`` of its targets, devices and verdicts
    title: str  # "Intel", "NVIDIA": for messages

    def owns_token(self, token: str) -> bool:
        """Whether a (lower-case) ``USE_AOT_DEVLIST`` / ``AOTWHEEL_DEVICE`` token is in this
        vendor's grammar, valid or not (so that a typo gets this vendor's suggestion)."""
        ...

    def owns_device(self, device: Device) -> bool:
        """Whether this vendor's driver loads code on ``device``."""
        ...

    def code_in(self, file: FileReport) -> tuple[list[str], list[str]]:
        """This vendor's native target names and JIT-able IR forms in one inspected binary."""
        ...

    def decide(self, file: FileReport, device: Device, *, binary: str, compatibility: bool = True) -> Verdict:
        """The driver's verdict for ``file`` on ``device`` (a device this backend owns)."""
        ...

    def jit_message(self, verdict: Verdict, kernels: int | None = None) -> str:
        """One line for a ``jit`` verdict: device, what is embedded, how to ship native code."""
        ...

    def remedy(self, verdict: Verdict) -> str:
        """What to rebuild with so that the verdict's device runs native code (``""`` if nothing)."""
        ...

    def selftest(self, binary: str) -> list[Any]:
        """Run ``binary``'s kernels on this vendor's devices that OpenCL does not reach
        (:class:`aotwheel.selftest.DeviceResult` each); ``[]`` when OpenCL covers them all."""
        ...


def register(name: str, module: str) -> None:
    """Add (or replace) a backend: ``module`` must define ``BACKEND``; imported on first use."""
    _BUILTIN[name] = module
    get.cache_clear()


@functools.lru_cache(maxsize=None)
def get(name: str) -> Backend:
    """The backend called ``name`` (``KeyError`` for an unknown one), imported on first use."""
    backend: Backend = importlib.import_module(_BUILTIN[name]).BACKEND
    return backend


def names() -> tuple[str, ...]:
    """Registered backend names, in the order they are asked."""
    return tuple(_BUILTIN)


def all_backends() -> list[Backend]:
    """Every registered backend."""
    return [get(n) for n in _BUILTIN]


def for_token(token: str) -> Backend | None:
    """The backend whose grammar owns ``token``, or ``None``."""
    low = token.lower()
    return next((b for b in all_backends() if b.owns_token(low)), None)


def for_device(device: Device) -> Backend:
    """The backend whose driver runs code on ``device``. Devices no vendor claims (a CPU, another
    vendor's GPU seen through OpenCL) go to the first backend: its SPIR-V rules cover OpenCL."""
    return next((b for b in all_backends() if b.owns_device(device)), get(next(iter(_BUILTIN))))


def vendors_in(file: FileReport) -> Sequence[str]:
    """Names of the backends that find code of theirs in ``file``."""
    return [b.name for b in all_backends() if any(b.code_in(file))]


def rebuild_devlist(file: FileReport, vendor: str, own: Sequence[str]) -> str:
    """The ``USE_AOT_DEVLIST`` a remedy names: ``own`` (``vendor``'s tokens, the device added) and,
    for every other backend, the tokens that rebuild what ``file`` carries for it (its optional
    ``devlist_tokens(file)``), in registry order, so advice never drops another vendor's targets."""
    tokens: list[str] = []
    for b in all_backends():
        if b.name == vendor:
            tokens += own
        else:
            extra = getattr(b, "devlist_tokens", None)
            tokens += extra(file) if extra is not None else []
    return ",".join(dict.fromkeys(t for t in tokens if t))
