"""Timing helpers: repeated wall-clock samples, their median/min/max, and machine load."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Samples:
    """Wall-clock seconds of repeated runs of one thing."""

    values: list[float] = field(default_factory=list)

    def add(self, seconds: float) -> None:
        self.values.append(seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def to_dict(self, scale: float = 1.0) -> dict[str, object]:
        """Median, min, max (times ``scale``, e.g. 1e3 for ms) and the raw values."""
        v = [x * scale for x in self.values]
        return {"median": statistics.median(v), "min": min(v), "max": max(v), "runs": len(v), "values": v}


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds ``fn()`` took and its result."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def child_cpu() -> float:
    """User + system CPU seconds of all finished child processes (and their waited-for children).

    Unlike wall time this barely moves with other people's load, so it shows per-process overhead.
    """
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_timed(cmd: list[str], **kw) -> tuple[float, float]:
    """(wall, CPU) seconds of a subprocess (argument list, no shell); raises on failure."""
    c0 = child_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}")
    return dt, child_cpu() - c0


def load1() -> float:
    """The 1-minute load average (what 'the machine is quiet' is judged by)."""
    return os.getloadavg()[0]


def wait_quiet(limit: float, max_wait: float, log: Callable[[str], None]) -> float:
    """Wait (up to ``max_wait`` s) until the 1-minute load is at most ``limit``; return the load."""
    t_end = time.monotonic() + max_wait
    load = load1()
    while load > limit and time.monotonic() < t_end:
        log(f"load {load:.2f} > {limit}: waiting")
        time.sleep(10)
        load = load1()
    return load
