"""Vendor backends behind one small interface, and the one registry the core asks.

Each vendor is one package (``aotwheel.backends.intel``, ``aotwheel.backends.nvidia``, ...) with
one entry in :data:`_VENDORS` naming its modules: ``backend`` defines ``BACKEND``, an object that
satisfies :class:`aotwheel.backends.protocol.Backend` (its optional capabilities declared in its
``capabilities``); ``reader`` is its binary reader (:class:`aotwheel.backends.protocol.Reader`);
``build`` its build steps (``main(argv)`` and ``manifest_part(...)``); ``settings`` its declared
variables, CLI commands and SPIR-V compiler (standard library only). The core (resolver, inspector, run-time check, CLI) never
names a vendor: it asks this registry which backend owns a devlist token or a device and calls it.
Adding a vendor means adding one package and one entry (or calling :func:`register`), as
cibuildwheel adds a platform.

Backends are imported on first use, so ``import aotwheel.backends`` costs nothing, and this module
uses the standard library only (build steps run it inside pip's isolated environment).
"""

from __future__ import annotations

import sys

# Not typing.TYPE_CHECKING: a build step imports this package (its parent) and must not pay for typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any, TypedDict

    from aotwheel.backends.capabilities import ProbeSpec
    from aotwheel.backends.protocol import Backend, OpenClSupport, Toolchain
    from aotwheel.report import FileReport
    from aotwheel.results import Device

    class Vendor(TypedDict):
        """One vendor's modules, by name (none imported until asked)."""

        backend: str  # defines BACKEND (protocol.Backend)
        settings: str  # VARIABLES, DEVICE_KINDS, DEVICE_EXAMPLES (the default's: DEFAULT_DEVLIST, DEVICE_MESSAGE_EXAMPLES)
        reader: str | None  # its binary reader (protocol.Reader); None: it reads no binary
        build: str | None  # its build steps: main(argv), manifest_part(...); None: it builds nothing


# The one registry: name -> its modules; order is the order backends and readers are asked.
_VENDORS: dict[str, Vendor] = {
    "intel": {"backend": "aotwheel.backends.intel.backend", "settings": "aotwheel.backends.intel.variables",
              "reader": "aotwheel.backends.intel.reader", "build": "aotwheel.backends.intel.buildsteps"},
    "nvidia": {"backend": "aotwheel.backends.nvidia.backend", "settings": "aotwheel.backends.nvidia.variables",
               "reader": "aotwheel.backends.nvidia.reader", "build": "aotwheel.backends.nvidia.buildsteps"},
    "amd": {"backend": "aotwheel.backends.amd.backend", "settings": "aotwheel.backends.amd.variables",
            "reader": "aotwheel.backends.amd.reader", "build": "aotwheel.backends.amd.buildsteps"},
}


def register(name: str, *, backend: str, settings: str, reader: str | None = None, build: str | None = None) -> None:
    """Add (or replace) a vendor: its modules by name (:data:`_VENDORS` says what each defines),
    imported on first use."""
    _VENDORS[name] = {"backend": backend, "settings": settings, "reader": reader, "build": build}
    _LOADED.pop(name, None)


def load_module(name: str) -> ModuleType:
    """The module called ``name``, imported if need be: ``importlib.import_module`` without
    importing ``importlib`` (and ``warnings`` with it), which ``aotwheel inspect``'s start-up
    cannot afford."""
    __import__(name)
    return sys.modules[name]


# name -> its backend object, once imported (a dict, not functools.cache: the inspector imports
# this package, and functools with collections costs 2 ms of `aotwheel inspect`'s start-up).
_LOADED: dict[str, Backend] = {}


def get(name: str) -> Backend:
    """The backend called ``name`` (``KeyError`` for an unknown one), imported on first use."""
    backend = _LOADED.get(name)
    if backend is None:
        backend = _LOADED[name] = load_module(_VENDORS[name]["backend"]).BACKEND
    return backend


def build_module(name: str) -> str | None:
    """The module holding vendor ``name``'s build steps (``main(argv)``, ``manifest_part(...)``),
    not imported: ``python -m aotwheel.buildsteps <name> <step> ...`` runs it per ninja edge, where
    importing the backend object (typing, the data model) would cost every edge. ``None`` for a
    vendor that builds nothing, or a name no vendor has."""
    vendor = _VENDORS.get(name)
    return vendor["build"] if vendor else None


def reader_module(name: str) -> str | None:
    """The module holding vendor ``name``'s binary reader, not imported: :mod:`aotwheel.backends.readers`
    imports it for the inspector, which never needs the backend object. ``None`` for a vendor
    that reads no binary, or a name no vendor has."""
    vendor = _VENDORS.get(name)
    return vendor["reader"] if vendor else None


def reader(name: str) -> ModuleType | None:
    """Vendor ``name``'s binary reader module (:func:`reader_module`), imported; ``None`` where it
    has none. What the inspector imported already costs nothing more."""
    module = reader_module(name)
    return load_module(module) if module else None


