"""The inspection report: what device code each binary carries, for every vendor (schema 2).

:func:`aotwheel.inspector.inspect` fills it from the bytes; ``aotwheel inspect --json`` prints
:meth:`Report.to_dict`, documented in docs/report-schema.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aotwheel.model import Image, ImageKind, Target, ir_labels

TYPE_CHECKING = False  # not typing's: every command that reads a binary imports this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    class VendorFields(Protocol):
        """A backend's own fields of a :class:`FileReport`, kept in ``FileReport.vendor[<backend>]`` by
        its reader (:meth:`FileReport.fields`), in the file's JSON where the backend places them."""

        def json_fields(self) -> list[tuple[str, str, object]]:
            """``(after, key, value)``: its keys of the file's JSON, each placed after the core key ``after``."""
            ...

        def add_member(self, other: Any, member: str) -> None:
            """An archive member's fields (``other``, of this type) into the archive's."""
            ...

        def mark(self) -> object:
            """A mark to :meth:`undo` to: what a reader that failed half way added is taken back."""
            ...

        def undo(self, mark: object) -> None:
            ...


SCHEMA = 2


# Backend name -> how its empty fields are made, in declaration order (declare_fields).
_DECLARED: dict[str, Callable[[], VendorFields]] = {}


def declare_fields(backend: str, make: Callable[[], VendorFields]) -> None:
    """Declare ``backend``'s own fields of every file report (its reader module does, when
    imported): every file's JSON has its keys, empty ones where the reader found nothing."""
    _DECLARED[backend] = make


@dataclass
class FileReport:
    """What one binary carries."""

    path: str
    native_targets: list[Target]
    ir: list[str]  # JIT-able forms: "spirv", "llvmbc", "ptx compute_90"
    images: list[Image]
    kernels: int | None  # distinct kernel names when known
    kind: str = ImageKind.UNKNOWN  # an ImageKind (ELF: a host binary), or "error" (unreadable)
    kernels_by_triple: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    ir_kernels_missing_from: dict[str, int] = field(default_factory=dict)  # {"spir64_gen": 5}: kernels only SPIR-V serves there
    error: str | None = None  # one-line reason this file could not be read (wheels/directories go on past it)
    # Standalone device images in the binary's data sections that no runtime registers: the library
    # loads them itself (cuModuleLoadData, zeModuleCreate). A report of its own (kind "carried"),
    # so that a backend decides on them as on any file; None: none found (or not a host ELF).
    carried: FileReport | None = None
    vendor: dict[str, VendorFields] = field(default_factory=dict)  # backend name -> its own fields (declare_fields)

    def fields(self, backend: str) -> Any:
        """``backend``'s own fields of this report, made empty on first use (its reader types them)."""
        found = self.vendor.get(backend)
        if found is None:
            found = self.vendor[backend] = _DECLARED[backend]()
        return found

    def target_names(self) -> list[str]:
        """Distinct native targets in order, every vendor: catalog names (else IP versions, else
        generic names) and CUDA archs (``sm_90a``)."""
        seen: dict[str, None] = {}
        for t in self.native_targets:
            seen.setdefault(t.name or t.ip or t.generic or t.core or "unknown")
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        """This file's object of the report JSON (docs/report-schema.md): the core fields, each
        declared backend's keys placed among them."""
        core = {name: _plain(getattr(self, name)) for name in _CORE_KEYS}
        core["carried"] = None if self.carried is None else self.carried.to_dict()
        extra = [x for name, make in _DECLARED.items() for x in (self.vendor.get(name) or make()).json_fields()]
        out: dict[str, Any] = {}
        for key, value in core.items():
            out[key] = value
            out.update((k, _plain(v)) for after, k, v in extra if after == key)
        out.update((k, _plain(v)) for after, k, v in extra if after not in core)
        return out


_CORE_KEYS = ("path", "native_targets", "ir", "images", "kernels", "kind", "kernels_by_triple", "warnings", "ir_kernels_missing_from",
              "error")


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready lists, dicts and leaves: ``dataclasses.asdict`` without its deep copy
    of every leaf (the 11k images of cuFFT took 1 s that way)."""
    cls = type(value)
    if cls is list:
        return [_plain(v) for v in value]
    if cls is tuple:
        return tuple(_plain(v) for v in value)
    if cls is dict:
        return {k: _plain(v) for k, v in value.items()}
    names = getattr(cls, "__dataclass_fields__", None)
    if names is not None:
        return {n: _plain(getattr(value, n)) for n in names}
    return value


@dataclass
class Report:
    """``inspect()``'s answer: the input and one :class:`FileReport` per binary inside it."""

    path: str
    files: list[FileReport]

    @property
    def errors(self) -> list[FileReport]:
        """Files that could not be read (their ``error`` says why)."""
        return [f for f in self.files if f.error]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the ``aotwheel inspect --json`` contract, schema 2 (docs/report-schema.md)."""
        return {"schema": SCHEMA, "path": self.path, "files": [f.to_dict() for f in self.files]}


# IR kind -> what the summary adds after its name when a binary carries that IR only inside
# another format's container (no image of its own): declared by the reader whose container it is.
_CONTAINED_IR_NOTES: dict[str, str] = {}


def note_contained_ir(kind: str, note: str) -> None:
    """Declare what IR of ``kind`` found only inside a reader's containers serves: the summary line
    writes ``SPIR-V (note)`` for a binary with no ``kind`` image of its own (Intel's reader: the
    SPIR-V of a GPU fat binary's ``generic_ir`` member, which the runtime never hands to a CPU)."""
    _CONTAINED_IR_NOTES[kind] = note


def ir_name(form: str) -> str:
    """How people write an IR form (``SPIR-V``, ``PTX compute_90``): the label its kind was
    declared with (:meth:`aotwheel.model.ImageKind.declare`), then the target if any."""
    kind, _, arch = form.partition(" ")
    label = ir_labels().get(kind)
    if label is None:
        return form
    return f"{label} {arch}" if arch else label if form == kind else form


def summary(fr: FileReport) -> str:
    """One true line for every vendor: ``native: pvc, sm_90 · JIT fallback: SPIR-V, PTX compute_90 · 37 distinct kernel functions``."""
    parts = [f"native: {', '.join(fr.target_names()) or 'none'}"]
    names = [ir_name(k) for k in fr.ir]
    for at, form in enumerate(fr.ir):
        note = _CONTAINED_IR_NOTES.get(form)
        if note is not None and not any(form in (i.kind, i.content) for i in fr.images):
            names[at] += f" ({note})"  # e.g. only in a GPU fat binary: the runtime never hands it to a CPU (issue 14)
    parts.append(f"JIT fallback: {', '.join(names) or 'none'}")
    if fr.kernels is not None:
        parts.append(f"{fr.kernels} distinct kernel function{'s' if fr.kernels != 1 else ''}")
    return " · ".join(parts)


CARRIED = "carried"  # FileReport.kind of the report of the images a library loads itself
CARRIED_LABEL = "carried, loaded by the library itself"


def carried_summary(fr: FileReport) -> str | None:
    """``carried, loaded by the library itself: 114 images · native: sm_70, sm_75 · JIT fallback: none``,
    or ``None`` when the binary keeps no such image."""
    c = fr.carried
    if c is None or not c.images:
        return None
    n = len(c.images)
    return f"{CARRIED_LABEL}: {n} image{'s' if n != 1 else ''} · {summary(c)}"
