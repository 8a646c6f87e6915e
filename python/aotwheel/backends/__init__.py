"""Vendor backends behind one small interface, and the registry the core asks.

Each vendor is one package (``aotwheel.backends.intel``, ``aotwheel.backends.nvidia``) whose
``backend`` module defines ``BACKEND``, an object that satisfies
:class:`aotwheel.backends.protocol.Backend`. The core (resolver,
inspector, run-time check, CLI) never names a vendor: it asks the registry which backend owns a
devlist token or a device and calls it. Adding a vendor means adding one package and one line to
:data:`_BUILTIN` (or calling :func:`register`), as cibuildwheel adds a platform.

Backends are imported on first use, so ``import aotwheel.backends`` costs nothing, and this module
uses the standard library only (build steps run it inside pip's isolated environment).
"""

from __future__ import annotations

import sys

from aotwheel.records import record

# Not typing.TYPE_CHECKING: a build step imports this package (its parent) and must not pay for typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

    from aotwheel.backends.protocol import Backend, OpenClSupport, ProbeSpec
    from aotwheel.report import FileReport
    from aotwheel.results import Device

# name -> module defining BACKEND; order is the order backends are asked.
_BUILTIN = {"intel": "aotwheel.backends.intel.backend", "nvidia": "aotwheel.backends.nvidia.backend", "amd": "aotwheel.backends.amd.backend"}


def register(name: str, module: str) -> None:
    """Add (or replace) a backend: ``module`` must define ``BACKEND``; imported on first use."""
    _BUILTIN[name] = module
    _LOADED.pop(name, None)


def load_module(name: str) -> ModuleType:
    """The module called ``name``, imported if need be: ``importlib.import_module`` without
    importing ``importlib`` (and ``warnings`` with it), which ``aotwheel inspect``'s start-up
    cannot afford (aotwheel.records says why)."""
    __import__(name)
    return sys.modules[name]


# name -> its backend object, once imported (a dict, not functools.cache: the inspector imports
# this package, and functools with collections costs 2 ms of `aotwheel inspect`'s start-up).
_LOADED: dict[str, Backend] = {}


def get(name: str) -> Backend:
    """The backend called ``name`` (``KeyError`` for an unknown one), imported on first use."""
    backend = _LOADED.get(name)
    if backend is None:
        backend = _LOADED[name] = load_module(_BUILTIN[name]).BACKEND
    return backend


def build_module(name: str) -> str | None:
    """The module holding backend ``name``'s build steps (its package's ``buildsteps``, exposing
    ``main(argv)``), not imported: ``python -m aotwheel.buildsteps <name> <step> ...`` runs it per
    ninja edge, where importing the backend object (typing, the data model) would cost every edge.
    ``None`` for a name no backend has."""
    module = _BUILTIN.get(name)
    return module.rpartition(".")[0] + ".buildsteps" if module else None


def reader_module(name: str) -> str | None:
    """The module holding backend ``name``'s binary reader (its package's ``reader``, a
    :class:`~aotwheel.backends.protocol.Reader`), not imported: :mod:`aotwheel.backends.readers`
    imports it for the inspector, which never needs the backend object. ``None`` for a name no backend has."""
    module = _BUILTIN.get(name)
    return module.rpartition(".")[0] + ".reader" if module else None


def reader(name: str) -> ModuleType | None:
    """Backend ``name``'s binary reader module (:func:`reader_module`), imported; ``None`` for a name
    no backend has. What the inspector imported already costs nothing more."""
    module = reader_module(name)
    return load_module(module) if module else None


def settings(name: str) -> Any:
    """Backend ``name``'s settings module (its package's ``variables``), imported: standard library
    only, so asking costs no backend object (a build step, ``--help``). It defines ``VARIABLES``
    (the :class:`aotwheel.variables.Variable` s its tools and probes read), ``DEVICE_KINDS`` and
    ``DEVICE_EXAMPLES`` (its ``AOTWHEEL_DEVICE`` / ``--device`` tokens, for help), and, for the
    default backend, ``DEFAULT_DEVLIST`` and ``DEVICE_MESSAGE_EXAMPLES`` (the core's messages)."""
    return load_module(_BUILTIN[name].rpartition(".")[0] + ".variables")


def default_settings() -> Any:
    """The default backend's settings module (:func:`settings`): its ``DEFAULT_DEVLIST`` is
    ``USE_AOT_DEVLIST``'s default, its ``DEVICE_MESSAGE_EXAMPLES`` the core's messages' examples."""
    return settings(next(iter(_BUILTIN)))


def names() -> tuple[str, ...]:
    """Registered backend names, in the order they are asked."""
    return tuple(_BUILTIN)


def probe_specs() -> list[ProbeSpec]:
    """Every backend's device probes, in registry order."""
    return [spec for b in all_backends() for spec in b.probes]


def default() -> Backend:
    """The backend that judges what no backend claims: devices seen only through OpenCL, and
    tokens in no grammar (its catalog suggests the nearest names)."""
    return get(next(iter(_BUILTIN)))


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
    return next((b for b in all_backends() if b.owns_device(device)), default())


def for_opencl() -> OpenClSupport:
    """The backend that names OpenCL devices and decides which program image their driver loads
    (its optional ``opencl_device`` / ``opencl_verdict``): the first that has them."""
    for b in all_backends():
        if hasattr(b, "opencl_verdict"):
            found: OpenClSupport = b  # type: ignore[assignment]
            return found
    raise LookupError("no registered backend loads OpenCL programs")


