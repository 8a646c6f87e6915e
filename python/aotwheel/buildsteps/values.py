"""Key order of the JSON documents the backends add to (the resolver's, the build manifest's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def place(core: Mapping[str, object], extra: Sequence[tuple[str, str, object]]) -> dict[str, object]:
    """``core``'s keys with each ``(after, key, value)`` of ``extra`` placed after the key
    ``after`` (at the end if there is none): the resolver's JSON (CMake's input) and the build
    manifest kept the key order they had before the backends split them."""
    out: dict[str, object] = {}
    for key, value in core.items():
        out[key] = value
        out.update({k: v for after, k, v in extra if after == key})
    out.update({k: v for after, k, v in extra if after not in core})
    return out
