"""``USE_AOT_DEVLIST``: the one grammar for which devices get ahead-of-time device code.

Grammar (case-insensitive; tokens separated by commas and/or whitespace)::

    devlist  := token ( [,\\s]+ token )*
    token    := "none" | "native" | "no-jit" | a word of a backend's grammar
    none     := no AOT: JIT from the default backend's IR only (SPIR-V)
    native   := the devices found on this machine (error if none)
    no-jit   := do not keep IR for JIT (same as USE_AOT_JIT_FALLBACK=OFF)

Every other token goes to the backend whose grammar owns it (:func:`aotwheel.backends.for_token`;
a token nobody owns goes to :func:`aotwheel.backends.default`, whose names the suggestions come
from): Intel's device names, aliases, families, IP versions, PCI ids and ranges
(:mod:`aotwheel.backends.intel.grammar`), NVIDIA's ``sm_XY`` / ``compute_XY`` / ``ptx``
(:mod:`aotwheel.backends.nvidia.targets`). This module splits, handles the keywords, keeps the
order and reports errors; it names no vendor.

Duplicates and aliases collapse; order is stable (first mention wins). Anything else is a
:class:`~aotwheel.errors.DevlistError` with one line naming the bad token and the closest names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aotwheel.buildsteps.values import place
from aotwheel.config import DEFAULT_DEVLIST
from aotwheel.config import flag as env_flag
from aotwheel.errors import DevlistError

TYPE_CHECKING = False  # not typing's: `aotwheel resolve` imports no typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import TypeVar

    from aotwheel.backends.capabilities import DevlistExamples
    from aotwheel.backends.protocol import DevlistGrammar, DevlistPart

    P = TypeVar("P")
    Detector = Callable[[], Sequence[str]]

MAX_LENGTH = 4096
MAX_TOKENS = 256

NONE_TOKEN = "none"
NATIVE_TOKEN = "native"
NO_JIT_TOKEN = "no-jit"
_KEYWORDS = (NONE_TOKEN, NATIVE_TOKEN, NO_JIT_TOKEN)

_SEPARATORS = re.compile(r"[,\s]+")
# ':' for ocloc's product ranges (dg1:acm-g10, xe-hpg:, :dg1) and target features (AMD's
# gfx942:sramecc+:xnack-); '+' only ending such a feature (else it is another tool's separator).
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:, \t\r\n")
_TOKEN_SHAPE = re.compile(r"^(?:[a-z0-9][a-z0-9._-]*)?(?::(?:[a-z0-9][a-z0-9._-]*\+?)?)*$")

# Look-alike characters people paste from documents; used only to suggest a fix, never to accept.
_CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d", "ѵ": "v", "ɡ": "g",
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "−": "-", "，": ",", "．": ".",
})


@dataclass(frozen=True)
class Expansion:
    """How one input token became targets (families say which products they became)."""

    token: str
    kind: str  # the backend's word ("device", "group", "range", "nvidia", ...) or "native"
    names: tuple[str, ...]
    vendor: str = ""  # the backend whose grammar expanded it ("" for native: every backend's)


@dataclass(frozen=True)
class DevList:
    """A resolved device list: what will be compiled ahead of time, and whether IR is kept.

    ``parts`` holds each backend's share (registry order); a vendor's own views of the list
    (Intel: ``targets``, ``names``, ``spirv``, ``ocloc_device``; NVIDIA: ``cuda``) are its part's,
    asked for by type: ``devlist.part_of(IntelPart).targets``.
    """

    parts: tuple[DevlistPart, ...]
    jit_fallback: bool
    expansions: tuple[Expansion, ...] = ()
    text: str = ""

    def part(self, vendor: str) -> DevlistPart | None:
        """The share of backend ``vendor`` (``None`` if it has none)."""
        return next((p for p in self.parts if p.vendor == vendor), None)

    def part_of(self, kind: type[P]) -> P:
        """The part of type ``kind`` (a vendor's own part class, with its own views of the list);
        ``LookupError`` when the list has none (that vendor's grammar made no part)."""
        found = next((p for p in self.parts if isinstance(p, kind)), None)
        if found is None:
            raise LookupError(f"this device list has no {kind.__name__}")
        return found

    @property
    def aot(self) -> bool:
        """True when at least one native image (of any vendor) will be built."""
        return any(p.native for p in self.parts)

    @property
    def vendors(self) -> tuple[str, ...]:
        """The backends whose build steps this list needs (their native code or kept IR), by name."""
        return tuple(p.vendor for p in self.parts if p.builds)

    @property
    def jit_summary(self) -> str:
        """What JIT fallback means for this list, per vendor, in one phrase."""
        phrases = [p.jit_phrase for p in self.parts if p.jit_phrase]
        if phrases:
            return " and ".join(phrases)
        hints = [p.jit_hint for p in self.parts if p.jit_hint]
        if hints and self.jit_fallback:
            from aotwheel import backends

            return f"none (no {backends.default().title} device listed; {'; '.join(hints)})"
        return "off (devices not listed are unsupported)"

    @property
    def sycl_targets(self) -> str:
        """The value for ``-fsycl-targets=`` (never empty: else the default backend's IR target)."""
        found = [t for p in self.parts for t in p.sycl_targets]
        if not found:
            from aotwheel import backends

            default = self.part(backends.default().name)
            found = [default.sycl_fallback] if default is not None else []
        return ",".join(found)

    def to_dict(self) -> dict[str, object]:
        core: dict[str, object] = {
            "input": self.text,
            "jit_fallback": self.jit_fallback,
            "aot": self.aot,
            "vendors": list(self.vendors),
            "jit_summary": self.jit_summary,
            "sycl_targets": self.sycl_targets,
            "expansions": [{"token": e.token, "kind": e.kind, "names": list(e.names)} for e in self.expansions],
        }
        return place(core, [f for p in self.parts for f in p.fields()])




def resolve(
    text: str,
    *,
    jit_fallback: bool = True,
    catalog: object | None = None,
    detect: Detector | None = None,
    tables: Mapping[str, object] | None = None,
) -> DevList:
    """Resolve a ``USE_AOT_DEVLIST`` value.

    ``jit_fallback=False`` drops the IR image (as does the ``no-jit`` token). ``detect`` returns
    the devices on this machine as devlist words (``"12.60.7"``, ``"sm_90"``), for ``native``; by
    default each backend's ``capabilities.native_tokens`` is asked. ``tables`` are backends' device tables
    by name (each toolchain capability's ``table``: what the installed tools know), ``catalog`` the
    default backend's; each backend's built-in one otherwise. Raises :class:`DevlistError` on
    any bad input.
    """
    from aotwheel import backends

    if not isinstance(text, str):
        raise DevlistError(f"USE_AOT_DEVLIST must be a string, not {type(text).__name__}")
    default = backends.default()
    given = {**({default.name: catalog} if catalog is not None else {}), **(tables or {})}
    grammars: dict[str, DevlistGrammar] = {b.name: b.devlist_grammar(given.get(b.name)) for b in backends.all_backends()}
    examples = _examples(grammars[default.name])
    if len(text) > MAX_LENGTH:
        raise DevlistError(
            f"USE_AOT_DEVLIST is too long ({len(text)} characters, limit {MAX_LENGTH}); list devices or use a family name such as {examples.family}"
        )
    _reject_bad_characters(text, grammars[default.name], given)

    tokens = [t for t in _SEPARATORS.split(text) if t]
    if not tokens:
        raise DevlistError(f"USE_AOT_DEVLIST is empty: name devices (e.g. {examples.devices}) or use 'none' for JIT-only")
    if len(tokens) > MAX_TOKENS:
        raise DevlistError(f"USE_AOT_DEVLIST has {len(tokens)} tokens (limit {MAX_TOKENS}); use family names such as {examples.families}")

    expansions: list[Expansion] = []
    saw_none = False
    for index, raw in enumerate(tokens):
        token = raw.lower()
        if token == NONE_TOKEN:
            saw_none = True
            continue
        if token == NO_JIT_TOKEN:
            jit_fallback = False
            continue
        if not _TOKEN_SHAPE.match(token):
            raise DevlistError(f"USE_AOT_DEVLIST: '{raw}' is not a device name; names start with a letter or digit", raw, ())
        if token == NATIVE_TOKEN:
            expansions.append(Expansion(raw, "native", _native(grammars, detect, examples)))
            continue
        owner = (backends.for_token(token) or default).name
        expanded = grammars[owner].expand(token, raw, tokens[index + 1 :])
        if expanded is not None:
            expansions.append(Expansion(raw, expanded[0], expanded[1], owner))

    parts = _finish(grammars, default.name, jit_fallback)
    listed = [n for p in parts for n in p.listed]
    if saw_none and listed:
        raise DevlistError(f"USE_AOT_DEVLIST: 'none' means JIT-only and cannot be combined with devices ({', '.join(listed)}); drop one of them", NONE_TOKEN)
    if not listed and not saw_none:
        raise DevlistError(f"USE_AOT_DEVLIST names no device: add devices (e.g. {examples.device}) or 'none' for JIT-only")
    if saw_none and not jit_fallback:
        raise DevlistError("USE_AOT_DEVLIST: 'none' with JIT fallback off would build no device code at all; name devices or turn JIT fallback on")
    return DevList(parts=parts, jit_fallback=jit_fallback, expansions=tuple(expansions), text=text)


def _finish(grammars: Mapping[str, DevlistGrammar], default: str, jit_fallback: bool) -> tuple[DevlistPart, ...]:
    """Every backend's part, in registry order; the default backend's last to be made, since it
    keeps its IR for all devices when no other vendor builds anything."""
    made: dict[str, DevlistPart | None] = {}
    for name, grammar in grammars.items():
        if name != default:
            made[name] = grammar.finish(jit_fallback=jit_fallback, alone=False)
    alone = not any(p.builds for p in made.values() if p is not None)
    made[default] = grammars[default].finish(jit_fallback=jit_fallback, alone=alone)
    return tuple(p for p in (made[name] for name in grammars) if p is not None)


def _examples(grammar: DevlistGrammar) -> DevlistExamples:
    from aotwheel.backends.capabilities import DevlistExamples

    return grammar.examples or DevlistExamples("a device", "a device list", "a family", "family names")


def _native(grammars: Mapping[str, DevlistGrammar], detect: Detector | None, examples: DevlistExamples) -> tuple[str, ...]:
    """The GPUs on this machine, each word given to the backend that owns it; raises when none is found."""
    from aotwheel import backends

    idents = (detect or _probe_gpus)()
    mine: dict[str, list[str]] = {}
    for ident in idents:
        mine.setdefault((backends.for_token(ident.lower()) or backends.default()).name, []).append(ident)
    names: list[str] = []
    notes: list[str] = []
    for name, grammar in grammars.items():
        found, note = grammar.add_native(mine.get(name, ()))
        names += found
        notes += [note] if note else []
    if not names:
        extra = f" ({'; '.join(notes)})" if notes else ""
        vendors = " or ".join(backends.get(n).title for n, g in grammars.items() if g.detects_native)
        raise DevlistError(f"USE_AOT_DEVLIST: 'native' found no {vendors} GPU on this machine{extra}; name the target devices instead, e.g. {examples.device}",
                           NATIVE_TOKEN)
    return tuple(names)


def _probe_gpus() -> list[str]:
    """Devlist words for the GPUs on this machine: each backend's reading of the probes."""
    from aotwheel import backends

    try:
        from aotwheel.probe import detect_devices
    except ImportError:
        devices = []
    else:
        devices = detect_devices()
    return [word for b in backends.all_backends() if (native := b.capabilities.native_tokens) is not None for word in native(devices)]


def _reject_bad_characters(text: str, default: DevlistGrammar, tables: Mapping[str, object]) -> None:
    """One line for the first character no token may hold; suggestions from the default backend."""
    for pos, char in enumerate(text):
        if char in _ALLOWED:
            continue
        token = _token_around(text, pos)
        if char == "+" and _TOKEN_SHAPE.match(token.lower()):  # a feature setting: gfx90a:xnack+
            continue
        folded = token.translate(_CONFUSABLES).lower()
        suggestions = (folded,) if folded in _KEYWORDS else default.suggest(folded)
        if ord(char) > 127:
            what = f"non-ASCII character '{char}' (U+{ord(char):04X})"
        else:
            what = f"character {_printable(char)}"
        listed = _as_comma_list(token, tables)
        if listed is not None:  # 'acm-g10;acm-g12': a list in another separator, not a misspelt name
            suggestions = (listed,)
            hint = f"; separate device names with commas: {listed}"
        else:
            hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else f"; separate device names with commas, e.g. {_examples(default).devices}"
        raise DevlistError(f"USE_AOT_DEVLIST: {what} in {_printable_token(token)} is not allowed{hint}", token, suggestions)


_OTHER_SEPARATORS = r"[;|/+&]+"  # what other tools' lists use (CMake's ';', shells' '|'); compiled for a bad character only


def _as_comma_list(token: str, tables: Mapping[str, object]) -> str | None:
    """``token`` with its other separators made commas, when every part then resolves on its own."""
    parts = [p for p in re.split(_OTHER_SEPARATORS, token) if p]
    if len(parts) < 2 or any(not set(p) <= _ALLOWED for p in parts):
        return None
    for part in parts:
        try:
            resolve(part, tables=tables, detect=lambda: ())
        except DevlistError:
            return None
    return ",".join(parts)


def _token_around(text: str, pos: int) -> str:
    start = pos
    while start > 0 and text[start - 1] not in ", \t\r\n":
        start -= 1
    end = pos
    while end < len(text) and text[end] not in ", \t\r\n":
        end += 1
    return text[start:end][:64]


def _printable(char: str) -> str:
    if char.isprintable():
        return repr(char)
    import unicodedata  # only for a character no token may hold

    return f"U+{ord(char):04X} ({unicodedata.name(char, 'control character')})"


def _printable_token(token: str) -> str:
    return repr("".join(c if c.isprintable() else "?" for c in token))


def describe(devlist: DevList) -> str:
    """Human-readable, multi-line account of a resolved device list."""
    lines = [line for p in devlist.parts for line in p.describe("targets")]
    vendors = {p.vendor: p for p in devlist.parts}
    for e in devlist.expansions:
        if e.kind == "native":
            lines.append(f"  'native' found: {', '.join(e.names)}")
        elif e.vendor in vendors:
            note = vendors[e.vendor].note(e.token, e.kind, e.names)
            lines += [note] if note else []
    lines += [line for p in devlist.parts for line in p.describe("images")]
    lines.append(f"JIT fallback: {devlist.jit_summary}")
    lines += [line for p in devlist.parts for line in p.describe("tools")]
    lines.append(f"-fsycl-targets={devlist.sycl_targets}")
    return "\n".join(lines)


__all__ = ["DEFAULT_DEVLIST", "DevList", "Expansion", "describe", "env_flag", "resolve"]
