"""What a vendor backend provides: the :class:`Backend` protocol and its :class:`ProbeSpec`; its
binary :class:`Reader` (a module with a :class:`ReadSpec`) and the :class:`ImageWalk` that the
inspector hands it.

Apart from the registry (:mod:`aotwheel.backends`) so that importing a vendor's build step, which
imports the ``aotwheel.backends`` package first, never imports ``typing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from aotwheel.formats.elf import ElfView, HostOffload
    from aotwheel.formats.region import Region
    from aotwheel.model import Device, Image, ImageKind, Verdict
    from aotwheel.model import ProbedDevice
    from aotwheel.report import FileReport


class ProbeSpec(NamedTuple):
    """One device probe of a backend, as :mod:`aotwheel.probe` runs it."""

    name: str  # "levelzero", "cuda": the ``backend`` of the devices it reports
    module: str  # defines ``probe() -> aotwheel.probe.ProbeResult``
    heavy: str = ""  # a module that costs seconds to import: probe only once the application imported it
    native: bool = False  # the vendor's own driver: its GPUs replace other runtimes' views of them


class ReadSpec(NamedTuple):
    """What of a binary a backend reads (a :class:`Reader` module's ``READS``).

    :mod:`aotwheel.inspector` walks the vendor-free containers (wheels, host ELFs and their
    ``.tgtimg`` tables and ``.llvm.offloading`` sections, static libraries, zstd frames,
    OffloadBinaries) and hands the payloads claimed here to the reader's functions."""

    magic: tuple[bytes, ...] = ()  # whole files starting with one of these (kind "unknown" to sniff): read_file
    file_kinds: tuple[str, ...] = ()  # whole files of these sniffed kinds: read_file, which may decline
    sections: tuple[str, ...] = ()  # host ELF sections: read_host runs when one of them is present
    image_kinds: tuple[str, ...] = ()  # embedded images and archive members of these kinds: read_image
    # (an offload triple's first component, the IR kind its images are): the inspector notes such
    # images as that IR without decompressing them (SYCL: spir64 -> SPIR-V)
    ir_triples: tuple[tuple[str, str], ...] = ()
    suffixes: tuple[str, ...] = ()  # file names (besides .so, .a, .o, .spv, .bin, .ar) a wheel or directory walk reads


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
    """A backend's binary reader: a module (``aotwheel.backends.<vendor>.reader``) registered in
    :mod:`aotwheel.backends.readers`. Its functions take the walk first."""

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

    def spirv_in(self, img: Image, load: Callable[[], bytes], label: str) -> bytes | None:
        """The SPIR-V module that image ``img`` of this vendor carries besides its native code
        (``load()`` gives its decompressed bytes), or ``None``."""
        ...


class Backend(Protocol):
    """What the core needs from one vendor (its binary :class:`Reader` is a module of its own,
    registered beside it in :mod:`aotwheel.backends.readers`: the inspector reaches it without
    this object, whose rules and self-tests use the inspector)."""

    name: str  # "intel", "nvidia": the ``vendor`` of its targets, devices and verdicts
    title: str  # "Intel", "NVIDIA": for messages
    probes: tuple[ProbeSpec, ...]  # asked in this order, after the previous backends' probes

    def override_devices(self, token: str, raw: str, source: str) -> list[ProbedDevice]:
        """The devices one ``AOTWHEEL_DEVICE`` / ``--device`` token names (``token`` lower-case,
        ``raw`` as typed, ``source`` the variable or flag for messages); raises
        :class:`aotwheel.errors.DevlistError` naming the fix."""
        ...

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

    def prepare_probes(self) -> None:
        """Make this vendor's probes see what the user's runtime sees (Intel: the CPU OpenCL
        runtime installed from PyPI); called by the CLI before it probes."""
        ...

    def cached_native_builds(self, verdicts: Sequence[Verdict]) -> dict[int, dict[str, int]]:
        """For ``jit`` verdicts of this vendor's devices: by verdict index, how many of the binary's
        IR modules have a native build in this vendor's JIT cache (``{"modules": n, "cached": k}``)."""
        ...

    def selftest(self, binary: str) -> list[Any]:
        """Run ``binary``'s kernels on this vendor's devices that OpenCL does not reach
        (:class:`aotwheel.selftest.DeviceResult` each); ``[]`` when OpenCL covers them all."""
        ...
