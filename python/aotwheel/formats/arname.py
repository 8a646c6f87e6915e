"""Names of ocloc-style fat binary members, apart from :mod:`aotwheel.formats.ar` (its reader and
member record): naming an inspected member's target reads no archive."""

from __future__ import annotations


def member_target(name: str) -> tuple[int | None, str]:
    """Split an ocloc fat-binary member name: ``"64.12.60.7"`` -> ``(64, "12.60.7")``,
    ``"64.bmg"`` -> ``(64, "bmg")``; names without a pointer-size prefix give ``(None, name)``."""
    head, dot, rest = name.partition(".")
    if dot and head in ("32", "64") and rest:
        return int(head), rest
    return None, name
