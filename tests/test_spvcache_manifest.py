"""What a SPIR-V manifest from a shared store may name: entries whose recorded dependencies point
outside the project by a relative path (or are malformed) are skipped as a miss, never read."""

from __future__ import annotations

import json

from aotwheel.backends.intel.buildsteps.spvcache import SCHEMA, _entries

SHA = "a" * 64


def _blob(*deps: list[str]) -> bytes:
    return json.dumps({"schema": SCHEMA, "entries": [{"deps": list(deps), "spirv": SHA, "size": 4}]}).encode()


def test_entries_under_the_roots_and_absolute_system_headers_are_kept():
    assert len(_entries(_blob(["src", "k/ops.cl", SHA], ["build", "gen/h.h", SHA], ["abs", "/usr/include/x.h", SHA]))) == 1


def test_entries_that_leave_a_root_or_are_malformed_are_skipped():
    for dep in (["src", "../../etc/passwd", SHA], ["build", "/etc/passwd", SHA], ["abs", "relative.h", SHA],
                ["src", "a/../../b.h", SHA], ["other", "x.h", SHA], ["src", "x.h", "short"], ["src", "x.h"], "src x.h"):
        assert _entries(_blob(dep)) == [], dep  # type: ignore[arg-type]


def test_foreign_objects_are_no_entries():
    assert _entries(b"\xff\xfe") == [] and _entries(b'{"schema": "other", "entries": []}') == [] and _entries(None) == []
