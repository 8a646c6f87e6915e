"""Unix ``ar`` archives: ocloc fat binaries (``pad_N``, ``64.<ip>``, ``64.<name>``, ``generic_ir``)
and static libraries. Only headers are read; member bodies stay where they are."""

from __future__ import annotations

from dataclasses import dataclass

from aotwheel.formats.region import Region
from aotwheel.formats.sniff import AR_MAGIC

_HEADER = 60
_MAX_MEMBERS = 1_000_000  # a guard against loops on hostile input, far above any real archive


@dataclass(frozen=True)
class ArMember:
    """One member: its name (GNU ``/`` stripped), offset of its body inside the archive, size."""

    name: str
    offset: int
    size: int

    @property
    def is_padding(self) -> bool:
        return self.name.startswith("pad_")


def read_ar(region: Region) -> list[ArMember]:
    """Members of the archive in ``region`` (symbol and long-name tables are consumed, not listed).

    Handles GNU (``name/``, ``//`` long names as ``/123``) and BSD (``#1/<len>``) names.
    """
    if region.head(8) != AR_MAGIC:
        raise region.error(0, "missing ar magic '!<arch>'")
    members: list[ArMember] = []
    longnames = b""
    pos = 8
    while pos < region.size:
        if pos + 1 == region.size and region.read(pos, 1, "padding") in (b"\n", b"\0"):
            break  # odd-sized last member's pad byte (GNU ar writes "\n", compute-runtime's ArEncoder a NUL)
        hdr = region.read(pos, _HEADER, "ar member header")
        if hdr[58:60] != b"`\n":
            raise region.error(pos, "bad ar member header terminator")
        try:
            size = int(hdr[48:58].decode("ascii").strip() or "0")
        except (UnicodeDecodeError, ValueError):
            raise region.error(pos + 48, "non-numeric ar member size") from None
        body = pos + _HEADER
        region.check(body, size, f"ar member at {pos:#x}")
        raw = hdr[:16].decode("ascii", "replace").rstrip(" ")
        name, data_off, data_size = raw, body, size
        if raw == "//":
            longnames = region.read(body, size, "ar long-name table")
            name = ""
        elif raw in ("/", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED"):
            name = ""  # symbol index
        elif raw.startswith("#1/"):
            n = _int(region, pos, raw[3:])
            region.check(body, n, "BSD ar long name")
            name = region.read(body, n, "BSD ar long name").rstrip(b"\0").decode("utf-8", "replace")
            data_off, data_size = body + n, size - n
        elif raw.startswith("/") and raw[1:].isdigit():
            start = int(raw[1:])
            if start >= len(longnames):
                raise region.error(pos, "ar long-name offset outside the '//' table")
            end = longnames.find(b"\n", start)
            name = longnames[start : end if end >= 0 else len(longnames)].decode("utf-8", "replace").rstrip("/")
        else:
            name = raw[:-1] if raw.endswith("/") else raw
        if name:
            members.append(ArMember(name, data_off, data_size))
            if len(members) > _MAX_MEMBERS:
                raise region.error(pos, "too many ar members")
        pos = body + size + (size & 1)
    return members


def _int(region: Region, pos: int, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise region.error(pos, "bad BSD ar name length") from None
