"""AMD target ids (``gfx90a``, ``gfx90a:xnack-``, ``gfx942:sramecc+:xnack+``) and the rule the HIP
runtime applies when it picks a code object for a device (LLVM AMDGPUUsage, "Target ID"): the
processor must match, and each feature the code object fixes (``+``/``-``) must equal the device's
setting; a feature it leaves out ("any") runs either way. Generic processors (code object v6)
cover the processors listed for them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aotwheel.errors import AotwheelError

_TARGET_RE = re.compile(r"(gfx[0-9a-f]+|gfx[0-9]+(?:-[0-9]+)*-generic)((?::[a-z]+[+-])*)")
FEATURES = ("sramecc", "xnack")

# LLVM AMDGPUUsage, "Generic processors" table: which processors each generic one runs on.
GENERIC: dict[str, tuple[str, ...]] = {
    "gfx9-generic": ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"),
    "gfx9-4-generic": ("gfx942", "gfx950"),
    "gfx10-1-generic": ("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    "gfx10-3-generic": ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
    "gfx11-generic": ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"),
    "gfx12-generic": ("gfx1200", "gfx1201"),
}


@dataclass(frozen=True)
class TargetId:
    processor: str
    features: dict[str, bool] = field(default_factory=dict)  # "xnack" -> True (+) / False (-); absent = any

    def __str__(self) -> str:
        return self.processor + "".join(f":{k}{'+' if v else '-'}" for k, v in sorted(self.features.items()))

    def setting(self, feature: str) -> str:
        return {True: "on", False: "off"}.get(self.features.get(feature), "any")  # type: ignore[arg-type]


def parse_target_id(text: str) -> TargetId | None:
    """``gfx90a:xnack-`` -> TargetId; None when ``text`` is not an AMD target id."""
    m = _TARGET_RE.fullmatch(text.strip().lower())
    if m is None:
        return None
    features: dict[str, bool] = {}
    for part in filter(None, m[2].split(":")):
        name, sign = part[:-1], part[-1]
        if name in features:
            return None
        features[name] = sign == "+"
    return TargetId(m[1], features)


def require_target_id(text: str) -> TargetId:
    target = parse_target_id(text)
    if target is None:
        raise AotwheelError(f"{text!r} is not an AMD target id; use e.g. gfx90a, gfx90a:xnack- or gfx942:sramecc+:xnack+")
    return target


def runs_on(code: TargetId, device: TargetId) -> str | None:
    """Why a code object for ``code`` does not load on ``device`` (None when it does).

    A device whose feature setting is unknown (named without ``:xnack±``) takes code objects
    built for either setting -- the caller says so in its verdict.
    """
    if code.processor != device.processor and device.processor not in GENERIC.get(code.processor, ()):
        return f"built for {code.processor}, not {device.processor}"
    for name, want in code.features.items():
        have = device.features.get(name)
        if have is not None and have != want:
            return f"built with {name}{'+' if want else '-'}, the device runs {name}{'+' if have else '-'}"
    return None


def known_processors() -> tuple[str, ...]:
    """Every processor aotwheel knows (LLVM's EF_AMDGPU_MACH table and the generic ones): what
    ``USE_AOT_DEVLIST`` accepts before hipcc says which of them it builds."""
    from aotwheel.backends.amd.codeobject import _MACH_NAMES

    return (*_MACH_NAMES.values(), *GENERIC)


def parse_listed(token: str, raw: str | None = None) -> TargetId:
    """A ``USE_AOT_DEVLIST`` token as a target id of a known processor; a
    :class:`~aotwheel.errors.DevlistError` naming the nearest processors otherwise."""
    import difflib

    from aotwheel.errors import DevlistError

    raw = token if raw is None else raw
    target = parse_target_id(token)
    processor = target.processor if target is not None else token.split(":")[0]
    known = known_processors()
    if target is not None and processor in known and set(target.features) <= set(FEATURES):
        return target
    scored = [(difflib.SequenceMatcher(None, processor, k).ratio(), _shared_prefix(k, processor), _step(k, processor), k) for k in known]
    near = tuple(k for ratio, _, _, k in sorted(scored, key=lambda s: (-round(s[0], 2), -s[1], s[2]))[:3] if ratio >= 0.6)
    if target is not None and processor in known:
        raise DevlistError(f"USE_AOT_DEVLIST: '{raw}' has a feature AMD target ids lack; write {processor} or "
                           f"{processor}:xnack- (features: {', '.join(FEATURES)})", raw, (processor,))
    hint = f"; did you mean {' or '.join(near)}?" if near else "; write an AMD processor such as gfx90a or gfx1030"
    raise DevlistError(f"USE_AOT_DEVLIST: '{raw}' is not a known AMD GPU processor{hint}", raw, near)


def _shared_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share: among names equally close, the one
    sharing more of the start comes first (``gfx90a`` before ``gfx950`` for ``gfx90b``)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _step(a: str, b: str) -> int:
    """How far apart the first differing characters of ``a`` and ``b`` are as base-36 digits:
    among names as close and sharing as much, ``gfx90a`` comes before ``gfx900`` for ``gfx90b``."""
    n = _shared_prefix(a, b)
    if n >= min(len(a), len(b)) or not (a[n].isalnum() and b[n].isalnum()):
        return 36
    return abs(int(a[n], 36) - int(b[n], 36))
