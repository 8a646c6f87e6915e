"""``_aot_manifest.json``: what was built, for humans. The binary stays the run-time truth."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SCHEMA = 1

# The clang/SYCL triple of NVIDIA device code, for the ``triple`` field of CUDA fat binaries.
CUDA_TRIPLE = "nvptx64-nvidia-cuda"


def fatbin_info(natives: list[tuple[str, str, int]], generic_ir: int | None,
                provenance: list[str] | None = None) -> dict[str, object]:
    """Sidecar facts of one fat binary: ``natives`` is ``(device, member, size)`` in order;
    ``provenance`` says per native whether it was ``compiled``, found ``local``ly or fetched ``remote``ly."""
    how = provenance or ["compiled"] * len(natives)
    return {
        "members": [{"device": d, "name": m, "size": s, "provenance": p} for (d, m, s), p in zip(natives, how)]
        + ([{"device": None, "name": "generic_ir", "size": generic_ir}] if generic_ir is not None else []),
    }


def read_cuda_records(list_file: str) -> list[dict]:
    """The CUDA image records named in ``list_file`` (one JSON path a line, empty lines skipped).

    aotwheel_add_cuda_device_code() writes one record per call: ``{"images": [{"source", "fatbin",
    "members": [{"target", "kind", "path"}]}]}``; CMake lists them for the manifest step.
    """
    records: list[dict] = []
    for line in Path(list_file).read_text().splitlines():
        if line.strip():
            records.extend(json.loads(Path(line.strip()).read_text())["images"])
    return records


def _digest(path: str) -> tuple[int, str]:
    data = Path(path).read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def _intel_image(img: dict) -> dict[str, object]:
    size, sha = _digest(img["path"])
    entry: dict[str, object] = {"triple": img["triple"], "vendor": "intel", "source": img["source"],
                                "size": size, "sha256": sha}
    if img.get("info"):
        entry.update(json.loads(Path(img["info"]).read_text()))
    if img.get("stored"):  # COMPRESS ON: size/sha256 are the image's; this is what is embedded
        stored, stored_sha = _digest(img["stored"])
        entry["compression"] = {"codec": "zstd", "size": stored, "sha256": stored_sha}
    return entry


def _cuda_image(record: dict) -> dict[str, object]:
    """One CUDA fat binary: cubins (native, ``device`` = sm_XY) and PTX (``device`` None, like
    an Intel fat binary's generic IR member)."""
    size, sha = _digest(record["fatbin"])
    members = [{"device": m["target"] if m["kind"] == "cubin" else None, "name": m["target"], "kind": m["kind"],
                "size": Path(m["path"]).stat().st_size} for m in record["members"]]
    return {"triple": CUDA_TRIPLE, "vendor": "nvidia", "source": record["source"], "size": size, "sha256": sha,
            "members": members}


def build_manifest(
    *,
    name: str,
    devlist: dict,
    toolchain: dict,
    options: str,
    images: list[dict],
    kernels: list[str],
    cuda_images: list[dict] | None = None,
) -> dict[str, object]:
    """Assemble the manifest. ``images`` entries carry triple, source, path and optional info;
    ``cuda_images`` are the records of :func:`read_cuda_records`."""
    from aotwheel import __version__

    out_images = [_intel_image(img) for img in images] + [_cuda_image(r) for r in cuda_images or []]
    return {
        "schema": SCHEMA,
        "generator": f"aotwheel {__version__}",
        "name": name,
        "devlist": {
            "input": devlist.get("input", ""),
            "targets": [{"name": t["name"], "ip": t["ip"]} for t in devlist.get("targets", [])],
            "jit_fallback": devlist.get("jit_fallback", True),
            "ocloc_device": devlist.get("ocloc_device", ""),
            "cuda": [t["name"] for t in (devlist.get("cuda") or {}).get("targets", [])],
        },
        "toolchain": {k: v for k, v in toolchain.items() if k != "ocloc_names"},
        "ocloc_options": options,
        "images": out_images,
        "kernels": kernels,
    }


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
