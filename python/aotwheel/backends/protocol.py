"""What a vendor backend provides: the narrow :class:`Backend` protocol, the
:class:`Capabilities` it declares beyond it (each a small protocol or a callable: probes,
toolchain, OpenCL, ...), its ``USE_AOT_DEVLIST`` grammar; its binary :class:`Reader` (a module
with a :class:`ReadSpec`) and the :class:`ImageWalk` that the inspector hands it.

Apart from the registry (:mod:`aotwheel.backends`) so that importing a vendor's build step, which
imports the ``aotwheel.backends`` package first, never imports ``typing``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    # ReadSpec, a module of its own (the inspector imports no typing), is named here for Reader.READS
    # only: importing it would make aotwheel resolve, which reads no binary, create its record.
    from aotwheel.backends.readspec import ReadSpec
    from aotwheel.formats.elf import ElfView, HostOffload
    from aotwheel.formats.region import Region
    from aotwheel.model import Image, ImageKind
    from aotwheel.report import FileReport
    from aotwheel.results import Device, ProbedDevice, Verdict


class ProbeSpec(NamedTuple):
    """One device probe of a backend, as :mod:`aotwheel.probe` runs it."""

    name: str  # "levelzero", "cuda": the ``backend`` of the devices it reports
    module: str  # defines ``probe() -> aotwheel.probe.ProbeResult``
    heavy: str = ""  # a module that costs seconds to import: probe only once the application imported it
    native: bool = False  # the vendor's own driver: its GPUs replace other runtimes' views of them


class ToolOption(NamedTuple):
    """A tool of a backend that ``aotwheel resolve --toolchain WORD`` checks; the CLI also gives it
    a ``--WORD PATH`` option."""

    word: str  # "ocloc": the --toolchain choice and the option's name
    help: str  # the --WORD PATH option's help (where the tool is found otherwise)


class FormatOption(NamedTuple):
    """One ``aotwheel resolve --format`` value: a key of a backend's :meth:`DevlistPart.formats`."""

    word: str  # "ocloc", "names": the --format choice
    phrase: str  # what --format's help calls it ("ocloc -device list")
    argument: bool = False  # a tool's argument: listed before the plain lists, as the core's -fsycl-targets is


class DevlistExamples(NamedTuple):
    """Names the resolver's messages offer as examples (the default backend's)."""

    device: str  # "pvc"
    devices: str  # "pvc,acm-g10"
    family: str  # "dg2"
    families: str  # "dg2 or xe-hpc"


class DevlistPart(Protocol):
    """One backend's share of a resolved ``USE_AOT_DEVLIST`` (:class:`aotwheel.devlist.DevList`
    holds one per backend). Its other attributes are the vendor's own views of the list (Intel:
    ``targets``, ``names``, ``spirv``, ``ocloc_device``; NVIDIA: ``cuda``): the vendor's code asks
    for its own part by type (:meth:`aotwheel.devlist.DevList.part_of`)."""

    @property
    def vendor(self) -> str:
        """The backend's name."""
        ...

    @property
    def listed(self) -> tuple[str, ...]:
        """Canonical names of the targets listed for this vendor (for messages)."""
        ...

    @property
    def builds(self) -> bool:
        """Whether this vendor's build steps run (native code or kept IR)."""
        ...

    @property
    def native(self) -> bool:
        """Whether at least one native image is built."""
        ...

    @property
    def sycl_targets(self) -> tuple[str, ...]:
        """This vendor's ``-fsycl-targets=`` entries."""
        ...

    @property
    def sycl_fallback(self) -> str:
        """The IR target ``-fsycl-targets=`` falls back to when no vendor lists one (the default backend's is read)."""
        ...

    @property
    def jit_phrase(self) -> str:
        """What JIT fallback keeps for this vendor ("SPIR-V for Intel devices"), ``""`` if nothing."""
        ...

    @property
    def jit_hint(self) -> str:
        """How to keep IR for this vendor when nothing is kept (``""`` if nothing to say)."""
        ...

    def fields(self) -> list[tuple[str, str, object]]:
        """``(after, key, value)``: this vendor's keys of ``DevList.to_dict()``, each placed after the core key ``after``."""
        ...

    def describe(self, section: str) -> list[str]:
        """Lines of ``aotwheel resolve``'s account: ``"targets"`` (first), ``"images"`` (after
        the expansion notes), ``"tools"`` (after the JIT fallback line)."""
        ...

    def note(self, token: str, kind: str, names: Sequence[str]) -> str | None:
        """One line explaining an expansion of this vendor's grammar (a family, a range), or ``None``."""
        ...

    def formats(self) -> dict[str, str]:
        """Values ``aotwheel resolve --format NAME`` prints for this vendor (Intel: ocloc, names, ips)."""
        ...

    def report(self, field_defaults: bool) -> tuple[dict[str, object], list[str]]:
        """``aotwheel resolve``'s extra JSON keys and human lines for this vendor (Intel: the
        field-default options, fp64, targets the installed ocloc cannot build)."""
        ...

    def cmake_variables(self, field_defaults: bool) -> dict[str, object]:
        """What CMake's ``aotwheel_resolve_devlist(<out>)`` sets for this vendor: key ``K`` becomes
        ``<out>_K`` (``""``: ``<out>`` itself); a list is a CMake list, a bool ON/OFF (Intel:
        ``OCLOC_DEVICE``, NVIDIA: ``CUDA``). Keys are this vendor's alone: no two vendors share one."""
        ...


