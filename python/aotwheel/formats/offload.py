"""LLVM's ``OffloadBinary`` (magic 10 FF 10 AD): the new offload model's container in objects and
static archives (``.llvm.offloading``). Layout from llvm/Object/OffloadBinary.h (version 1)."""

from __future__ import annotations

from dataclasses import dataclass, field

from aotwheel.formats.region import Region
from aotwheel.formats.sniff import OFFLOAD_MAGIC

TYPE_CHECKING = False  # not typing's
if TYPE_CHECKING:
    from collections.abc import Iterable

_HEADER = "<4sIQQQ"  # magic, version, size, entry offset, entry size
_ENTRY = "<HHIQQQQ"  # image kind, offload kind, flags, string offset, string count, image offset, image size
# LLVM's vendor-neutral image kinds; a vendor's (NVIDIA's 3, 4, 5) its reader declares
# (ReadSpec.offload_image_kinds) and the inspector passes in.
IMAGE_KINDS = {0: "none", 1: "object", 2: "bitcode", 6: "spirv"}
OFFLOAD_KINDS = {0: "none", 1: "openmp", 2: "cuda", 4: "hip", 8: "sycl"}


@dataclass(frozen=True)
class OffloadEntry:
    image_kind: str
    offload_kind: str
    strings: dict[str, str] = field(default_factory=dict)  # "triple", "arch", "compile-opts", ...
    image_offset: int = 0  # relative to the region
    image_size: int = 0
    total_size: int = 0  # bytes this binary occupies (the next one may follow)


def read_offload(region: Region, image_kinds: dict[int, str] | None = None) -> OffloadEntry:
    """Parse one OffloadBinary at the start of ``region``; ``image_kinds`` names its image kind
    number (default :data:`IMAGE_KINDS`; ``"kind N"`` for a number it lacks)."""
    magic, version, size, entry_off, entry_size = region.unpack(_HEADER, 0, "OffloadBinary header")
    if magic != OFFLOAD_MAGIC:
        raise region.error(0, "missing OffloadBinary magic 10 ff 10 ad")
    if version < 1:
        raise region.error(4, f"unsupported OffloadBinary version {version}")
    region.check(0, size, "OffloadBinary")
    body = region.sub(0, size, "OffloadBinary")
    ik, ok, _flags, str_off, nstr, img_off, img_size = body.unpack(_ENTRY, entry_off, "OffloadBinary entry")
    body.check(str_off, nstr * 16, "OffloadBinary string table")
    body.check(img_off, img_size, "OffloadBinary image")
    strings = {}
    for i in range(nstr):
        k, v = body.unpack("<QQ", str_off + 16 * i, "OffloadBinary string entry")
        strings[_cstr(body, k)] = _cstr(body, v)
    image_kind = (IMAGE_KINDS if image_kinds is None else image_kinds).get(ik, f"kind {ik}")
    return OffloadEntry(image_kind, OFFLOAD_KINDS.get(ok, f"kind {ok}"), strings, img_off, img_size, size)


def read_all(region: Region, image_kinds: Iterable[tuple[int, str]] = ()) -> list[OffloadEntry]:
    """Every OffloadBinary packed back to back (8-byte aligned) in a ``.llvm.offloading`` section;
    ``image_kinds`` adds the names of image kind numbers to :data:`IMAGE_KINDS` (the backends')."""
    out, pos = [], 0
    names = {**IMAGE_KINDS, **dict(image_kinds)}
    while pos + 8 <= region.size and region.read(pos, 4, "OffloadBinary magic") == OFFLOAD_MAGIC:
        entry = read_offload(region.sub(pos, region.size - pos, "OffloadBinary"), names)
        out.append(OffloadEntry(entry.image_kind, entry.offload_kind, entry.strings, pos + entry.image_offset, entry.image_size, entry.total_size))
        pos += (entry.total_size + 7) & ~7
        if entry.total_size == 0:
            break
    return out


def _cstr(region: Region, off: int, limit: int = 4096) -> str:
    region.check(off, 1, "OffloadBinary string")
    raw = region.read(off, min(limit, region.size - off), "OffloadBinary string")
    end = raw.find(b"\0")
    if end < 0:
        raise region.error(off, "unterminated OffloadBinary string")
    return raw[:end].decode("utf-8", "replace")
