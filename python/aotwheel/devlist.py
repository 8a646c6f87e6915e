"""``USE_AOT_DEVLIST``: the one grammar for which devices get ahead-of-time device code.

Grammar (case-insensitive; tokens separated by commas and/or whitespace)::

    devlist  := token ( [,\\s]+ token )*
    token    := device | alias | generic | sycl-arch | ip | pci-id | group | range | "none" | "native" | "no-jit"
    device   := a catalog name              pvc, acm-g10, bmg-g21 (or any product the installed ocloc knows)
    alias    := another name of one target  ats-m150, dg2-g10 (-> acm-g10)
    sycl-arch:= intel_gpu_<...>             intel_gpu_pvc
    ip       := maj.min.rev                 12.60.7
    generic  := ocloc's generic name        dg2, mtl, bmg, ptl (-> the group's root product: acm-g10, mtl-u, bmg-g21, ptl-h)
    pci-id   := 0x<device id>               0x9a49 (-> tgllp)
    group    := family or release name      xe2, xe-hpc, xe3p (-> its shipping products)
    range    := first:last | first: | :last dg1:acm-g10, xe-hpg: (-> the shipping products between, by IP)
    none     := no AOT: JIT from SPIR-V only
    native   := the devices found on this machine (error if none)
    no-jit   := do not keep SPIR-V for JIT (same as USE_AOT_JIT_FALLBACK=OFF)
    nvidia   := sm_XY | sm_XYa | sm_XYf | compute_XY | nvidia_gpu_sm_XY | ptx
                (see aotwheel.backends.nvidia.targets; ``ptx`` keeps PTX of the newest sm_XY listed)

Duplicates and aliases collapse; order is stable (first mention wins). Anything else is a
:class:`~aotwheel.errors.DevlistError` with one line naming the bad token and the closest names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aotwheel.backends.nvidia import targets as cuda
from aotwheel.backends.intel.catalog import Catalog, Device, format_ip, load_catalog
from aotwheel.backends.intel import grammar as intel_grammar
from aotwheel.config import DEFAULT_DEVLIST
from aotwheel.config import flag as env_flag
from aotwheel.errors import DevlistError
from aotwheel.model import NVIDIA

MAX_LENGTH = 4096
MAX_TOKENS = 256

NONE_TOKEN = "none"
NATIVE_TOKEN = "native"
NO_JIT_TOKEN = "no-jit"
_KEYWORDS = (NONE_TOKEN, NATIVE_TOKEN, NO_JIT_TOKEN)

_SEPARATORS = re.compile(r"[,\s]+")
# ':' for ocloc's product ranges (dg1:acm-g10, xe-hpg:, :dg1).
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:, \t\r\n")
_TOKEN_SHAPE = re.compile(r"^(?:[a-z0-9][a-z0-9._-]*)?(?::(?:[a-z0-9][a-z0-9._-]*)?)?$")

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
    kind: str  # "device" | "alias" | "generic" | "sycl-arch" | "ip" | "pci-id" | "group" | "range" | "native"
    names: tuple[str, ...]


@dataclass(frozen=True)
class DevList:
    """A resolved device list: what will be compiled ahead of time, and whether SPIR-V is kept."""

    targets: tuple[Device, ...]
    jit_fallback: bool
    expansions: tuple[Expansion, ...] = ()
    text: str = ""
    cuda: cuda.CudaPlan | None = None  # the NVIDIA half (sm_XY / compute_XY), if any

    @property
    def aot(self) -> bool:
        """True when at least one native image (Intel or NVIDIA cubin) will be built."""
        return bool(self.targets) or bool(self.cuda and self.cuda.cubins)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)

    @property
    def spirv(self) -> bool:
        """True when SPIR-V is kept for Intel JIT: JIT fallback is on and the list names Intel
        devices or no device at all (``none``). An NVIDIA-only list keeps no SPIR-V (its JIT
        fallback is PTX, asked for with ``ptx`` or ``compute_XY``)."""
        return self.jit_fallback and (bool(self.targets) or not self.cuda)

    @property
    def vendors(self) -> tuple[str, ...]:
        """The vendors whose build steps this list needs: ``intel`` (ocloc/SPIR-V), ``nvidia`` (nvcc)."""
        return (("intel",) if self.targets or self.spirv else ()) + (("nvidia",) if self.cuda else ())

    @property
    def jit_summary(self) -> str:
        """What JIT fallback means for this list, per vendor, in one phrase."""
        parts = ["SPIR-V for Intel devices"] if self.spirv else []
        if self.cuda and self.cuda.ptx:
            parts.append(f"PTX {', '.join(t.name for t in self.cuda.ptx)} for NVIDIA GPUs")
        if parts:
            return " and ".join(parts)
        if self.cuda and self.jit_fallback:
            return "none (no Intel device listed; add 'ptx' to keep NVIDIA PTX)"
        return "off (devices not listed are unsupported)"

    @property
    def ocloc_device(self) -> str:
        """The value for ``ocloc -device`` / ``-Xs "-device ..."`` (empty for ``none``)."""
        return ",".join(self.names)

    @property
    def sycl_targets(self) -> str:
        """The value for ``-fsycl-targets=`` (NVIDIA cubins as ``nvidia_gpu_sm_XY``)."""
        if self.targets:
            intel = ["spir64_gen", "spir64"] if self.jit_fallback else ["spir64_gen"]
        else:
            intel = ["spir64"] if self.spirv or not (self.cuda and self.cuda.cubins) else []  # never empty
        nvidia = [f"nvidia_gpu_{t.name}" for t in self.cuda.cubins] if self.cuda else []
        return ",".join(intel + nvidia)

    def to_dict(self) -> dict[str, object]:
        return {
            "input": self.text,
            "targets": [t.to_dict() for t in self.targets],
            "jit_fallback": self.jit_fallback,
            "aot": self.aot,
            "spirv": self.spirv,
            "vendors": list(self.vendors),
            "jit_summary": self.jit_summary,
            "ocloc_device": self.ocloc_device,
            "sycl_targets": self.sycl_targets,
            "expansions": [{"token": e.token, "kind": e.kind, "names": list(e.names)} for e in self.expansions],
            "cuda": self.cuda.to_dict() if self.cuda else None,
        }


Detector = Callable[[], Sequence[str]]


def resolve(
    text: str,
    *,
    jit_fallback: bool = True,
    catalog: Catalog | None = None,
    detect: Detector | None = None,
) -> DevList:
    """Resolve a ``USE_AOT_DEVLIST`` value.

    ``jit_fallback=False`` drops the SPIR-V image (as does the ``no-jit`` token). ``detect``
    returns the IP versions (``"12.60.7"``) of the devices on this machine, for ``native``;
    by default the device probes are asked. Raises :class:`DevlistError` on any bad input.
    """
    if not isinstance(text, str):
        raise DevlistError(f"USE_AOT_DEVLIST must be a string, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise DevlistError(f"USE_AOT_DEVLIST is too long ({len(text)} characters, limit {MAX_LENGTH}); list devices or use a family name such as dg2")
    catalog = catalog or load_catalog()
    _reject_bad_characters(text, catalog)

    tokens = [t for t in _SEPARATORS.split(text) if t]
    if not tokens:
        raise DevlistError("USE_AOT_DEVLIST is empty: name devices (e.g. pvc,acm-g10) or use 'none' for JIT-only")
    if len(tokens) > MAX_TOKENS:
        raise DevlistError(f"USE_AOT_DEVLIST has {len(tokens)} tokens (limit {MAX_TOKENS}); use family names such as dg2 or xe-hpc")

    targets: dict[str, Device] = {}
    nvidia: list[cuda.CudaTarget] = []
    keep_newest_ptx = False
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
        if _owner(token) == "amd":
            raise DevlistError(f"USE_AOT_DEVLIST: '{raw}' is an AMD GPU target; aotwheel inspects and checks HIP code but does not "
                               "build it: pass --offload-arch to hipcc, and list Intel/NVIDIA devices here", raw)
        if _owner(token) == NVIDIA:
            if token == cuda.PTX_TOKEN:
                keep_newest_ptx = True
            else:
                target = cuda.parse_cuda_target(token)
                nvidia.append(target)
                expansions.append(Expansion(raw, "nvidia", (target.name,)))
            continue
        kind, devices, found_nvidia = _lookup(token, raw, tokens[index + 1 :], catalog, detect)
        nvidia.extend(found_nvidia)
        expansions.append(Expansion(raw, kind, tuple(d.name for d in devices) + tuple(t.name for t in found_nvidia)))
        for dev in devices:
            targets.setdefault(dev.name, dev)

    plan = cuda.plan(nvidia, keep_newest_ptx=keep_newest_ptx, jit_fallback=jit_fallback) if nvidia or keep_newest_ptx else None
    if saw_none and (targets or plan):
        listed = ", ".join([*targets, *(plan.names if plan else ())])
        raise DevlistError(f"USE_AOT_DEVLIST: 'none' means JIT-only and cannot be combined with devices ({listed}); drop one of them", NONE_TOKEN)
    if not targets and not plan and not saw_none:
        raise DevlistError("USE_AOT_DEVLIST names no device: add devices (e.g. pvc) or 'none' for JIT-only")
    if saw_none and not jit_fallback:
        raise DevlistError("USE_AOT_DEVLIST: 'none' with JIT fallback off would build no device code at all; name devices or turn JIT fallback on")
    return DevList(targets=tuple(targets.values()), jit_fallback=jit_fallback, expansions=tuple(expansions), text=text, cuda=plan)


def _lookup(
    token: str, raw: str, rest: Sequence[str], catalog: Catalog, detect: Detector | None
) -> tuple[str, tuple[Device, ...], tuple[cuda.CudaTarget, ...]]:
    if token == NATIVE_TOKEN:
        return ("native", *_native(catalog, detect))
    kind, devices = intel_grammar.lookup(token, raw, rest, catalog)
    return kind, devices, ()


def _owner(token: str) -> str | None:
    """The backend whose grammar owns ``token`` (the resolver dispatches on it)."""
    from aotwheel import backends

    owner = backends.for_token(token)
    return owner.name if owner is not None else None


def _native(catalog: Catalog, detect: Detector | None) -> tuple[tuple[Device, ...], tuple[cuda.CudaTarget, ...]]:
    """The GPUs on this machine: Intel ones by IP version (``12.60.7``), NVIDIA ones as ``sm_XY``."""
    if detect is None:
        detect = _probe_gpus
    found: list[Device] = []
    nvidia: list[cuda.CudaTarget] = []
    unknown: list[str] = []
    for ident in detect():
        if cuda.is_cuda_token(ident):
            target = cuda.parse_cuda_target(ident)
            if target not in nvidia:
                nvidia.append(target)
            continue
        dev = catalog.by_ip(ident)
        if dev is None:
            unknown.append(ident)
        elif dev not in found:
            found.append(dev)
    if not found and not nvidia:
        extra = f" (found IP versions unknown to the catalog: {', '.join(unknown)})" if unknown else ""
        raise DevlistError(f"USE_AOT_DEVLIST: 'native' found no Intel or NVIDIA GPU on this machine{extra}; name the target devices instead, e.g. pvc", NATIVE_TOKEN)
    return tuple(found), tuple(nvidia)


def _probe_gpus() -> list[str]:
    """IP versions of the Intel GPUs and ``sm_XY`` of the NVIDIA GPUs the probes see."""
    found: list[str] = []
    try:
        from aotwheel.probe import detect_devices
    except ImportError:
        pass
    else:
        found += [d.ip for d in detect_devices() if d.ip and d.kind == "gpu"]
    try:
        from aotwheel.backends.nvidia.probe import probe_cuda
    except ImportError:
        pass
    else:
        found += [f"sm_{cuda.cc_to_arch(d.cc)}" for d in probe_cuda().devices]
    return found


def _reject_bad_characters(text: str, catalog: Catalog) -> None:
    for pos, char in enumerate(text):
        if char in _ALLOWED:
            continue
        token = _token_around(text, pos)
        folded = token.translate(_CONFUSABLES).lower()
        exact = catalog.by_name(folded) or catalog.group(folded) or folded in _KEYWORDS
        suggestions = (folded,) if exact else intel_grammar.suggest(folded, (), catalog)
        if ord(char) > 127:
            what = f"non-ASCII character '{char}' (U+{ord(char):04X})"
        else:
            what = f"character {_printable(char)}"
        listed = _as_comma_list(token, catalog)
        if listed is not None:  # 'acm-g10;acm-g12': a list in another separator, not a misspelt name
            suggestions = (listed,)
            hint = f"; separate device names with commas: {listed}"
        else:
            hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else "; separate device names with commas, e.g. pvc,acm-g10"
        raise DevlistError(f"USE_AOT_DEVLIST: {what} in {_printable_token(token)} is not allowed{hint}", token, suggestions)


_OTHER_SEPARATORS = re.compile(r"[;|/+&]+")  # what other tools' lists use (CMake's ';', shells' '|')


def _as_comma_list(token: str, catalog: Catalog) -> str | None:
    """``token`` with its other separators made commas, when every part then resolves on its own."""
    parts = [p for p in _OTHER_SEPARATORS.split(token) if p]
    if len(parts) < 2 or any(not set(p) <= _ALLOWED for p in parts):
        return None
    for part in parts:
        try:
            resolve(part, catalog=catalog, detect=lambda: ())
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
    return f"U+{ord(char):04X} ({unicodedata.name(char, 'control character')})"


def _printable_token(token: str) -> str:
    return repr("".join(c if c.isprintable() else "?" for c in token))


def describe(devlist: DevList) -> str:
    """Human-readable, multi-line account of a resolved device list."""
    lines = []
    if devlist.targets:
        width = max(len(t.name) for t in devlist.targets)
        for t in devlist.targets:
            aliases = f"  aka {', '.join(t.aliases)}" if t.aliases else ""
            lines.append(f"  {t.name:<{width}}  {t.ip:<8} {t.description}{aliases}")
    elif devlist.cuda:
        lines.append("  (no Intel targets: nothing is built for Intel GPUs)")
    else:
        lines.append("  (no ahead-of-time targets: every device will JIT-compile from SPIR-V)")
    for e in devlist.expansions:
        if e.kind == "group":
            lines.append(f"  '{e.token}' is a family: its shipping products are {', '.join(e.names)}")
        elif e.kind == "range":
            lines.append(f"  '{e.token}' is a range: its shipping products are {', '.join(e.names)}")
        elif e.kind == "generic":
            lines.append(f"  '{e.token}' is ocloc's generic name for {e.names[0]}: one binary, which the driver also runs "
                         f"on the rest of the {e.token.lower()} group (compute-runtime's compatibility mapping)")
        elif e.kind == "native":
            lines.append(f"  'native' found: {', '.join(e.names)}")
    if devlist.cuda:
        for image in devlist.cuda.targets:
            what = "cubin (native)" if image.kind == "cubin" else "PTX (JIT on newer GPUs)"
            lines.append(f"  {image.name:<10} NVIDIA {what}")
        lines.append(f"nvcc {' '.join(devlist.cuda.gencode_flags())}")
    lines.append(f"JIT fallback: {devlist.jit_summary}")
    if devlist.ocloc_device:
        lines.append(f"ocloc -device {devlist.ocloc_device}")
    lines.append(f"-fsycl-targets={devlist.sycl_targets}")
    return "\n".join(lines)


__all__ = ["DEFAULT_DEVLIST", "DevList", "Expansion", "describe", "env_flag", "resolve", "format_ip"]
