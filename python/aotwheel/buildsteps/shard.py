"""``AOTWHEEL_SHARD=i/n``: a deterministic, cost-balanced, source-affine slice of a build's (source, device) jobs.

Every runner of a CI matrix computes the same plan from the same inputs (the call's sources and
devices, the kernel sources' sizes, each vendor's measured per-device costs: Intel's in
``backends/intel/buildsteps/costs.py``), at configure time: a shard build's graph holds the edges of its
slice only (the Intel configure step plans the slice into the build plan CMake reads). The
results reach the assembling build through the remote cache. This module is the vendor-free part:
the ``i/n`` setting, a job, and the assignment.

Source-affine: a source kept whole on one shard is compiled to SPIR-V by that shard alone and its
devices share ocloc runs (one per group). Sources go by falling cost, each whole onto the
least-loaded shard while that shard stays within :data:`IMBALANCE` of the ideal load; a source that
fits nowhere is split device by device (falling cost): onto a shard already holding part of it
while that one stays within the bound, else onto the least-loaded shard. Ties go to the lower
index or name. The largest shard is therefore at most max(IMBALANCE x ideal, ideal + the largest
job).
"""

from __future__ import annotations

from dataclasses import dataclass

from aotwheel.errors import AotwheelError

# How far over the ideal load (total / n) a shard may go to keep a source whole. Splitting a
# source costs every shard that gets part of it that source's SPIR-V and one more ocloc run per
# group (ocloc's start-up is a large part of a small source's compile), so 10% of imbalance is
# the cheaper side for the sources of real projects; the sharded benchmark's 4 sources on 4
# runners need none.
IMBALANCE = 1.10


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str | None) -> Shard | None:
    """``"i/n"`` (1 <= i <= n) as a :class:`Shard`; empty means no sharding."""
    text = (text or "").strip()
    if not text:
        return None
    i, sep, n = text.partition("/")
    if not (sep and i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n)):
        raise AotwheelError(f"AOTWHEEL_SHARD='{text}' is not i/n with 1 <= i <= n; e.g. AOTWHEEL_SHARD=1/4")
    return Shard(int(i), int(n))


@dataclass(frozen=True, slots=True)
class Job:
    """One (source, device) job and its estimated cost; ``source`` is the kernel source's stem
    (unique within a target)."""

    source: str
    device: str
    cost: float


def assign(jobs: list[Job], count: int) -> dict[tuple[str, str], int]:
    """Shard index (1-based) of every job: whole sources where balance allows (module docstring)."""
    by_source: dict[str, list[Job]] = {}
    for job in jobs:
        by_source.setdefault(job.source, []).append(job)
    for mine in by_source.values():  # a canonical order: the input's order must not matter
        mine.sort(key=lambda j: (-j.cost, j.device))
    whole = {source: sum(j.cost for j in mine) for source, mine in by_source.items()}
    # A hair of slack so that a load equal to the bound (equal sources) counts as within it.
    cap = IMBALANCE * sum(whole[s] for s in sorted(whole)) / count * (1 + 1e-9)
    loads = [0.0] * count
    out: dict[tuple[str, str], int] = {}

    def least(shards: list[int]) -> int:
        return min(shards, key=lambda s: (loads[s], s))

    for source in sorted(by_source, key=lambda s: (-whole[s], s)):
        k = least(list(range(count)))
        if loads[k] + whole[source] <= cap:
            loads[k] += whole[source]
            out.update({(source, j.device): k + 1 for j in by_source[source]})
            continue
        held: list[int] = []  # shards given part of this source so far
        for job in by_source[source]:
            fits = [s for s in held if loads[s] + job.cost <= cap]
            k = least(fits) if fits else least(list(range(count)))
            if k not in held:
                held.append(k)
            loads[k] += job.cost
            out[(source, job.device)] = k + 1
    return out