def settings(name: str) -> Any:
    """Vendor ``name``'s settings module, imported: standard library only, so asking costs no
    backend object (a build step, ``--help``). It defines ``VARIABLES`` (the
    :class:`aotwheel.variables.Variable` s its tools and probes read), ``DEVICE_KINDS`` and
    ``DEVICE_EXAMPLES`` (its ``AOTWHEEL_DEVICE`` / ``--device`` tokens, for help), ``COMMANDS`` and
    ``SPIRV_COMPILER`` (:func:`commands`, :func:`spirv_compiler`), and, for the default backend,
    ``DEFAULT_DEVLIST`` and ``DEVICE_MESSAGE_EXAMPLES`` (the core's messages)."""
    return load_module(_VENDORS[name]["settings"])


def default_settings() -> Any:
    """The default backend's settings module (:func:`settings`): its ``DEFAULT_DEVLIST`` is
    ``USE_AOT_DEVLIST``'s default, its ``DEVICE_MESSAGE_EXAMPLES`` the core's messages' examples."""
    return settings(next(iter(_VENDORS)))


def names() -> tuple[str, ...]:
    """Registered backend names, in the order they are asked."""
    return tuple(_VENDORS)


def probe_specs() -> list[ProbeSpec]:
    """Every backend's device probes (``capabilities.probes``), in registry order."""
    return [spec for b in all_backends() for spec in b.capabilities.probes]


def default() -> Backend:
    """The backend that judges what no backend claims: devices seen only through OpenCL, and
    tokens in no grammar (its catalog suggests the nearest names)."""
    return get(next(iter(_VENDORS)))


def all_backends() -> list[Backend]:
    """Every registered backend."""
    return [get(n) for n in _VENDORS]


def for_token(token: str) -> Backend | None:
    """The backend whose grammar owns ``token``, or ``None``."""
    low = token.lower()
    return next((b for b in all_backends() if b.owns_token(low)), None)


def for_device(device: Device) -> Backend:
    """The backend whose driver runs code on ``device``. Devices no vendor claims (a CPU, another
    vendor's GPU seen through OpenCL) go to the first backend: its SPIR-V rules cover OpenCL."""
    return next((b for b in all_backends() if b.owns_device(device)), default())


def for_opencl() -> OpenClSupport:
    """The backend support that names OpenCL devices and decides which program image their
    driver loads (``capabilities.opencl``): the first backend that declares it."""
    found = next((b.capabilities.opencl for b in all_backends() if b.capabilities.opencl is not None), None)
    if found is None:
        raise LookupError("no registered backend loads OpenCL programs")
    return found


def toolchains() -> list[tuple[str, Toolchain]]:
    """``(name, toolchain)`` of every backend that declares installed tools (``capabilities.toolchain``),
    in registry order."""
    return [(b.name, t) for b in all_backends() if (t := b.capabilities.toolchain) is not None]


def with_ip_versions() -> frozenset[str]:
    """Backends whose native targets have IP versions (their reader's ``READS.ip_versions``):
    ``aotwheel inspect``'s IP column says "?" for one it could not read, "-" for the others."""
    from aotwheel.backends import readers

    return frozenset(name for name, module in zip(readers.names(), readers.all_readers()) if module.READS.ip_versions)


def commands() -> dict[str, str]:
    """The backends' own ``aotwheel`` subcommands: name -> the module with ``register(subparsers)``
    (their settings' ``COMMANDS``), in registry order; no backend object is imported (``aotwheel
    compile --help``)."""
    return {command: module for name in _VENDORS for command, module in settings(name).COMMANDS}


def spirv_compiler() -> str:
    """The module of the backend that compiles SPIR-V ahead of time (its settings' ``SPIRV_COMPILER``:
    ``compile_spirv_report(spirv, devlist, *, resolve, ...)`` and ``aotwheel compile``'s options,
    build and report, :mod:`aotwheel.cli.compile`): the first that declares one."""
    found = next((m for name in _VENDORS if (m := settings(name).SPIRV_COMPILER)), None)
    if found is None:
        raise LookupError("no registered backend compiles SPIR-V")
    return found


def simulator() -> Any:
    """The module of the backend whose GPU driver can simulate devices without hardware
    (``capabilities.simulator``: ``selftest(modules, devices, check)`` for ``aotwheel selftest
    --simulate``), imported; the first that declares one."""
    found = next((m for b in all_backends() if (m := b.capabilities.simulator)), None)
    if found is None:
        raise LookupError("no registered backend simulates devices")
    return load_module(found)


def variant_vocabularies() -> list[Any]:
    """Each backend's wheel-variant vocabulary (the module its ``capabilities.variants`` names;
    :mod:`aotwheel.variants` says what it holds), in registry order."""
    return [load_module(m) for b in all_backends() if (m := b.capabilities.variants)]


def vendors_in(file: FileReport) -> Sequence[str]:
    """Names of the backends that find code of theirs in ``file``."""
    return [b.name for b in all_backends() if any(b.code_in(file))]


def rebuild_devlist(file: FileReport, vendor: str, own: Sequence[str]) -> str:
    """The ``USE_AOT_DEVLIST`` a remedy names: ``own`` (``vendor``'s tokens, the device added) and,
    for every other backend, the tokens that rebuild what ``file`` carries for it (its
    ``capabilities.rebuild_tokens``), in registry order, so advice never drops another vendor's targets."""
    tokens: list[str] = []
    for b in all_backends():
        if b.name == vendor:
            tokens += own
        elif (extra := b.capabilities.rebuild_tokens) is not None:
            tokens += extra(file)
    return ",".join(dict.fromkeys(t for t in tokens if t))
