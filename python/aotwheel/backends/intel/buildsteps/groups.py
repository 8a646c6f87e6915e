"""The ocloc edges of a target: one edge per (kernel source, group of devices), planned at configure time.

An edge is one Python process around one ocloc (together ~0.2 s CPU to start: the interpreter
and imports, ocloc's own start-up), so every edge more than the cores need is overhead. The plan
(:func:`plan_edges`) starts from one edge per source with all its devices, and splits a source's
devices into groups only where that shortens the build: while its largest edge is what keeps
the estimated build (list scheduling of the edges on the cores in the order ninja will start
them, :func:`plan_estimate`, each edge its jobs plus :data:`EDGE_OVERHEAD`) from being balanced.
A plan with more edges is kept only if its estimate is more than :data:`SPLIT_GAIN` shorter. Job
costs are the measured per-device ocloc costs sharding uses (:data:`costs.DEVICE_COST`) times the
source's size, or what earlier builds recorded (a shard plan, ``history.py``). Sizes are a weak
estimate, so the estimate lets the largest edge on each core run :data:`UNCERTAINTY` longer
than its cost says: a plan whose cores each end on one big edge (two whole sources on two cores)
is split into smaller edges, which even out whatever they really cost.
So many sources of similar size give one edge per source (and that edge also writes the
source's fat binary: no separate process), one source gives at least min(N, cores) groups,
a few sources on as many cores are split in two, and a source much larger than the rest is
split while the others are not.

Groups are balanced the same way (:func:`device_groups`): devices by falling cost, each to the
least-loaded group (ties to the lower index); each group keeps the devlist's order.
``AOTWHEEL_OCLOC_GROUPS`` overrides the plan: that many groups for every source.
"""

from __future__ import annotations

import heapq
import os

from aotwheel.backends.intel.buildsteps.costs import DEVICE_COST, job_cost
from aotwheel.backends.intel.variables import OCLOC_GROUPS
from aotwheel.buildsteps.shard import Job, Shard, assign
from aotwheel.errors import AotwheelError

ENV = OCLOC_GROUPS.name
# What one edge costs besides its devices' ocloc work, in job-cost units (source bytes x device
# factor): ~0.2 s CPU (the Python step's start and imports ~0.09 s, ocloc's start ~0.1 s) at the
# ~45 us per unit of the benchmark workload (pvc on a 16.6 kB source: 0.83 s CPU). Crude, as the
# size-based costs are; it keeps small sources from being split into more processes than work.
EDGE_OVERHEAD = 4000.0
# A plan with more edges must be estimated this much shorter to be chosen (the costs are estimates).
SPLIT_GAIN = 0.05
# How much longer than estimated one edge may run: sources of equal size (the scale-out
# benchmark's 8 sources of 33.6 kB) cost ocloc 1.21-1.78 s CPU for tgllp and 1.44-2.14 s for pvc,
# the dearest 1.16x and 1.22x the mean (Debian's ocloc 22.43, /usr/bin/time, one run each).
UNCERTAINTY = 0.2


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


def device_groups(devices: list[str], count: int, cost: dict[str, float] | None = None) -> list[list[str]]:
    """``devices`` split into at most ``count`` cost-balanced groups, each in devlist order.
    ``cost``: each device's cost for this source (default: the per-device factors)."""
    if not devices:
        return []
    count = max(1, min(count, len(devices)))
    order = {d: i for i, d in enumerate(devices)}
    weight = (lambda d: cost.get(d, 1.0)) if cost is not None else (lambda d: DEVICE_COST.get(d, 1.0))
    loads = [0.0] * count
    groups: list[list[str]] = [[] for _ in range(count)]
    for device in sorted(devices, key=lambda d: (-weight(d), order[d])):
        k = min(range(count), key=lambda g: (loads[g], g))
        loads[k] += weight(device)
        groups[k].append(device)
    return [sorted(g, key=order.__getitem__) for g in groups if g]


def estimated_makespan(costs: list[float], cores: int, uncertainty: float = 0.0) -> float:
    """The build's length if its edges of ``costs`` start in the order given, each on the core
    that frees up first, and the largest edge on each core runs ``uncertainty`` (a fraction)
    longer than its cost."""
    # (load, core, largest edge) per core: the lowest load first, ties to the lower core.
    cores_ = [(0.0, k, 0.0) for k in range(max(1, min(cores, len(costs))))]
    for c in costs:
        load, k, largest = cores_[0]
        heapq.heapreplace(cores_, (load + c, k, max(largest, c)))
    return max(load + uncertainty * largest for load, _, largest in cores_)


