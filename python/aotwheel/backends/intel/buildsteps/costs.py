"""What an ocloc job costs: the measured factor per Intel device and the job lists CMake's
configure step writes (``<stem>\t<device>\t<source path>`` per line), costed for the slice
assignment of :mod:`aotwheel.buildsteps.shard`."""

from __future__ import annotations

from pathlib import Path

from aotwheel.buildsteps.shard import Job, Shard, assign
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


def job_cost(device: str, source_size: int) -> float:
    """Estimated ocloc cost: the device's measured factor times the source's size."""
    return DEVICE_COST.get(device, 1.0) * max(source_size, 1)


def read_job_list(path: Path) -> tuple[list[Job], dict[str, str]]:
    """A job list file (``<stem>\\t<device>\\t<source path>`` per line): the jobs, costed
    by size, and each source's path by stem."""
    jobs = []
    sources: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        stem, device, source = line.split("\t", 2)
        sources.setdefault(stem, source)
        try:
            size = Path(source).stat().st_size
        except OSError:
            size = 1
        jobs.append(Job(stem, device, job_cost(device, size)))
    return jobs, sources


def read_jobs(path: Path) -> list[Job]:
    """The jobs of a job list file, costed by size (:func:`read_job_list`)."""
    return read_job_list(path)[0]


def in_slice(shard: Shard, jobs_file: Path, stem: str, device: str) -> bool:
    """Whether ``(stem, device)`` belongs to ``shard`` in the plan over ``jobs_file``."""
    plan = assign(read_jobs(jobs_file), shard.count)
    if (stem, device) not in plan:
        raise AotwheelError(f"{stem} -device {device} is not in {jobs_file}; re-run CMake configure")
    return plan[(stem, device)] == shard.index
