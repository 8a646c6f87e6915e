"""The AMD share of ``USE_AOT_DEVLIST``: target ids (``gfx90a``, ``gfx1030``, ``gfx90a:xnack-``),
each one code object that hipcc builds (:mod:`aotwheel.backends.amd.buildsteps`), as the resolver
(:mod:`aotwheel.devlist`) asks for them through :class:`aotwheel.backends.protocol.DevlistGrammar`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aotwheel.backends.amd import AMD

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotwheel.results import ProbedDevice


@dataclass(frozen=True)
class AmdPart:
    """The AMD part of a resolved list: the code objects hipcc builds, in list order."""

    targets: tuple[str, ...]  # canonical target ids
    vendor: str = AMD

    @property
    def listed(self) -> tuple[str, ...]:
        return self.targets

    @property
    def builds(self) -> bool:
        return bool(self.targets)

    @property
    def native(self) -> bool:
        return bool(self.targets)

    @property
    def sycl_targets(self) -> tuple[str, ...]:
        return ()  # hipcc builds them, not a SYCL compiler

    @property
    def sycl_fallback(self) -> str:
        return ""

    @property
    def jit_phrase(self) -> str:
        return ""  # hipcc 5.x keeps no AMD SPIR-V: a processor not listed gets no code

    @property
    def jit_hint(self) -> str:
        return ""

    def fields(self) -> list[tuple[str, str, object]]:
        # "amd": the targets, and HIP_ARCHITECTURES' spelling for CMake projects that build HIP themselves.
        return [("expansions", AMD, {"targets": list(self.targets), "cmake_architectures": ";".join(self.targets)}
                 if self.targets else None)]

    def cmake_variables(self, field_defaults: bool) -> dict[str, object]:
        return {"AMD": list(self.targets)}  # aotwheel_resolve_devlist(<out>)'s <out>_AMD

    def describe(self, section: str) -> list[str]:
        if section != "images" or not self.targets:
            return []
        lines = [f"  {t:<10} AMD code object (native; no fallback to another processor)" for t in self.targets]
        return [*lines, "hipcc " + " ".join(f"--offload-arch={t}" for t in self.targets)]

    def note(self, token: str, kind: str, names: Sequence[str]) -> str | None:
        return None

    def formats(self) -> dict[str, str]:
        return {}

    def report(self, field_defaults: bool) -> tuple[dict[str, object], list[str]]:
        return {}, []


class AmdGrammar:
    """``gfx*`` target ids for one devlist value; no AMD GPU is detected (no ROCm probe)."""

    detects_native = False
    examples = None

    def __init__(self) -> None:
        self._targets: list[str] = []

    def expand(self, token: str, raw: str, rest: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
        from aotwheel.backends.amd.targets import parse_listed  # here: a list with no AMD token never imports it

        target = str(parse_listed(token, raw))
        if target not in self._targets:
            self._targets.append(target)
        return AMD, (target,)

    def add_native(self, idents: Sequence[str]) -> tuple[tuple[str, ...], str]:
        return (), ""

    def suggest(self, token: str) -> tuple[str, ...]:
        from aotwheel.backends.amd.targets import parse_listed
        from aotwheel.errors import DevlistError

        try:
            return (str(parse_listed(token)),)
        except DevlistError as exc:
            return tuple(exc.suggestions)

    def devices(self, token: str, raw: str, source: str) -> list[ProbedDevice]:
        """An AMD GPU by its target id (``gfx90a``, ``gfx90a:xnack-``; AMD GPUs are never probed)."""
        from aotwheel.backends.amd.targets import require_target_id
        from aotwheel.results import ProbedDevice

        tid = str(require_target_id(token))
        return [ProbedDevice(name=f"AMD {tid}", backend="override", kind="gpu", vendor=AMD, catalog=tid)]

    def finish(self, *, jit_fallback: bool, alone: bool) -> AmdPart:
        return AmdPart(tuple(self._targets))
