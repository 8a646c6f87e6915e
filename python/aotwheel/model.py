"""The vendor-neutral model every layer speaks: what a binary carries (image kinds, images,
native targets); :mod:`aotwheel.results` holds what is decided about devices (verdicts, probed
devices), :mod:`aotwheel.outcomes` the self-test's results.

The resolver, the inspector, the probes, the run-time check and the CLI exchange these types;
what differs between vendors (token grammar, how a binary is read, the driver's loading rules)
lives behind :class:`aotwheel.backends.Backend`. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TYPE_CHECKING = False  # not typing's: every command that reads a binary imports this module
if TYPE_CHECKING:
    from typing import ClassVar


class ImageKind(str):
    """What a blob of device code (or a whole input file) is, as LLVM's ``OffloadBinary`` names
    its ``ImageKind``: :func:`aotwheel.formats.sniff.sniff` says it from the magic, the backends
    from their containers.

    ``str`` constants (``ImageKind.SPIRV == "spirv"``): the report JSON keeps the plain value and
    text output formats it as that value; the C scanner stores the equal plain ``str`` in the
    images it makes, which compares, hashes and serialises the same. An open vocabulary: the
    attributes here are the vendor-neutral kinds, and each backend declares its own formats with
    :meth:`declare` in its package (Intel's ``zebin`` in ``aotwheel.backends.intel.kinds``), which
    the inspector imports with the readers. ``ImageKind("spirv")`` is ``ImageKind.SPIRV``, and a
    declared vendor kind is found the same way (``ValueError`` for a value no one declared).
    Not an ``enum.Enum``: an enum is closed, and each backend adds its kinds when its package is
    imported."""

    __slots__ = ()

    SPIRV: ClassVar[ImageKind]  # Khronos SPIR-V module
    LLVMBC: ClassVar[ImageKind]  # LLVM bitcode
    ZSTD: ClassVar[ImageKind]  # one zstd frame (its content is another kind)
    AR: ClassVar[ImageKind]  # Unix ar archive: an ocloc fat binary or a static library
    OFFLOAD: ClassVar[ImageKind]  # LLVM OffloadBinary
    BUNDLE: ClassVar[ImageKind]  # clang offload bundle (plain or CCOB-compressed)
    ELF: ClassVar[ImageKind]  # a host ELF (shared library, executable, object), or one no backend's ReadSpec.elf_kinds names
    UNKNOWN: ClassVar[ImageKind]

    def __new__(cls, value: str) -> ImageKind:
        try:
            return _KINDS[value]
        except (KeyError, TypeError):
            raise ValueError(f"{value!r} is not a valid ImageKind") from None

    @classmethod
    def declare(cls, value: str, *, label: str | None = None) -> ImageKind:
        """The kind called ``value`` (lower case, words joined by ``-``: ``"cpu-aot"``), made on
        its first declaration: a backend declares its formats with it (``ZEBIN =
        ImageKind.declare("zebin")``); the same value always gives the same object, and
        ``ImageKind(value)`` finds it from then on. Its ``name`` is the value in upper case with
        ``_`` for ``-`` (``CPU_AOT``).

        ``label`` declares the kind an IR that a driver JIT-compiles, written that way in
        ``aotwheel inspect``'s output (``"SPIR-V"``; a backend's own IR too: ``"PTX"``);
        :func:`ir_labels` lists them."""
        kind = _KINDS.get(value)
        if kind is None:
            if type(value) is not str or not value.islower() or not value.replace("-", "_").isidentifier():
                raise ValueError(f"ImageKind.declare: {value!r} is not a kind name; use lower-case words joined by '-', as 'cpu-aot'")
            kind = _KINDS[value] = str.__new__(cls, value)
            _NAMES[value] = value.upper().replace("-", "_")
        if label is not None:
            _LABELS[value] = label
        return kind

    @property
    def value(self) -> str:
        """The plain string, as an enum member's ``value``."""
        return str.__str__(self)

    @property
    def name(self) -> str:
        """The constant's name (``SPIRV``), as an enum member's ``name``."""
        return _NAMES[self]

    def __str__(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"<ImageKind.{_NAMES[self]}: {str.__repr__(self)}>"

    def __reduce__(self) -> tuple[type[ImageKind], tuple[str]]:
        return ImageKind, (str.__str__(self),)


_NAMES: dict[str, str] = {}  # every declared kind's value -> its name
_KINDS: dict[str, ImageKind] = {}  # every declared kind's value -> the kind
_LABELS: dict[str, str] = {}  # IR kinds' values -> how people write them, in declaration order
_NEUTRAL = (("spirv", "SPIR-V"), ("llvmbc", "LLVM bitcode"), ("zstd", None), ("ar", None), ("offload", None), ("bundle", None), ("elf", None),
            ("unknown", None))
for _value, _label in _NEUTRAL:  # the vendor-neutral kinds
    _kind = ImageKind.declare(_value, label=_label)
    setattr(ImageKind, _NAMES[_value], _kind)
del _value, _label, _kind
if set(_NAMES.values()) != set(ImageKind.__annotations__):  # the declarations above and this table name the same kinds
    raise RuntimeError("aotwheel.model: ImageKind's table and its declarations differ")


IR_KINDS = (ImageKind.SPIRV, ImageKind.LLVMBC)  # vendor-neutral IR a driver JIT-compiles


def ir_labels() -> dict[str, str]:
    """Every IR kind declared so far (the vendor-neutral ones, then those of the backends whose
    readers are imported) -> how people write it: ``{"spirv": "SPIR-V", "llvmbc": "LLVM bitcode",
    "ptx": "PTX"}``, in declaration order."""
    return dict(_LABELS)


@dataclass(slots=True)  # no per-instance __dict__: large libraries carry 14k images
class Image:
    """One embedded device image (or the whole file for raw inputs)."""

    index: int
    offset: int  # file offset of the stored bytes
    size: int  # stored (possibly compressed) size
    kind: ImageKind
    triple: str | None  # "spir64_gen", "spir64", "nvptx64", ... when known
    compressed: bool
    section: str | None = None  # host section holding it
    content: ImageKind | None = None  # kind of the decompressed bytes for zstd images
    decompressed_size: int | None = None  # from the zstd frame header, or measured with deep
    members: list[str] = field(default_factory=list)  # ar member names, padding excluded
    sha256: str | None = None  # of the stored bytes; deep mode only
    kernels: int | None = None  # SPIR-V OpEntryPoint kernels; deep mode only (or raw .spv)
    listed_size: int | None = None  # the size the image table claims, when it differs from size
    arch: str | None = None  # OffloadBinary "arch" string, or the CUDA target ("sm_90", "compute_90")
    compile_options: str | None = None  # options the runtime passes when it builds this image
    link_options: str | None = None  # (from the SYCL image descriptor; None when empty or not found)



@dataclass
class Target:
    """A native device binary for one target, whatever the vendor.

    Intel: an ar member or a bare zebin/legacy image (``ip``, ``member``, ``core``...). NVIDIA: a
    cubin in a fat binary (``name`` and ``arch`` ``sm_90a``, ``format`` ``cubin``). AMD: a code
    object in a clang offload bundle (``name`` the target id ``gfx90a:xnack-``, ``arch`` the
    processor ``gfx90a``, ``member`` the bundle entry id, ``format`` ``code-object``).
    """

    name: str | None  # catalog name ("pvc") or CUDA arch ("sm_90"); None if unknown to the catalog
    ip: str | None  # "12.60.7"; None for NVIDIA
    member: str | None  # ar member name ("64.12.60.7", "64.bmg"), None for a bare binary
    format: ImageKind  # a kind its backend declares: Intel's zebin, legacy, cpu-aot; NVIDIA's cubin; AMD's code-object
    size: int
    image: int  # Image.index it came from
    generic: str | None = None  # "bmg" for a `64.bmg` member
    core: str | None = None  # gfx core family, e.g. "XE_HPC_CORE", when known
    product: str | None = None  # zebin product family, e.g. "PVC", when known
    rebuildable: bool = False  # carries its own SPIR-V the driver can rebuild from
    vendor: str = ""  # the backend that reads and runs it (its reader always names itself)
    arch: str | None = None  # NVIDIA: "sm_90a"; AMD: the processor, "gfx90a"; Intel: the IP a zebin's product-config note declares
    poisoned: tuple[str, ...] = ()  # kernels the compiler removed for lack of fp64 (Intel: -cl-poison-unsupported-fp64-kernels)


NativeTarget = Target  # the name the inspector's API used before the vendor-neutral model

