"""What a blob is, from its first bytes (docs/formats.md §3 magic numbers)."""

from __future__ import annotations

import struct

from aotwheel.model import ImageKind

TYPE_CHECKING = False  # not typing's: aotwheel inspect's start-up
if TYPE_CHECKING:
    from collections.abc import Iterable

# Module constants: sniff runs once per image (14k in large libraries), an enum attribute costs more.
_SPIRV, _LLVMBC, _ZSTD, _AR, _OFFLOAD, _BUNDLE = (ImageKind.SPIRV, ImageKind.LLVMBC, ImageKind.ZSTD, ImageKind.AR,
                                                  ImageKind.OFFLOAD, ImageKind.BUNDLE)
_ELF, _UNKNOWN = ImageKind.ELF, ImageKind.UNKNOWN

SPIRV_MAGIC = b"\x03\x02\x23\x07"
SPIRV_MAGIC_BE = b"\x07\x23\x02\x03"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
AR_MAGIC = b"!<arch>\n"
OFFLOAD_MAGIC = b"\x10\xff\x10\xad"
ELF_MAGIC = b"\x7fELF"
BITCODE_MAGICS = (b"\xde\xc0\x17\x0b", b"BC\xc0\xde")
BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"


def sniff(head: bytes, elf_kinds: ElfKinds | None = None) -> ImageKind:
    """Classify by magic: ``spirv``, ``llvmbc``, ``zstd``, ``ar``, ``offload``, ``bundle`` (clang
    offload bundle, plain or ``CCOB``), ``elf``, or ``unknown``. An ELF is ``elf`` unless
    ``elf_kinds`` (the backends' rules, :class:`ElfKinds`) names its kind from its ``e_type`` and
    ``e_machine``. ``head`` needs at least 20 bytes for ELFs."""
    if head[:4] in (SPIRV_MAGIC, SPIRV_MAGIC_BE):
        return _SPIRV
    if head[:4] in BITCODE_MAGICS:
        return _LLVMBC
    if head[:4] == ZSTD_MAGIC:
        return _ZSTD
    if head[:8] == AR_MAGIC:
        return _AR
    if head[:4] == OFFLOAD_MAGIC:
        return _OFFLOAD
    if head[:24] == BUNDLE_MAGIC or head[:4] == CCOB_MAGIC:
        return _BUNDLE
    if head[:4] == ELF_MAGIC and len(head) >= 20:
        return _ELF if elf_kinds is None else elf_kinds.kind(head)
    return _UNKNOWN


class ElfKinds:
    """Which device formats are ELF files, by their header: the backends' rules
    (:class:`aotwheel.backends.readspec.ReadSpec` ``elf_kinds``, ``(e_type, e_machine, kind)`` with
    ``None`` for any). A rule naming both fields goes before one naming ``e_type`` only, which goes
    before one naming ``e_machine`` only; among equals the first given wins. An ELF no rule names
    is ``elf``. Built once per set of rules; each header's answer is kept (a library repeats a few),
    so that naming an ELF costs one dict lookup: the inspector asks once per image."""

    __slots__ = ("_both", "_by_type", "_by_machine", "_seen")

    def __init__(self, rules: Iterable[tuple[int | None, int | None, ImageKind]]) -> None:
        self._both: dict[tuple[int, int], ImageKind] = {}
        self._by_type: dict[int, ImageKind] = {}
        self._by_machine: dict[int, ImageKind] = {}
        # (EI_DATA, e_type, e_machine bytes) -> kind, for the headers seen
        self._seen: dict[tuple[int, bytes], ImageKind] = {}
        for e_type, e_machine, kind in rules:
            if e_type is not None and e_machine is not None:
                self._both.setdefault((e_type, e_machine), kind)
            elif e_type is not None:
                self._by_type.setdefault(e_type, kind)
            elif e_machine is not None:
                self._by_machine.setdefault(e_machine, kind)
            else:
                raise ValueError(f"ElfKinds: the rule for {kind!r} names neither an e_type nor an e_machine")

    def __bool__(self) -> bool:
        return bool(self._both or self._by_type or self._by_machine)

    def kind(self, head: bytes) -> ImageKind:
        """The kind of the ELF whose first 20 or more bytes are ``head``."""
        key = (head[5], head[16:20])
        kind = self._seen.get(key)
        if kind is None:
            e_type, e_machine = struct.unpack_from("<HH" if head[5] == 1 else ">HH", head, 16)
            kind = self._both.get((e_type, e_machine)) or self._by_type.get(e_type) or self._by_machine.get(e_machine) or _ELF
            if len(self._seen) >= 64:  # a corrupt file may hold any number of distinct headers
                self._seen.clear()
            self._seen[key] = kind
        return kind
