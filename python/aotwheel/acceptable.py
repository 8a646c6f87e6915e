"""Verdicts as "the first acceptable image": a backend orders, the core picks.

Every GPU driver looks an image up the same way packaging's ``sys_tags()`` orders wheel tags: a
list of acceptable images, best first, and the first one the binary carries wins. A backend says,
for one device, which images its driver takes and in which order (:class:`Acceptable` values:
Intel's exact IP, then the same major.minor, the product's generic member, compatible products,
then SPIR-V; NVIDIA's exact cubin, then same-major and family cubins, then PTX; AMD's code object
for the device's target id, then a generic processor's, then AMD SPIR-V), and names the images of
one binary (:class:`Offered`); :func:`first_acceptable` walks the order and returns the
:class:`Picked` image, with every image the driver matched and then refused. The backend words
the :class:`aotwheel.results.Verdict` from that pick: the verdict kind and the rule key are the
:class:`Acceptable`'s, unsupported when nothing was picked.

Imports the standard library and :mod:`aotwheel.model` only, and names no vendor: the order is
data a backend builds, this module only matches names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from aotwheel.results import UNSUPPORTED, VerdictKind


@dataclass(frozen=True)
class Acceptable:
    """One rank of a driver's lookup: images it takes for a device, and what taking one means."""

    kind: str  # the backend's image kind at this rank: "member", "cubin", "ptx", "code-object", "spirv", ...
    targets: tuple[str, ...]  # image names taken at this rank; the first image of the binary named by any wins
    verdict: VerdictKind  # NATIVE (loaded as is), JIT (compiled at load), UNKNOWN (depends on an unreported device setting)
    rule: str  # the backend's rule key for a verdict decided here
    prefix: bool = False  # ``targets`` are prefixes of the image name (Intel's archive filters)
    first_only: bool = False  # the driver validates only the first image that matches; a refusal moves to the next rank


@dataclass(frozen=True)
class Offered:
    """One image of a binary as its backend names it for matching."""

    kind: str
    name: str
    item: Any = None  # the backend's own record of the image (a Target, a CudaTarget, a target id, an Image)


@dataclass(frozen=True)
class Picked:
    """The result of one lookup: the rank and image the driver takes (``None``: none), the
    validator's words for it, and each (rank, image, why) the driver matched and then refused."""

    acceptable: Acceptable | None
    image: Offered | None
    why: str = ""
    refused: tuple[tuple[Acceptable, Offered, str], ...] = ()

    @property
    def verdict(self) -> VerdictKind:
        """The rank's verdict kind, ``unsupported`` when nothing was picked."""
        return self.acceptable.verdict if self.acceptable is not None else UNSUPPORTED

    @property
    def rule(self) -> str | None:
        return self.acceptable.rule if self.acceptable is not None else None


# (rank, image) -> (accepted, why): the driver's own check of an image a rank matched (Intel's
# validateTargetDevice, a CPU compiler refusing build options); without one every match is taken.
Validator = Callable[[Acceptable, Offered], tuple[bool, str]]


def matches(acceptable: Acceptable, image: Offered) -> bool:
    """Whether ``image`` is one ``acceptable`` names (same kind; equal name, or a prefix of it)."""
    if image.kind != acceptable.kind:
        return False
    if acceptable.prefix:
        return image.name.startswith(acceptable.targets)
    return image.name in acceptable.targets


def first_acceptable(order: Iterable[Acceptable], images: Sequence[Offered], validate: Validator | None = None) -> Picked:
    """Walk ``order`` (best first) over ``images`` (in the binary's order) and pick the first
    match the driver accepts. ``order`` may be a generator: it is read only until a pick."""
    by_name: dict[tuple[str, str], list[Offered]] = {}
    for image in images:
        by_name.setdefault((image.kind, image.name), []).append(image)
    refused: list[tuple[Acceptable, Offered, str]] = []
    for rank in order:
        if rank.prefix:
            hits = [i for i in images if matches(rank, i)]
        elif len(rank.targets) == 1:
            hits = by_name.get((rank.kind, rank.targets[0]), [])
        else:
            hits = [i for i in images if matches(rank, i)]
        for image in hits[:1] if rank.first_only else hits:
            if validate is None:
                return Picked(rank, image, "", tuple(refused))
            ok, why = validate(rank, image)
            if ok:
                return Picked(rank, image, why, tuple(refused))
            refused.append((rank, image, why))
    return Picked(None, None, "", tuple(refused))