def plan_estimate(edges: list[tuple[str, list[str], float]], cores: int) -> float:
    """The estimated length of a plan of ``(source, devices, cost)`` edges in the order CMake writes
    them (SOURCES order, a source's groups together), in the order ninja will start them.

    ninja does not know the costs: of the edges ready at once it starts those it read first
    (ninja 1.11), or those on the longest path, ties in that order (1.12+: a split source's groups
    feed a fatbin edge, so they come before whole sources). Either order is estimated and the
    longer one counts: longest-first would have the halves of one source and a whole one share the
    cores, where ninja starts both halves first and the whole source after them (measured: a
    shard's device phase 1.45x its CPU/2 with such a plan)."""
    per_source: dict[str, int] = {}
    for s, _, _ in edges:
        per_source[s] = per_source.get(s, 0) + 1
    written = [c for _, _, c in edges]
    split_first = [c for s, _, c in edges if per_source[s] > 1] + [c for s, _, c in edges if per_source[s] == 1]
    return max(estimated_makespan(written, cores, UNCERTAINTY), estimated_makespan(split_first, cores, UNCERTAINTY))


def plan_edges(jobs: list[Job], cores: int, setting: str | None = None) -> list[tuple[str, list[str]]]:
    """The ocloc edges as ``(source, devices)``, sources in first-seen order, each source's groups
    from :func:`device_groups` (devlist order within a group).

    ``jobs``: one per (source, device), in source then devlist order (``shard.read_jobs``).
    ``setting``: ``AOTWHEEL_OCLOC_GROUPS`` (groups per source) when set, else planned for ``cores``.
    """
    devices: dict[str, list[str]] = {}
    cost: dict[tuple[str, str], float] = {}
    for job in jobs:
        devices.setdefault(job.source, []).append(job.device)
        cost[(job.source, job.device)] = job.cost
    if (setting or "").strip():
        return [(s, g) for s, devs in devices.items() for g in device_groups(devs, group_count(setting, len(devs)))]
    count = dict.fromkeys(devices, 1)

    def edges(plan: dict[str, int]) -> list[tuple[str, list[str], float]]:
        # Groups balanced by the jobs' own costs (measured ones, when the shard step has them).
        return [(s, g, EDGE_OVERHEAD + sum(cost[(s, d)] for d in g))
                for s, devs in devices.items() for g in device_groups(devs, plan[s], {d: cost[(s, d)] for d in devs})]

    def estimate(plan: list[tuple[str, list[str], float]]) -> float:
        return plan_estimate(plan, cores)

    current = edges(count)
    plans = [(estimate(current), current)]
    # No plan beats this: the work spread evenly (one edge per source at least), or the dearest
    # job, plus the uncertainty of the smallest edge any plan can have on a core.
    smallest = EDGE_OVERHEAD + max(cost.values(), default=0.0)
    bound = max((sum(cost.values()) + EDGE_OVERHEAD * len(devices)) / max(cores, 1), smallest) + UNCERTAINTY * smallest
    # Split the source of the largest edge, again and again, until the estimate is within
    # SPLIT_GAIN of the lower bound (then no later plan can be chosen) or every edge is one
    # device; keep the plan with the fewest edges within SPLIT_GAIN of the best estimate seen.
    # Each step adds one edge: at most jobs - sources steps.
    while plans[-1][0] > bound * (1 + SPLIT_GAIN):
        largest: dict[str, float] = {}
        for s, _, c in current:
            if count[s] < len(devices[s]):
                largest[s] = max(largest.get(s, 0.0), c)
        if not largest:
            break
        source = max(largest, key=largest.__getitem__)  # ties: the first source
        count[source] += 1
        current = edges(count)
        plans.append((estimate(current), current))
    best = min(m for m, _ in plans)
    chosen = next(p for m, p in plans if m <= best * (1 + SPLIT_GAIN))
    return [(s, g) for s, g, _ in chosen]


def source_jobs(sources: list[tuple[str, str]], devices: list[str]) -> list[Job]:
    """One job per (source, device) for ``(stem, path)`` sources, costed as sharding costs them."""
    jobs: list[Job] = []
    for stem, path in sources:
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 1
        jobs.extend(Job(stem, d, job_cost(d, size)) for d in devices)
    return jobs


def slice_groups(jobs: list[Job], shard: Shard, setting: str | None = None, cores: int | None = None) -> dict[str, list[list[str]]]:
    """This shard's devices of each of its sources (job-list order), as ocloc edges planned by
    :func:`plan_edges` over the shard's own jobs (``setting``: ``AOTWHEEL_OCLOC_GROUPS``;
    ``cores``: default this machine's), as a one-machine build plans all of them."""
    plan = assign(jobs, shard.count)
    mine = [job for job in jobs if plan[(job.source, job.device)] == shard.index]
    out: dict[str, list[list[str]]] = {}
    for source, devices in plan_edges(mine, usable_cores() if cores is None else cores, setting):
        out.setdefault(source, []).append(devices)
    return out
