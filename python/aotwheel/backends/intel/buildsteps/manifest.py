"""The open toolchain's (and icpx's) part of ``_aot_manifest.json``: the Intel devlist keys, the
ocloc options, and one entry per embedded fat binary or SPIR-V module
(:func:`aotwheel.buildsteps.manifest.vendor_parts` asks it). Standard library only."""

from __future__ import annotations

import json
from pathlib import Path


def manifest_part(*, devlist: dict, toolchain: dict, options: str, images: list[dict], records: list[dict]) -> dict:
    """``targets`` (name, IP), ``ocloc_device`` and ``coverage`` (the native-coverage plan) in the devlist, ``ocloc_options`` after the
    toolchain (whose per-device ``ocloc_names`` stay out), and the images this backend embedded
    (``spir64_gen`` fat binaries with their members, ``spir64`` SPIR-V)."""
    from aotwheel.backends.intel.buildsteps.embed import TRIPLES

    return {
        "devlist": [("input", "targets", [{"name": t["name"], "ip": t["ip"]} for t in devlist.get("targets", [])]),
                    ("jit_fallback", "ocloc_device", devlist.get("ocloc_device", "")),
                    ("ocloc_device", "coverage", devlist.get("coverage"))],  # which image serves which device, from which driver
        "private": ("ocloc_names",),
        "fields": [("toolchain", "ocloc_options", options)],
        "images": [_image(img) for img in images if img["triple"] in TRIPLES],
    }


def _image(img: dict) -> dict[str, object]:
    from aotwheel.buildsteps.manifest import digest

    size, sha = digest(img["path"])
    entry: dict[str, object] = {"triple": img["triple"], "vendor": "intel", "source": img["source"],
                                "size": size, "sha256": sha}
    if img.get("info"):  # a fat binary's member list (the ocloc or fatbin step's sidecar)
        entry.update(json.loads(Path(img["info"]).read_text()))
    if img.get("stored"):  # COMPRESS ON: size/sha256 are the image's; this is what is embedded
        stored, stored_sha = digest(img["stored"])
        entry["compression"] = {"codec": "zstd", "size": stored, "sha256": stored_sha}
    return entry
