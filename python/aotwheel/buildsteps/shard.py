"""``AOTWHEEL_SHARD=i/n``: a deterministic, cost-balanced slice of a build's (source, device) jobs.

Every runner of a CI matrix computes the same plan from the same inputs (the job list CMake wrote,
the kernel sources' sizes, the measured per-device costs below) and compiles only the jobs
assigned to its index; the results reach the assembling build through the remote cache.
Assignment is longest-processing-time first: jobs by falling cost, each to the least-loaded
shard (ties to the lower index), which keeps the largest shard within 4/3 of the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aotwheel.errors import AotwheelError

# ocloc's relative cost per device: CPU seconds of `ocloc compile -device X` (Debian's ocloc
# 22.43) on the benchmark's 36-kernel workload linked into one SPIR-V module, median of 3,
# divided by tgllp's; recorded in benchmarks/results/scaleout_costs.json by
# `python -m benchmarks.scaleout --costs` (2 shared cores at load ~9). pvc is the dearest, but
# about 1.2x an Xe-LP target with this ocloc, not 1.5x; on a single 9-kernel source it measured
# the cheapest: the cost depends on the kernels. Unlisted devices cost 1.0.
DEVICE_COST: dict[str, float] = {
    "pvc": 1.16, "acm-g10": 0.95, "acm-g11": 1.05, "acm-g12": 0.99, "tgllp": 1.0, "dg1": 0.96, "adl-p": 0.93, "rkl": 0.92,
}


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Job:
    """One (source, device) job and its estimated cost."""

    source: str  # the kernel source's stem (unique within a target)
    device: str
    cost: float


def job_cost(device: str, source_size: int) -> float:
    """Estimated ocloc cost: the device's measured factor times the source's size."""
    return DEVICE_COST.get(device, 1.0) * max(source_size, 1)


def assign(jobs: list[Job], count: int) -> dict[tuple[str, str], int]:
    """Shard index (1-based) of every job, longest first onto the least-loaded shard."""
    loads = [0.0] * count
    out: dict[tuple[str, str], int] = {}
    for job in sorted(jobs, key=lambda j: (-j.cost, j.source, j.device)):
        k = min(range(count), key=lambda s: (loads[s], s))
        loads[k] += job.cost
        out[(job.source, job.device)] = k + 1
    return out


def read_jobs(path: Path) -> list[Job]:
    """The job list CMake wrote: ``<stem>\\t<device>\\t<source path>`` per line."""
    jobs = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        stem, device, source = line.split("\t", 2)
        try:
            size = Path(source).stat().st_size
        except OSError:
            size = 1
        jobs.append(Job(stem, device, job_cost(device, size)))
    return jobs


def in_slice(shard: Shard, jobs_file: Path, stem: str, device: str) -> bool:
    """Whether ``(stem, device)`` belongs to ``shard`` in the plan over ``jobs_file``."""
    plan = assign(read_jobs(jobs_file), shard.count)
    if (stem, device) not in plan:
        raise AotwheelError(f"{stem} -device {device} is not in {jobs_file}; re-run CMake configure")
    return plan[(stem, device)] == shard.index
