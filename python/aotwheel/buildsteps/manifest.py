"""``_aot_manifest.json``: what was built, for humans. The binary stays the run-time truth.

The core writes the vendor-free keys (schema, name, the devlist's input and JIT fallback, the
toolchain, kernels, remote-cache outcomes); each backend's build module adds its own part
(:func:`vendor_parts`): its devlist keys, its images, its fields."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from aotwheel.buildsteps.values import place

SCHEMA = 1


def fatbin_info(natives: list[tuple[str, str, int]], generic_ir: int | None,
                provenance: list[str] | None = None) -> dict[str, object]:
    """Sidecar facts of one fat binary: ``natives`` is ``(device, member, size)`` in order;
    ``provenance`` says per native whether it was ``compiled``, found ``local``ly or fetched ``remote``ly."""
    how = provenance or ["compiled"] * len(natives)
    return {
        "members": [{"device": d, "name": m, "size": s, "provenance": p} for (d, m, s), p in zip(natives, how)]
        + ([{"device": None, "name": "generic_ir", "size": generic_ir}] if generic_ir is not None else []),
    }


def read_records(list_file: str) -> list[dict]:
    """The image records named in ``list_file`` (one JSON path a line, empty lines skipped), each
    file ``{"images": [...]}`` as a backend's configure step wrote it (one per device-code call that
    records images on the target, CMake's ``AOTWHEEL_IMAGES_<vendor>``, listed for the manifest step)."""
    records: list[dict] = []
    for line in Path(list_file).read_text().splitlines():
        if line.strip():
            records.extend(json.loads(Path(line.strip()).read_text())["images"])
    return records


def digest(path: str) -> tuple[int, str]:
    """``(size, sha256)`` of one file, as the manifest lists images."""
    data = Path(path).read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def vendor_parts(*, devlist: dict, toolchain: dict, options: str, images: list[dict],
                 records: dict[str, list[dict]]) -> list[dict]:
    """Each backend's part of the manifest, in registry order: its build module's
    ``manifest_part(devlist=, toolchain=, options=, images=, records=)`` (backends without build
    steps have none). ``images`` are every image the call embeds
    (``triple``, ``source``, ``path``, ``info``, ``stored``): each backend lists those it built;
    ``records`` its own image records, by backend name. A part is a dict of ``devlist`` and
    ``fields`` (``(after, key, value)``: keys placed after the core key ``after``), ``images``
    (entries) and ``private`` (toolchain keys the manifest leaves out)."""
    from aotwheel import backends

    parts = []
    for name in backends.names():
        module = backends.build_module(name)
        if module is not None:  # every build module defines manifest_part (the registry names it)
            steps = backends.load_module(module)
            parts.append(steps.manifest_part(devlist=devlist, toolchain=toolchain, options=options, images=images,
                                             records=records.get(name, [])))
    return parts


def build_manifest(
    *,
    name: str,
    devlist: dict,
    toolchain: dict,
    options: str,
    images: list[dict],
    kernels: list[str],
    records: dict[str, list[dict]] | None = None,
) -> dict[str, object]:
    """Assemble the manifest. ``images`` entries carry triple, source, path and optional info
    and stored; ``records`` are the backends' image records (:func:`read_records`) by name."""
    from aotwheel import __version__

    parts = vendor_parts(devlist=devlist, toolchain=toolchain, options=options, images=images, records=records or {})
    private = {k for p in parts for k in p.get("private", ())}
    core_devlist: dict[str, object] = {"input": devlist.get("input", ""), "jit_fallback": devlist.get("jit_fallback", True)}
    doc: dict[str, object] = {
        "schema": SCHEMA,
        "generator": f"aotwheel {__version__}",
        "name": name,
        "devlist": place(core_devlist, [f for p in parts for f in p.get("devlist", ())]),
        "toolchain": {k: v for k, v in toolchain.items() if k not in private},
        "images": [entry for p in parts for entry in p.get("images", ())],
        "kernels": kernels,
    }
    return place(doc, [f for p in parts for f in p.get("fields", ())])


_EVENTS_MARK = "cache-events-start"  # in the work dir: where events.log ended when configure began


def mark_events(work: Path) -> None:
    """Note the cache's event log size, so the manifest counts this build's remote outcomes only."""
    from aotwheel.buildsteps.cache import DeviceCodeCache

    root = DeviceCodeCache.from_env().root
    try:
        size = (root / "events.log").stat().st_size if root is not None else 0
    except OSError:
        size = 0
    from aotwheel.buildsteps.edge import write_if_changed

    write_if_changed(str(work / _EVENTS_MARK), f"{size}\n")


def remote_outcomes(work: Path) -> dict[str, int]:
    """Remote-cache failures, hits and stores logged since configure (device images and SPIR-V).
    A failure is a remote that was down, refused, slow or sent a damaged object: the build went on
    as on a miss, so only these counts tell the user (pip hides the build's warnings)."""
    from aotwheel.buildsteps.cache import DeviceCodeCache

    counts = {"failures": 0, "hits": 0, "stores": 0}
    root = DeviceCodeCache.from_env().root
    try:
        start = int((work / _EVENTS_MARK).read_text().strip() or 0)
        with open(root / "events.log", "rb") as f:  # type: ignore[operator]
            f.seek(start)
            text = f.read().decode(errors="replace")
    except (OSError, TypeError, ValueError):
        return counts
    kinds = {"remote-fail": "failures", "remote-hit": "hits", "spirv-remote-hit": "hits", "remote-store": "stores"}
    for line in text.splitlines():
        kind = line.split(" ", 1)[0]
        if kind in kinds:
            counts[kinds[kind]] += 1
    return counts
