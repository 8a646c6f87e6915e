"""Native coverage: the fewest native images that compute-runtime runs natively on every listed
device, from the oldest driver release the user supports on.

An image is one ocloc build (its product config is the built device's IP); its archive member
name decides which devices' lookups find it. ``64.<ip>`` (one image per device, as aotwheel named
members before) is found by that device only; ``64.<generic>`` (what ``ocloc -device bmg,ptl``
writes: ``bmg`` builds bmg-g21, ``ptl`` ptl-h) is found by every device of the product (bmg-g31's
lookup tries ``64.bmg``, WCL runs as ptl) and, from 25.44, by the products whose fallback names it
(lnl -> bmg); the driver then runs it where its compatibility mapping lets the root's image serve
the device. None of that is a table here: every candidate archive is judged by
:func:`aotwheel.backends.intel.rules.decide` at each modelled release from the floor on
(:data:`rules.BREAKPOINTS`), the same rules ``aotwheel check`` words its verdicts with, and the
driver in simulation mode tests them (tests/test_coverage_driver.py).

:func:`plan` keeps a plan only if, at the floor and every later release, every listed device is
native and no catalog device is served less than by one image per device; of those it takes the
fewest images, then the one that keeps a generic name the user wrote (``bmg`` means the shared
image), then the fewest generic members (IP members where sharing saves nothing). Generic members
are offered only where the ocloc in use knows the generic name (25.18 and newer; Debian 12's
22.43 knows none): the archive then equals what that ocloc writes for the same ``-device`` list.

The floor (:data:`MIN_DRIVER`, ``USE_AOT_MIN_DRIVER``) defaults to the release that first runs every
listed device at all (:data:`aotwheel.backends.intel.ocloc.FIRST_OCLOC`: the compute-runtime release
whose ocloc first builds it, as its driver first runs it), so by default no driver that runs a
listed device loses native code; a user who states a newer floor (``26.05``) gets fewer images.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from aotwheel.backends.intel import rules
from aotwheel.backends.intel.variables import MIN_DRIVER
from aotwheel.errors import SettingError

TYPE_CHECKING = False  # not typing's: aotwheel resolve plans with no typing
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

Release = rules.Release
OLDEST: Release = (0, 0)  # no floor: every modelled release


def parse_release(text: str | None, what: str = MIN_DRIVER.name) -> Release | None:
    """``(26, 5)`` from ``26.05`` (or a whole driver version such as ``26.05.37020.3``); None for
    empty or ``auto`` (the default floor). Anything else is one :class:`SettingError`."""
    value = (text or "").strip().lower()
    if value in ("", "auto"):
        return None
    m = re.fullmatch(r"(\d{2})\.(\d{1,2})(?:\.\d+){0,2}", value)
    if not m or not 1 <= int(m[2]) <= 53:
        raise SettingError(f"{what}='{text}' is not a compute-runtime release; write year.week as its release "
                           "tags do (e.g. 26.05), or auto for the release that first runs every listed device")
    return int(m[1]), int(m[2])


def release_text(release: Release) -> str:
    return "any" if release == OLDEST else rules.release_text(release)


def first_release(device: str) -> Release:
    """The release that first runs ``device`` (its first ocloc's; :data:`OLDEST` where that is
    older than every modelled release): no claim about a driver before it holds."""
    from aotwheel.backends.intel.ocloc import FIRST_OCLOC  # a dict; ocloc's module imports subprocess

    return parse_release(FIRST_OCLOC.get(device)) or OLDEST


def default_floor(devices: Iterable[str]) -> Release:
    """The release that first runs every listed device: the newest :func:`first_release` among them."""
    return max((first_release(d) for d in devices), default=OLDEST)


@dataclass(frozen=True)
class Image:
    """One native image of the plan: built as ``ocloc -device <token>`` (the same binary as its
    root device's), stored as archive member ``member``, serving the listed ``serves`` natively.
    A candidate of the plan (``serves`` empty) is also what the driver's lookup reads as an archive
    member (:func:`rules.native_image`: its ``member`` and ``ip``, a zebin with a product config)."""

    member: str  # "64.bmg" or "64.20.1.0"
    token: str  # ocloc's -device word: the generic name, else the device's name
    device: str  # the catalog device whose build this is (bmg-g21 for bmg)
    ip: str  # its product config
    serves: tuple[str, ...]  # listed devices it serves natively at the floor (list order)

    @property
    def generic(self) -> bool:
        return self.member != f"{rules.POINTER_BITS}.{self.ip}"


@dataclass(frozen=True)
class Served:
    """A device the plan's archive runs natively: from which member, since which release."""

    device: str
    ip: str
    member: str
    since: Release  # the first modelled release from the floor on that runs it natively (the floor itself, or later)
    listed: bool


@dataclass(frozen=True)
class Coverage:
    """The chosen images, the floor they were chosen for, and what they serve natively."""

    images: tuple[Image, ...]
    floor: Release
    stated: bool  # the user stated the floor (else: the default)
    served: tuple[Served, ...]
    generic_names: bool  # the ocloc in use knows generic names (sharing was possible)
    note: str = ""  # what the plan leaves on the table (an ocloc without generic names)

    @property
    def tokens(self) -> tuple[str, ...]:
        """``ocloc -device`` words, one per image: what icpx's ``-Xs -device`` gets."""
        return tuple(i.token for i in self.images)

    def member_of(self, device: str) -> str | None:
        """The archive member of the image built for ``device`` (None: the device has no image of its own)."""
        return next((i.member for i in self.images if i.device == device), None)

    def lines(self) -> list[str]:
        """``aotwheel resolve``'s coverage lines."""
        floor = f"driver {release_text(self.floor)} and newer" if self.floor != OLDEST else "any driver"
        why = "stated" if self.stated else "default: the release that first runs every listed device"
        out = [f"native coverage ({floor}; {why}): {len(self.images)} image{'s' * (len(self.images) != 1)} "
               f"for {sum(s.listed for s in self.served)} listed device{'s' * (sum(s.listed for s in self.served) != 1)}"]
        width = max((len(i.member) for i in self.images), default=0)
        for image in self.images:
            listed = [f"{s.device}{'' if s.since == self.floor else f' (from {release_text(s.since)})'}"
                      for s in self.served if s.member == image.member and s.listed]
            extra = [f"{s.device} (from {release_text(s.since)})" if s.since != self.floor else s.device
                     for s in self.served if s.member == image.member and not s.listed]
            built = f"ocloc -device {image.token}" + (f" = {image.device}" if image.token != image.device else "")
            text = f"  {image.member:<{width}}  {built}: {', '.join(listed)}"
            if extra:
                text += f"; also {', '.join(extra)}"
            out.append(text)
        if self.note:
            out.append(f"  ({self.note})")
        return out

    def to_dict(self) -> dict[str, object]:
        return {
            "floor": release_text(self.floor), "floor_stated": self.stated, "generic_names": self.generic_names,
            "images": [{"member": i.member, "ocloc_device": i.token, "device": i.device, "ip": i.ip, "serves": list(i.serves)}
                       for i in self.images],
            "served": [{"device": s.device, "ip": s.ip, "member": s.member, "since": release_text(s.since), "listed": s.listed}
                       for s in self.served],
        }


@dataclass
class _Device:
    """A device as :func:`rules.decide` reads one (:class:`aotwheel.results.Device`)."""

    name: str
    ip: str | None
    catalog: str | None
    kind: str = "gpu"
    vendor: str = "intel"


# Every release at which the modelled lookup or validation changes: the mapping's and fallback's
# (rules.BREAKPOINTS) and the validation's own (product config from 22.53, legacy images ignored from 26.18).
CHANGES: tuple[Release, ...] = tuple(sorted({*rules.BREAKPOINTS, rules.PRODUCT_CONFIG_SINCE, rules.LEGACY_IGNORED_SINCE}))


def releases_from(floor: Release) -> tuple[Release, ...]:
    """The floor and every modelled release after it at which the driver's lookup changes."""
    return (floor, *(r for r in CHANGES if r > floor))


def native_members(members: Sequence[Image], devices: Sequence[tuple[str, str]], release: Release) -> dict[str, str]:
    """Device name -> the member the driver of ``release`` runs natively from an archive of
    ``members`` (plus generic_ir), for each device it serves natively."""
    out: dict[str, str] = {}
    for name, ip in devices:
        # The lookup only ever picks a member one of the device's filters names: the others are
        # left out of it (most catalog devices match no member of a plan at all) and of its cache key.
        prefixes = rules.member_prefixes(ip, release)
        named = tuple(m for m in members if m.member.startswith(prefixes))
        if named and (image := _native(named, name, ip, release)):
            out[name] = image
    return out


@functools.lru_cache(maxsize=256)
def _native_on(members: tuple[Image, ...], devices: tuple[tuple[str, str], ...], release: Release) -> dict[str, str]:
    """:func:`native_members` over a whole universe, remembered: a plan asks the same archive
    (one image per device, the chosen one) at each release up to three times, and
    :meth:`aotwheel.backends.intel.devlist.IntelPart.coverage` plans twice. Callers only read it."""
    return native_members(members, devices, release)


@functools.lru_cache(maxsize=4096)
def _native(members: tuple[Image, ...], name: str, ip: str, release: Release) -> str | None:
    return rules.native_image(members, ip, name, release)


def _catalog_devices() -> tuple[tuple[str, str], ...]:
    from aotwheel.backends.intel.catalog import load_catalog

    return tuple((d.name, d.ip) for d in load_catalog().devices)


def plan(devices: Sequence[tuple[str, str]], *, floor: Release | None = None, generic: Mapping[str, str] | None = None,
         named_generic: Iterable[str] = (), universe: Sequence[tuple[str, str]] | None = None) -> Coverage:
    """The coverage plan for listed ``devices`` (``(name, ip)``, list order).

    ``floor``: the oldest driver release to serve natively (None: :func:`default_floor`).
    ``generic``: generic name -> root ``(name)`` the ocloc in use builds (empty or None: it knows
    none, so one image per device). ``named_generic``: generic names the list itself wrote.
    ``universe``: the devices whose coverage must not shrink (default: the catalog's)."""
    stated = floor is not None
    floor = floor if floor is not None else default_floor(name for name, _ in devices)
    universe = universe if universe is not None else _catalog_devices()
    ips = dict(universe) | dict(devices)
    releases = releases_from(floor)
    named = {g.lower() for g in named_generic}
    own = {name: Image(f"{rules.POINTER_BITS}.{ip}", name, name, ip, ()) for name, ip in devices}
    shared = {g: Image(f"{rules.POINTER_BITS}.{g}", g, root, ips[root], ())
              for g, root in sorted((generic or {}).items()) if root in ips}
    knows_generic = bool(shared)
    listed = [name for name, _ in devices]
    every = tuple(dict.fromkeys([*universe, *devices]))
    # A generic member that serves no listed device at any release cannot save an image: not tried.
    shared = {g: m for g, m in shared.items() if any(native_members([m], devices, r) for r in releases)}
    baseline = {r: _native_on(tuple(own.values()), every, r) for r in releases}

    best: tuple[tuple[int, int, int], list[Image]] | None = None
    for k in range(len(shared) + 1):
        for names in itertools.combinations(shared, k):
            members = [shared[g] for g in names]
            # Each listed device not served natively by the shared members at every release gets its own image.
            alone = [d for d in listed
                     if any(d not in native_members(members, [(d, ips[d])], r) for r in releases)]
            members += [own[d] for d in alone]
            runs = {r: _native_on(tuple(members), every, r) for r in releases}
            if any(d not in runs[r] for r in releases for d in listed):
                continue  # a shared member shadows what a device would find otherwise
            if any(set(baseline[r]) - set(runs[r]) for r in releases):
                continue  # less native coverage than one image per device somewhere
            if any(not any(runs[r].get(d) == m.member for r in releases for d in runs[r]) for m in members):
                continue  # a member no device runs
            key = (len(members), -len(named & set(names)), len(names))
            if best is None or key < best[0]:
                best = (key, members)
    assert best is not None  # one image per device always qualifies
    members = best[1]
    order = {d: i for i, d in enumerate(listed)}
    served_at = {r: _native_on(tuple(members), every, r) for r in releases}
    served: list[Served] = []
    for name, _ in every:
        hits = [r for r in releases if name in served_at[r]]
        if not hits:
            continue
        if name not in order and any(r not in hits for r in releases if r > hits[0]):
            continue  # served only for a while (a mapping a later release dropped): no claim
        served.append(Served(name, ips[name], served_at[releases[-1]].get(name) or served_at[hits[0]][name],
                             max(hits[0], first_release(name)), name in order))
    served.sort(key=lambda s: (not s.listed, order.get(s.device, 0)))
    images = tuple(Image(m.member, m.token, m.device, m.ip, tuple(s.device for s in served if s.listed and s.member == m.member))
                   for m in members)
    images = tuple(sorted(images, key=lambda i: min((order[d] for d in i.serves), default=len(order))))
    return Coverage(images, floor, stated, tuple(served), knows_generic)


def serves_lines(targets: Sequence[object]) -> list[str]:
    """``aotwheel inspect``'s note per image that the driver runs natively on more devices than its
    own: ``64.bmg serves bmg-g21, bmg-g31 (25.27+), lnl-m (25.44+) natively`` (the newest driver's
    lookup over one binary's native ``targets``, with the first modelled release for each device)."""
    from aotwheel.backends.intel.catalog import load_catalog
    from aotwheel.results import NATIVE

    devices = [(d.name, d.ip) for d in load_catalog().devices]
    releases = releases_from(OLDEST)
    runs: dict[str, dict[str, Release]] = {}  # member -> device -> since
    for name, ip in devices:
        device = _Device(name, ip, name)
        newest = rules.decide(targets, [], device, release=None)
        if newest.verdict != NATIVE or not newest.image:
            continue
        since = next((r for r in releases if rules.decide(targets, [], device, release=r).image == newest.image), OLDEST)
        own = any(getattr(t, "ip", None) == ip and (getattr(t, "member", None) or "").rstrip("/") == newest.image for t in targets)
        # Not before the driver runs the device; its own image needs no release.
        runs.setdefault(newest.image, {})[name] = OLDEST if own else max(since, first_release(name))
    lines = []
    for member, served in runs.items():
        if len(served) > 1:
            text = ", ".join(d if r == OLDEST else f"{d} (driver {release_text(r)}+)" for d, r in served.items())
            lines.append(f"{member} serves {text} natively")
    return lines