def with_ip_versions() -> frozenset[str]:
    """Backends whose native targets have IP versions (their reader's ``READS.ip_versions``):
    ``aotwheel inspect``'s IP column says "?" for one it could not read, "-" for the others."""
    from aotwheel.backends import readers

    return frozenset(name for name, module in zip(readers.names(), readers.all_readers()) if module.READS.ip_versions)


def spirv_compiler() -> str:
    """The module of the backend that compiles SPIR-V ahead of time (its optional ``spirv_compiler``:
    ``compile_spirv_report(spirv, devlist, *, resolve, ...)`` and ``aotwheel compile``'s options,
    build and report, :mod:`aotwheel.cli.compile`): the first that has one."""
    for b in all_backends():
        module: str | None = getattr(b, "spirv_compiler", None)
        if module:
            return module
    raise LookupError("no registered backend compiles SPIR-V")


def simulator() -> Any:
    """The module of the backend whose GPU driver can simulate devices without hardware (its
    optional ``simulator``: ``selftest(modules, devices)`` for ``aotwheel selftest --simulate``),
    imported; the first that has one."""
    for b in all_backends():
        module: str | None = getattr(b, "simulator", None)
        if module:
            return load_module(module)
    raise LookupError("no registered backend simulates devices")


def variant_vocabularies() -> list[Any]:
    """Each backend's wheel-variant vocabulary (the module its optional ``variants`` attribute names;
    :mod:`aotwheel.variants` says what it holds), in registry order."""
    return [load_module(m) for b in all_backends() if (m := getattr(b, "variants", None))]


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


@record
class ReadSpec:
    """What of a binary a backend reads (a :class:`Reader` module's ``READS``).

    :mod:`aotwheel.inspector` walks the vendor-free containers (wheels, host ELFs and their
    ``.tgtimg`` tables and ``.llvm.offloading`` sections, static libraries, zstd frames,
    OffloadBinaries) and hands the payloads claimed here to the reader's functions."""

    magic: tuple[bytes, ...]  # whole files starting with one of these (kind "unknown" to sniff): read_file
    file_kinds: tuple[str, ...]  # whole files of these sniffed kinds: read_file, which may decline
    sections: tuple[str, ...]  # host ELF sections: read_host runs when one of them is present
    image_kinds: tuple[str, ...]  # embedded images and archive members of these kinds: read_image
    # (an offload triple's first component, the IR kind its images are): the inspector notes such
    # images as that IR without decompressing them (SYCL: spir64 -> SPIR-V)
    ir_triples: tuple[tuple[str, str], ...]
    suffixes: tuple[str, ...]  # file names (besides .so, .a, .o, .spv, .bin, .ar) a wheel or directory walk reads
    # Readers are asked in ascending ``order``, ties in the backends' registry order: a host binary's
    # images of several vendors follow that order in its report (HIP bundles before CUDA fat binaries).
    order: int
    # Its ELF-based formats, (e_type, e_machine, kind) with None for any (formats.sniff.ElfKinds
    # says which rule wins): the inspector names a sniffed ELF (a whole file, an image, a zstd
    # frame's content) by them, and hands it to read_file / read_image by that kind.
    elf_kinds: tuple[tuple[int | None, int | None, str], ...]
    # LLVM OffloadBinary image kind numbers of its formats -> their names (OffloadEntry.image_kind).
    offload_image_kinds: tuple[tuple[int, str], ...]
    # What its whole files are called in the inspector's "not an ELF, wheel, ar, ..." error line.
    formats: tuple[str, ...]
    # Its native targets have IP versions (Target.ip): ``aotwheel inspect``'s IP column shows "?"
    # for one it could not read, and "-" (does not apply) for the other vendors' targets.
    ip_versions: bool
    # Magic numbers of standalone images a library may keep in its data sections and load itself
    # (cuModuleLoadData, zeModuleCreate, hipModuleLoadData): the inspector finds each in a host
    # ELF's data sections, outside the images a runtime registers, and hands it to read_carried.
    carried: tuple[bytes, ...]
    # Its reader defines ``serves(file) -> list[str]``: ``aotwheel inspect``'s note on images that
    # serve devices besides their own (Intel's shared members, such as 64.bmg).
    serves: bool

    def __init__(self, magic: tuple[bytes, ...] = (), file_kinds: tuple[str, ...] = (), sections: tuple[str, ...] = (),
                 image_kinds: tuple[str, ...] = (), ir_triples: tuple[tuple[str, str], ...] = (), suffixes: tuple[str, ...] = (),
                 order: int = 0, elf_kinds: tuple[tuple[int | None, int | None, str], ...] = (),
                 offload_image_kinds: tuple[tuple[int, str], ...] = (), formats: tuple[str, ...] = (), ip_versions: bool = False,
                 carried: tuple[bytes, ...] = (), serves: bool = False) -> None:
        self.magic = magic
        self.file_kinds = file_kinds
        self.sections = sections
        self.image_kinds = image_kinds
        self.ir_triples = ir_triples
        self.suffixes = suffixes
        self.order = order
        self.elf_kinds = elf_kinds
        self.offload_image_kinds = offload_image_kinds
        self.formats = formats
        self.ip_versions = ip_versions
        self.carried = carried
        self.serves = serves
