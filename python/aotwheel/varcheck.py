"""Configure's check of variable names: a ``USE_AOT_*``, ``AOTWHEEL_*`` or ``TORCH_XPU_*`` variable
that aotwheel does not declare but whose name is close to one it does is a typo until said
otherwise (``USE_AOT_DEV_LIST=acm-g11 pip wheel .`` would build the default list, silently).

Close: the same name but for case, or at most two edits (a letter or ``_`` added, dropped,
changed, or two neighbours swapped) from a declared name. ``AOTWHEEL_ALLOW_UNDECLARED`` lists
names (or ``*``) to let be. Standard library only: the configure step imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aotwheel.errors import SettingError
from aotwheel.variables import ALLOW_UNDECLARED, OTHER_NAMES

PREFIXES = ("USE_AOT_", "AOTWHEEL_", "TORCH_XPU_")
MAX_EDITS = 2


def edits(a: str, b: str, limit: int = MAX_EDITS) -> int:
    """Optimal-string-alignment distance of ``a`` and ``b``, or ``limit + 1`` once past ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if min(row) > limit:
            return limit + 1
        prev2, prev = prev, row
    return prev[-1]


def closest(name: str, declared: Iterable[str]) -> tuple[str, int] | None:
    """The declared name ``name`` is closest to, and how many edits away (0: case only), or ``None``."""
    best: tuple[str, int] | None = None
    for known in declared:
        d = edits(name.upper(), known)
        if d <= MAX_EDITS and (best is None or d < best[1]):
            best = (known, d)
    return best


def check(names: Mapping[str, str], declared: Iterable[str], allow: str | None) -> None:
    """Raise one :class:`SettingError` for the first of ``names`` (name -> where it is set) that is
    close to a declared name without being one, unless ``allow`` lets it be."""
    known = {*declared, *(v.name for v in OTHER_NAMES)}
    allowed = {a.strip() for a in (allow or "").split(",") if a.strip()}
    if "*" in allowed:
        return
    for name, where in names.items():
        if name in known or name in allowed or not name.upper().startswith(PREFIXES):
            continue
        near = closest(name, known)
        if near is None:
            continue
        target, d = near
        how = "differs only in case" if d == 0 else f"{d} edit{'s' if d > 1 else ''} away"
        raise SettingError(f"{name} ({where}) is not a variable aotwheel reads; did you mean {target} ({how})? "
                           f"Rename it, or set {ALLOW_UNDECLARED.name}={name} to keep it")
