"""One verdict per embedded image slot: what a slot of an image table must hold, checked the same
way by the inspector (``aotwheel inspect``, ``--deep``, hence ``aotwheel check``) and the run-time
loader (:mod:`aotwheel.opencl`).

A slot's triple says what belongs there: an IR triple (a reader's ``ReadSpec.ir_triples``, SYCL's
``spir64``: SPIR-V) holds that IR; another triple of the same family (``spir64_*``) holds native
code. A slot that is empty, holds bytes no reader knows, the wrong kind (SPIR-V where the native
fat binary belongs, or the other way round: frames in swapped slots) or a zstd frame followed by
more bytes (two frames concatenated) is damaged: the inspector names it in a warning and reads no
target from it (never a native claim), the loader refuses it with one error naming the image.
"""

from __future__ import annotations

from aotwheel.model import IR_KINDS, ImageKind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def family_ir(triple: str | None, ir_by_arch: Mapping[str, ImageKind]) -> tuple[bool, ImageKind | None]:
    """``(checked, ir)`` for a slot's ``triple``: whether its family is one a reader declares an
    IR triple for (only those slots are judged), and the IR it must hold (``None``: native code)."""
    if not triple:
        return False, None
    arch = triple.partition("-")[0]
    if arch in ir_by_arch:
        return True, ir_by_arch[arch]
    return any(arch.startswith(f"{family}_") for family in ir_by_arch), None


def unjudged_problem(content: str, size: int, head: bytes, magics: Iterable[bytes]) -> str | None:
    """What is wrong with a slot whose triple no reader declares (or that has none: a damaged
    descriptor): only what is wrong whatever it should hold. Empty, or bytes that start with no
    magic any reader knows (``magics``: the readers' own, such as NVIDIA's fat binary container's):
    a zeroed image is damage, not an image of an unknown kind."""
    if size == 0:
        return "the slot is empty"
    if content == ImageKind.UNKNOWN and not any(head.startswith(m) for m in magics):
        return "it holds no device code any reader knows (bad magic" + (", all zero bytes)" if not any(head) else ")")
    return None


def slot_problem(content: str, size: int, ir: ImageKind | None, *, trailing: int = 0, head: bytes | None = None) -> str | None:
    """What is wrong with a slot of ``size`` bytes whose (decompressed) content is of kind
    ``content``; ``ir``: the IR its triple says it holds (``None``: native code); ``trailing``:
    bytes after the slot's zstd frame; ``head``: its first bytes, when known (a zeroed slot is named
    so). ``None`` when nothing is."""
    if size == 0:
        return "the slot is empty"
    if trailing:
        return f"{trailing} bytes follow its zstd frame (two frames, or a frame and garbage)"
    if content == ImageKind.UNKNOWN:
        return "it holds no device code any reader knows (bad magic" + (", all zero bytes)" if head is not None and not any(head) else ")")
    if ir is not None and content != ir:
        return f"it holds {content} where {ir} belongs (misplaced)"
    if ir is None and content in IR_KINDS:
        return f"it holds {content} where native code belongs (misplaced)"
    return None


def damaged(index: int, triple: str | None, section: str | None, problem: str) -> str:
    """The warning (and the loader's error) naming a damaged slot."""
    where = f" in {section}" if section else ""
    return (f"image {index} ({triple or 'no triple'}{where}) is damaged: {problem}; no target is read from it "
            "(rebuild the binary or reinstall the package)")
