"""Verdicts for AMD GPUs: how the HIP runtime picks a code object from a clang offload bundle.

The runtime (CLR's code object lookup through comgr) takes the bundle entry whose target id
matches the device's ISA: the same processor (or a generic processor that lists it) and every
feature the entry fixes (``xnack±``, ``sramecc±``) equal to the device's; features the entry
leaves out match either setting. There is no fallback to another processor: without a match the
launch fails ("no kernel image is available" / hipErrorNoBinaryForGpu) -- unless the bundle also
carries AMD's SPIR-V (``spirv64-amd-amdhsa--amdgcnspirv``), which the runtime compiles at load.

No AMD GPU or ROCm runtime is reachable here: these rules are exercised with ``--device gfx90a``
style overrides only; aotwheel has no AMD device probe.
"""

from __future__ import annotations

from aotwheel.backends.amd import AMD
from aotwheel.results import JIT, NATIVE, UNKNOWN, UNSUPPORTED, Verdict

# The lookup's modules are imported by the functions that judge an AMD device: every check asks
# SPIRV_IR of this module (the AMD backend's code_in), also for a device of another vendor.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from aotwheel.acceptable import Acceptable
    from aotwheel.backends.amd.targets import TargetId
    from aotwheel.results import Device, VerdictKind

SPIRV_IR = "amdgcnspirv"  # the IR form a bundle's spirv64-amd-amdhsa entry gives

RULES = {
    "amd-exact": "a code object for the device's processor whose features match the device",
    "amd-generic": "a code object for a generic processor that covers the device",
    "amd-feature": "a code object for the processor, but built for a feature setting the device may not run",
    "amd-spirv": "no code object for the device; the bundle's AMD SPIR-V is compiled at load",
    "amd-no-match": "no code object for the device's processor (HIP has no other fallback)",
}


CODE_OBJECT, SPIRV = "code-object", "spirv"  # the image kinds offered to the lookup


def acceptable(dev: TargetId) -> list[Acceptable]:
    """What the HIP runtime takes on a device of target id ``dev``, best first: a code object for
    its processor with matching features, then one whose features the device was not named with
    (``unknown``: it depends on the device's setting), the same for each generic processor that
    covers it, then the bundle's AMD SPIR-V (JIT). Features are checked on the matched image."""
    from aotwheel.acceptable import Acceptable
    from aotwheel.backends.amd.targets import GENERIC

    generic = tuple(g for g, covered in GENERIC.items() if dev.processor in covered)
    order: list[Acceptable] = []
    for rule, processors in (("amd-exact", (dev.processor,)), ("amd-generic", generic)):
        if processors:
            order += [Acceptable(CODE_OBJECT, processors, NATIVE, rule), Acceptable(CODE_OBJECT, processors, UNKNOWN, "amd-feature")]
    return [*order, Acceptable(SPIRV, (SPIRV_IR,), JIT, "amd-spirv")]


def decide(targets: Sequence[str], ir: Sequence[str], device: Device, *, binary: str | None = None) -> Verdict:
    """The HIP runtime's verdict for a binary carrying code objects ``targets`` (target ids)."""
    from aotwheel.acceptable import Offered, first_acceptable
    from aotwheel.backends.amd.targets import parse_target_id, runs_on

    label = str(getattr(device, "label", None) or device.catalog or device.name)  # label: a ProbedDevice's, not the protocol's
    dev = parse_target_id(device.catalog or "")
    names = tuple(dict.fromkeys(targets))
    embedded = ", ".join(names) or "none"

    def make(verdict: VerdictKind, image: str | None, rule: str, reason: str) -> Verdict:
        return Verdict(label, None, verdict, image, reason, rule, binary, "gpu", names, AMD)

    if dev is None:
        return make(UNKNOWN, None, "amd-no-match", f"{label}'s AMD target (gfx…) is unknown; native if it is one of {embedded}")
    codes = [(t, c) for t in names if (c := parse_target_id(t)) is not None]
    offered = [Offered(CODE_OBJECT, c.processor, (t, c)) for t, c in codes] + [Offered(SPIRV, k) for k in ir if k == SPIRV_IR]

    def validate(rank: Acceptable, image: Offered) -> tuple[bool, str]:
        if rank.kind == SPIRV:
            return True, ""
        why = runs_on(image.item[1], dev)
        return why is None and (rank.verdict != NATIVE or _certain(image.item[1], dev)), why or ""

    picked = first_acceptable(acceptable(dev), offered, validate)
    rank, hit = picked.acceptable, picked.image
    if rank is not None and hit is not None and rank.kind == CODE_OBJECT:
        t = hit.item[0]
        if rank.verdict == NATIVE:
            return make(NATIVE, t, rank.rule, f"native: code object {t} {'is for' if rank.rule == 'amd-exact' else 'covers'} {dev}")
        fits = [(n, c) for n, c in codes if c.processor in rank.targets and runs_on(c, dev) is None]
        return _depends(make, fits, dev, ir)
    why = f"no code object for {dev} among {embedded}"
    # the exact processor's code objects the feature rank refused (none fits: it would have answered)
    rejected = [f"{image.item[0]} ({reason})" for r, image, reason in picked.refused if r.verdict == UNKNOWN and r.targets == (dev.processor,)]
    if rejected:
        why += "; rejected: " + "; ".join(rejected)
    if rank is not None:
        return make(JIT, "spirv64-amd-amdhsa--amdgcnspirv", "amd-spirv", f"JIT: {why}; the runtime compiles the bundle's AMD SPIR-V at load")
    return make(UNSUPPORTED, None, "amd-no-match", f"unsupported: {why}; HIP code objects have no fallback to another processor (hipErrorNoBinaryForGpu)")


def _certain(code: TargetId, dev: TargetId) -> bool:
    """Every feature the code object fixes is one the device was named with (else it depends on
    how the device runs: ``HSA_XNACK``; sramecc is a board setting)."""
    from aotwheel.backends.amd.targets import FEATURES

    return all(f in dev.features or f not in code.features for f in FEATURES)


def _depends(make: Any, fits: list[tuple[str, TargetId]], dev: TargetId, ir: Sequence[str]) -> Verdict:
    """Code objects exist only for feature settings the device was not named with: the answer
    depends on how the device runs (``HSA_XNACK``; sramecc is a board setting)."""
    settings = sorted({f"{f}{'+' if v else '-'}" for _, c in fits for f, v in c.features.items() if f not in dev.features})
    other = "JIT from the bundle's AMD SPIR-V" if SPIRV_IR in ir else "unsupported"
    t = fits[0][0]
    return make(UNKNOWN, None, "amd-feature",
                f"native only if {dev.processor} runs with {' and '.join(settings)} (code object {t}; name the device as e.g. "
                f"{dev.processor}:{settings[0]} to decide), else {other}")
