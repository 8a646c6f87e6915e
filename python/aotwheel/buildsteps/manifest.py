"""``_aot_manifest.json``: what was built, for humans. The binary stays the run-time truth."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

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


def build_manifest(
    *,
    name: str,
    devlist: dict,
    toolchain: dict,
    options: str,
    images: list[dict],
    kernels: list[str],
) -> dict[str, object]:
    """Assemble the manifest. ``images`` entries carry triple, source, path and optional info."""
    from aotwheel import __version__

    out_images = []
    for img in images:
        data = Path(img["path"]).read_bytes()
        entry: dict[str, object] = {
            "triple": img["triple"],
            "source": img["source"],
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        if img.get("info"):
            entry.update(json.loads(Path(img["info"]).read_text()))
        out_images.append(entry)
    return {
        "schema": SCHEMA,
        "generator": f"aotwheel {__version__}",
        "name": name,
        "devlist": {
            "input": devlist.get("input", ""),
            "targets": [{"name": t["name"], "ip": t["ip"]} for t in devlist.get("targets", [])],
            "jit_fallback": devlist.get("jit_fallback", True),
            "ocloc_device": devlist.get("ocloc_device", ""),
        },
        "toolchain": {k: v for k, v in toolchain.items() if k != "ocloc_names"},
        "ocloc_options": options,
        "images": out_images,
        "kernels": kernels,
    }
