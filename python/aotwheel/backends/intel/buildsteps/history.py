"""Measured ocloc costs, kept in the remote stores beside the objects, for the next shard plan.

A source's size is a weak estimate of what ocloc spends on it (sources of equal size measured up
to 1.5x apart per device), so a sharded build's plan (:mod:`aotwheel.buildsteps.shard`) uses what
earlier builds measured where it can. Every ocloc edge that compiled reports the CPU seconds of
its ocloc run, split over its devices by :data:`costs.DEVICE_COST`, into one record per kernel
source (its ``cost id``: project, target NAME and source stem) in every writable store.

Every shard of one CI run must compute the same plan, although the shards that finish first
rewrite the records the others may still read. So a record keeps two generations, each the
source's sha256 and its costs, newest first: a write for the source as it is now merges into the
newest generation when that one is of the same source, else becomes the newest and keeps the
previous one. A plan reads the newest generation of a *different* source: before or after a
sibling shard's write, that is the same generation (the last run's), so the plans agree.
(Two CI runs of different commits racing on one record can still make their shards disagree:
then some jobs are built twice, or left to the assembling build, which compiles what it misses.)

Each record is stored bound to its key (and signed, with ``AOTWHEEL_REMOTE_CACHE_SECRET``) as
objects are. The records are hints: a failing, damaged, misplaced or foreign record is ignored without a warning (the
device-code lookups already warn once per build about a failing store); read-only builds never
write them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from aotwheel.backends.intel.buildsteps.costs import DEVICE_COST
from aotwheel.buildsteps.cache import pack_object, unpack_object
from aotwheel.buildsteps.shard import Job

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotwheel.buildsteps.remote import Store

FORMAT = "aotwheel-ocloc-costs"
VERSION = 1
GENERATIONS = 2
RECORD_LIMIT = 1 << 20  # a record is a few hundred bytes: a larger answer is refused unread


def record_key(cost_id: str) -> str:
    """The store key of a source's record (apart from the objects' keys by its own prefix)."""
    return hashlib.sha256(f"{FORMAT}/{VERSION}\0{cost_id}".encode()).hexdigest()


def split_cpu(cpu_s: float, devices: list[str]) -> dict[str, float]:
    """One ocloc run's CPU seconds over its devices, in proportion to their measured factors."""
    weights = {d: DEVICE_COST.get(d, 1.0) for d in devices}
    total = sum(weights.values()) or 1.0
    return {d: round(cpu_s * w / total, 4) for d, w in weights.items()}


def _generations(blob: bytes | None, key: str, secret: bytes | None = None) -> list[dict]:
    """The generations of a stored record; anything not a well-formed record is none."""
    payload = unpack_object(blob, key, secret)[0] if blob is not None else None
    if payload is None:
        return []
    try:
        doc = json.loads(payload)
        if doc.get("format") != FORMAT or doc.get("version") != VERSION:
            return []
        out = []
        for gen in doc["generations"][:GENERATIONS]:
            costs = {str(d): float(s) for d, s in gen["cpu_s"].items() if float(s) > 0}
            out.append({"source_sha256": str(gen["source_sha256"]), "cpu_s": costs})
        return out
    except (ValueError, KeyError, TypeError, AttributeError):
        return []


def merged(generations: list[dict], source_sha256: str, cpu_s: Mapping[str, float]) -> list[dict]:
    """``generations`` after a write of ``cpu_s`` measured on the source ``source_sha256``."""
    if generations and generations[0]["source_sha256"] == source_sha256:
        head = {"source_sha256": source_sha256, "cpu_s": {**generations[0]["cpu_s"], **cpu_s}}
        return [head, *generations[1:GENERATIONS]]
    return [{"source_sha256": source_sha256, "cpu_s": dict(cpu_s)}, *generations[: GENERATIONS - 1]]


def previous_costs(generations: list[dict], source_sha256: str) -> dict[str, float]:
    """The costs a plan uses: the newest generation measured on another source than this one."""
    for gen in generations:
        if gen["source_sha256"] != source_sha256:
            return dict(gen["cpu_s"])
    return {}


def _encode(cost_id: str, generations: list[dict], secret: bytes | None = None) -> bytes:
    doc = {"format": FORMAT, "version": VERSION, "id": cost_id, "generations": generations}
    return pack_object(json.dumps(doc, sort_keys=True).encode(), record_key(cost_id), secret)


def record(stores: Iterable[Store], cost_id: str, source_sha256: str, cpu_s: Mapping[str, float],
           secret: bytes | None = None) -> None:
    """Merge ``cpu_s`` (device -> CPU seconds) into the source's record in every store."""
    from aotwheel.buildsteps.remote import RemoteError

    key = record_key(cost_id)
    for store in stores:
        try:
            gens = merged(_generations(store.get(key, RECORD_LIMIT), key, secret), source_sha256, cpu_s)
            store.put(key, _encode(cost_id, gens, secret))
        except RemoteError:
            continue


def read(stores: Iterable[Store], cost_id: str, source_sha256: str, secret: bytes | None = None) -> dict[str, float] | None:
    """The costs of the first store holding a usable generation for this source ({} if none);
    ``None`` when a store failed (the caller stops asking: each try may wait for a timeout)."""
    from aotwheel.buildsteps.remote import RemoteError

    for store in stores:
        try:
            key = record_key(cost_id)
            costs = previous_costs(_generations(store.get(key, RECORD_LIMIT), key, secret), source_sha256)
        except RemoteError:
            return None
        if costs:
            return costs
    return {}


def measured_costs(sources: Mapping[str, str], prefix: str, stores: list[Store],
                   secret: bytes | None = None) -> dict[tuple[str, str], float]:
    """``(stem, device) -> CPU seconds`` from the stores' records for ``sources`` (stem -> path, as
    :func:`shard.read_job_list` reads them from a job list file, or the Intel configure step's sources); cost ids ``<prefix>/<stem>``."""
    from aotwheel.buildsteps.cache import file_sha256

    out: dict[tuple[str, str], float] = {}
    for stem, path in sorted(sources.items()):
        try:
            sha = file_sha256(path)
        except OSError:
            continue
        costs = read(stores, f"{prefix}/{stem}", sha, secret)
        if costs is None:
            break
        out.update({(stem, device): seconds for device, seconds in costs.items()})
    return out


def with_measured(jobs: list[Job], measured: Mapping[tuple[str, str], float]) -> list[Job]:
    """``jobs`` with the measured CPU seconds as costs where known, in the size-based units.

    Units: the measured jobs' seconds are scaled so that they sum to their size-based estimate
    (the per-edge overhead of :mod:`groups` stays in proportion); jobs without a measurement
    keep their estimate.
    """
    known = {(j.source, j.device) for j in jobs if measured.get((j.source, j.device), 0.0) > 0}
    if not known:
        return list(jobs)
    scale = (sum(j.cost for j in jobs if (j.source, j.device) in known)
             / sum(measured[k] for k in known))
    return [Job(j.source, j.device, measured[(j.source, j.device)] * scale) if (j.source, j.device) in known else j
            for j in jobs]