class DevlistGrammar(Protocol):
    """One backend's ``USE_AOT_DEVLIST`` grammar while one value is resolved: tokens go in, a
    :class:`DevlistPart` comes out. Errors are :class:`aotwheel.errors.DevlistError`, one line
    naming the fix (and the closest names)."""

    @property
    def detects_native(self) -> bool:
        """Whether ``native`` looks for this vendor's GPUs."""
        ...

    @property
    def examples(self) -> DevlistExamples | None:
        """Names for the core's messages (the default backend's are read)."""
        ...

    def expand(self, token: str, raw: str, rest: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
        """Add one token this backend owns (``token`` lower-case, ``raw`` as typed, ``rest`` the
        tokens after it, for "did you mean"): ``(kind, target names)`` for ``DevList.expansions``,
        or ``None`` for a word that sets an option (NVIDIA's ``ptx``)."""
        ...

    def add_native(self, idents: Sequence[str]) -> tuple[tuple[str, ...], str]:
        """Add the detected devices of this vendor (:attr:`Capabilities.native_tokens`' words): the
        target names added, and a note on those it cannot place (``""`` if none)."""
        ...

    def suggest(self, token: str) -> tuple[str, ...]:
        """The nearest names to ``token`` (``(token,)`` when it is itself a name)."""
        ...

    def devices(self, token: str, raw: str, source: str) -> list[ProbedDevice]:
        """The devices one ``AOTWHEEL_DEVICE`` / ``--device`` token names (``token`` lower-case,
        ``raw`` as typed, ``source`` the variable or flag for messages); raises
        :class:`aotwheel.errors.DevlistError` naming the fix (the caller puts ``source`` for
        ``USE_AOT_DEVLIST`` in its message)."""
        ...

    def finish(self, *, jit_fallback: bool, alone: bool) -> DevlistPart | None:
        """This vendor's part of the list (``None``: it never has one); ``alone``: no other vendor
        builds anything (the default backend then keeps its IR for every device)."""
        ...


class ImageWalk(Protocol):
    """One binary being read: what the inspector hands a :class:`Reader` to fill in."""

    report: FileReport
    deep: bool  # hash and decompress every image, read every descriptor
    memo: dict[Any, Any]  # per-walk answers that repeat across images (readers key theirs by tuples; the core uses str keys)
    max_depth: int  # how deep containers may nest

    def add_ir(self, form: str) -> None:
        """Record a JIT-able IR form (``"spirv"``, ``"ptx compute_90"``) once."""
        ...

    def note_ir(self, kind: str | None) -> None:
        """Record ``kind`` if it is a vendor-neutral IR kind (SPIR-V, LLVM bitcode)."""
        ...

    def add_image(self, region: Region, *, triple: str | None, section: str | None, offload_arch: str | None = None) -> None:
        """List ``region`` as one image (sniffed; a zstd frame decompressed as needed) and walk into it."""
        ...

    def walk_content(self, region: Region, kind: ImageKind, img: Image, depth: int, member: str | None = None) -> None:
        """Content nested ``depth`` levels inside image ``img`` (an archive member, a decompressed
        payload), read by whoever reads ``kind``; too deep a nesting raises."""
        ...


class Reader(Protocol):
    """A backend's binary reader: the module ``reader`` of its package (``aotwheel.backends.<vendor>.reader``),
    which :mod:`aotwheel.backends.readers` finds through the backends' registry. Its functions take the walk first.
    The kinds its spec names are the backend's own (``ImageKind.declare`` in its package, imported
    by this module) or the vendor-neutral ones; an ELF its spec's ``elf_kinds`` names reaches it by that kind."""

    READS: ReadSpec

    def read_file(self, walk: ImageWalk, region: Region, kind: ImageKind) -> bool:
        """A whole input file that the spec's ``magic`` or ``file_kinds`` matched; ``False``: not
        this vendor's after all (the inspector goes on with its own walk)."""
        ...

    def read_host(self, walk: ImageWalk, region: Region, view: ElfView, host: HostOffload) -> None:
        """A host ELF with one of the spec's ``sections`` (after the vendor-free walk of its
        ``.tgtimg`` table, summarised in ``host``, and ``.llvm.offloading`` sections)."""
        ...

    def read_image(self, walk: ImageWalk, region: Region, kind: ImageKind, img: Image, depth: int, member: str | None) -> None:
        """An embedded image (or an archive member of one, ``member``) of one of the spec's ``image_kinds``."""
        ...

    def read_carried(self, walk: ImageWalk, region: Region, magic: bytes, section: str) -> int:
        """A standalone image that may start at ``region``'s first byte (with ``magic``, one of the
        spec's ``carried``; ``region`` runs to the end of the gap it was found in, inside data
        section ``section``): when a full parse of its header accounts for its bytes, list it in
        ``walk`` (the report of what the library loads itself) and return its size; else ``0``
        (a chance match, or another vendor's image)."""
        ...

    def spirv_in(self, img: Image, load: Callable[[], bytes], label: str) -> bytes | None:
        """The SPIR-V module that image ``img`` of this vendor carries besides its native code
        (``load()`` gives its decompressed bytes), or ``None``."""
        ...

    # Optional, declared by ``READS.serves`` (the inspector asks no reader without it):
    # def serves(self, file: FileReport) -> list[str]: ``aotwheel inspect``'s note on images that
    # serve devices besides their own.


class Backend(Protocol):
    """What the core needs from every vendor: ten members. Anything more is a capability the
    backend declares in :attr:`capabilities` (its binary :class:`Reader` is a module of its own,
    named in the registry: the inspector reaches it without this object, whose rules and
    self-tests use the inspector)."""

    name: str  # "intel", "nvidia": the ``vendor`` of its targets, devices and verdicts
    title: str  # "Intel", "NVIDIA": for messages
    capabilities: Capabilities  # what else it has, declared (the core never probes for attributes)

    def owns_token(self, token: str) -> bool:
        """Whether a (lower-case) ``USE_AOT_DEVLIST`` / ``AOTWHEEL_DEVICE`` token is in this
        vendor's grammar, valid or not (so that a typo gets this vendor's suggestion)."""
        ...

    def devlist_grammar(self, table: object | None = None) -> DevlistGrammar:
        """A fresh grammar for one ``USE_AOT_DEVLIST`` / ``AOTWHEEL_DEVICE`` value (``table``:
        from its :attr:`Capabilities.toolchain`, else the vendor's built-in one)."""
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


class Toolchain(Protocol):
    """A capability: installed tools this vendor's grammar consults, which ``aotwheel resolve``
    (``--toolchain WORD``, ``--WORD PATH``, ``--list``) and ``aotwheel build toolchain`` check."""

    tools: tuple[ToolOption, ...]  # ``aotwheel resolve --toolchain`` words (Intel's ocloc)

    def table(self, text: str, tools: Mapping[str, str | None], *, installed: bool = False) -> object | None:
        """The toolchain facts the grammar needs to resolve ``text`` (Intel: the installed ocloc's
        device table, asked only where it can change the answer, or always with ``installed``:
        what ``aotwheel resolve`` prints for a person); ``tools``: explicit tool paths by
        :attr:`tools` word; ``None`` for the vendor's built-in table."""
        ...

    def listing(self, tools: Mapping[str, str | None]) -> list[str]:
        """Lines of ``aotwheel resolve --list``: every name this vendor's grammar knows."""
        ...

    def check(self, part: DevlistPart, tool: str, path: str | None) -> None:
        """``aotwheel resolve --toolchain TOOL``: raise :class:`aotwheel.errors.ToolchainError`
        (one line) unless the installed ``tool`` can build every target of ``part``."""
        ...

    def report(self, devices: Sequence[str], cache: Any) -> dict[str, object]:
        """``aotwheel build toolchain``'s fields for these tools; ``devices``: the ``--devices``
        names to check they can build, ``cache`` the device-code cache
        (:class:`aotwheel.buildsteps.cache.DeviceCodeCache`)."""
        ...


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


class OpenClImages(NamedTuple):
    """Which of an aotwheel-built extension's embedded images (``images()``: triple, source, bytes)
    an OpenCL backend's driver loads, and how its fat binary looks: what the OpenCL loader and the
    selftest ask instead of naming a vendor's formats."""

    native: str  # the triple of the fat binary of native images, which the driver picks a member of
    ir: str  # the triple of the SPIR-V module the driver JIT-compiles
    native_magic: bytes  # how a fat binary starts (a file or bytes handed to the loader)
    native_name: str  # the fat binary in messages ("an ocloc fat binary")


class OpenClSupport(Protocol):
    """What a backend whose driver loads OpenCL programs adds (optional; Intel's has it). The OpenCL
    loader (:mod:`aotwheel.opencl`) and the selftest ask it through
    :func:`aotwheel.backends.for_opencl`, for every OpenCL device, whatever its vendor."""

    opencl_images: OpenClImages  # which embedded images and files are its fat binaries and SPIR-V
    opencl_runtime: str  # how to get an OpenCL device where there is none (the selftest's error line)

    def opencl_device(self, cl: Any, platform: Any, device: Any, index: int = 0) -> ProbedDevice:
        """A pyopencl ``device`` of ``platform`` as this backend's rules read it (kind, IP, driver)."""
        ...

    def opencl_verdict(self, targets: Sequence[Any], has_spirv: bool, device: Any) -> Verdict:
        """Whether the driver runs one of ``targets`` (the native images of a fat binary, as the
        inspector reads them) on ``device`` natively (verdict ``native``: the loader hands it the fat
        binary), or needs SPIR-V."""
        ...
