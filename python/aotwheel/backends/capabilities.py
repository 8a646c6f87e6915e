"""What a backend declares beyond the :class:`aotwheel.backends.protocol.Backend` protocol: its
:class:`Capabilities`, and the small records they hold (probes, ``aotwheel resolve``'s tools and
formats, the grammar's examples, the OpenCL images its driver loads).

Apart from :mod:`aotwheel.backends.protocol` (types only, never imported at run time) because every
backend object is built from these at import: ``aotwheel resolve`` and ``check`` import them, and no
``typing``. The records are named tuples made by :func:`collections.namedtuple`, whose class
bodies restate the fields with their types for mypy (tests/test_backend_protocol.py holds both
lists equal), as :class:`aotwheel.variables.Variable` is.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

TYPE_CHECKING = False  # not typing's (above)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from aotwheel.backends.protocol import OpenClSupport, Toolchain
    from aotwheel.report import FileReport
    from aotwheel.results import ProbedDevice


class ProbeSpec(namedtuple("ProbeSpec", ("name", "module", "heavy", "native"), defaults=("", False))):
    """One device probe of a backend, as :mod:`aotwheel.probe` runs it."""

    __slots__ = ()
    name: str  # "levelzero", "cuda": the ``backend`` of the devices it reports
    module: str  # defines ``probe() -> aotwheel.probe.ProbeResult``
    heavy: str  # (default "") a module that costs seconds to import: probe only once the application imported it
    native: bool  # (default False) the vendor's own driver: its GPUs replace other runtimes' views of them


class ToolOption(namedtuple("ToolOption", ("word", "help"))):
    """A tool of a backend that ``aotwheel resolve --toolchain WORD`` checks; the CLI also gives it
    a ``--WORD PATH`` option."""

    __slots__ = ()
    word: str  # "ocloc": the --toolchain choice and the option's name
    help: str  # the --WORD PATH option's help (where the tool is found otherwise)


class FormatOption(namedtuple("FormatOption", ("word", "phrase", "argument"), defaults=(False,))):
    """One ``aotwheel resolve --format`` value: a key of a backend's :meth:`DevlistPart.formats`."""

    __slots__ = ()
    word: str  # "ocloc", "names": the --format choice
    phrase: str  # what --format's help calls it ("ocloc -device list")
    argument: bool  # (default False) a tool's argument: listed before the plain lists, as the core's -fsycl-targets is


class DevlistExamples(namedtuple("DevlistExamples", ("device", "devices", "family", "families"))):
    """Names the resolver's messages offer as examples (the default backend's)."""

    __slots__ = ()
    device: str  # "pvc"
    devices: str  # "pvc,acm-g10"
    family: str  # "dg2"
    families: str  # "dg2 or xe-hpc"


class OpenClImages(namedtuple("OpenClImages", ("native", "ir", "native_magic", "native_name"))):
    """Which of an aotwheel-built extension's embedded images (``images()``: triple, source, bytes)
    an OpenCL backend's driver loads, and how its fat binary looks: what the OpenCL loader and the
    selftest ask instead of naming a vendor's formats."""

    __slots__ = ()
    native: str  # the triple of the fat binary of native images, which the driver picks a member of
    ir: str  # the triple of the SPIR-V module the driver JIT-compiles
    native_magic: bytes  # how a fat binary starts (a file or bytes handed to the loader)
    native_name: str  # the fat binary in messages ("an ocloc fat binary")


@dataclass(frozen=True)
class Capabilities:
    """What a backend has besides :class:`Backend`'s members, each declared here (``None`` or
    empty: it has none). The core reads these fields; it never asks an object whether it has an
    attribute."""

    # Device probes (:mod:`aotwheel.probe`), asked in this order after the previous backends'.
    probes: tuple[ProbeSpec, ...] = ()
    # Make the probes see what the user's runtime sees (Intel: the CPU OpenCL runtime installed
    # from PyPI); called by the CLI before it probes.
    prepare_probes: Callable[[], None] | None = None
    # ``native`` in USE_AOT_DEVLIST: devlist words for this vendor's GPUs on this machine
    # (``devices``: the probe runner's).
    native_tokens: Callable[[Sequence[ProbedDevice]], list[str]] | None = None
    # The identity under which the run-time check warns once about one of its devices (NVIDIA:
    # probe, index and target); without it, the device's own ``key``.
    device_key: Callable[[Any], str] | None = None
    toolchain: Toolchain | None = None  # installed tools its grammar consults and resolve/build check
    resolve_formats: tuple[FormatOption, ...] = ()  # ``aotwheel resolve --format`` values its part's formats() prints
    # ``USE_AOT_DEVLIST`` tokens that rebuild what a file carries for this vendor: another vendor's
    # remedy keeps them (:func:`aotwheel.backends.rebuild_devlist`).
    rebuild_tokens: Callable[[FileReport], list[str]] | None = None
    # Run a binary's kernels on this vendor's devices that OpenCL does not reach (``DeviceResult`` each).
    selftest: Callable[[str], list[Any]] | None = None
    opencl: OpenClSupport | None = None  # its driver loads OpenCL programs (the loader and selftest ask it)
    # Its own ``aotwheel`` subcommands and its SPIR-V compiler are module names in its settings
    # (``COMMANDS``, ``SPIRV_COMPILER``: :func:`aotwheel.backends.commands`), where ``--help`` reads
    # them without importing a backend object.
    # The module whose GPU driver simulates devices without hardware: ``named_devices(text)`` and
    # ``selftest(modules, devices, check)`` for ``aotwheel selftest --simulate``.
    simulator: str | None = None
    variants: str | None = None  # its wheel-variant vocabulary module (:mod:`aotwheel.variants` says what it holds)
