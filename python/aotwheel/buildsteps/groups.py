"""The device groups of the ocloc edges: one edge per (kernel source, group of devices).

An edge is one Python process around ocloc (interpreter start and imports cost ~50 ms CPU), so
one edge per (source, device) spends that N times per source; one edge per (source, group) with
min(N, cores) groups spends it only as often as there are cores to keep busy. Groups are
balanced by the measured per-device ocloc cost that sharding uses (:data:`shard.DEVICE_COST`):
devices by falling cost, each to the least-loaded group (ties to the lower index); each group
keeps the devlist's order. The partition is the same for every source of a target (a source's
size scales all its devices alike), and computed once, at configure time.
"""

from __future__ import annotations

import os

from aotwheel.buildsteps.shard import DEVICE_COST
from aotwheel.config import OCLOC_GROUPS
from aotwheel.errors import AotwheelError

ENV = OCLOC_GROUPS.name


def usable_cores() -> int:
    """CPUs this process may run on (the affinity mask, as ninja's default -j would see it)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def group_count(setting: str | None, devices: int, cores: int | None = None) -> int:
    """Groups per source: ``AOTWHEEL_OCLOC_GROUPS`` when set (at most one per device), else min(N, cores)."""
    text = (setting or "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise AotwheelError(f"{ENV}='{text}' is not a positive integer; set it to e.g. 2, or unset it "
                                f"for one group per core")
        wanted = int(text)
    else:
        wanted = usable_cores() if cores is None else cores
    return max(1, min(wanted, devices))


def device_groups(devices: list[str], count: int) -> list[list[str]]:
    """``devices`` split into at most ``count`` cost-balanced groups, each in devlist order."""
    if not devices:
        return []
    count = max(1, min(count, len(devices)))
    order = {d: i for i, d in enumerate(devices)}
    loads = [0.0] * count
    groups: list[list[str]] = [[] for _ in range(count)]
    for device in sorted(devices, key=lambda d: (-DEVICE_COST.get(d, 1.0), order[d])):
        k = min(range(count), key=lambda g: (loads[g], g))
        loads[k] += DEVICE_COST.get(device, 1.0)
        groups[k].append(device)
    return [sorted(g, key=order.__getitem__) for g in groups if g]
