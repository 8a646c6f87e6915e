"""``aotwheel build``: the open-toolchain build's toolchain and device-code cache, for humans."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``aotwheel build`` to the CLI."""
    p = sub.add_parser(
        "build",
        help="show the open toolchain and the device-code cache",
        description="Inspect what aotwheel_add_device_code uses: clang/llvm-spirv/ocloc and the device-code cache "
        "($AOTWHEEL_CACHE_DIR, 'off' disables; default $XDG_CACHE_HOME/aotwheel or ~/.cache/aotwheel).",
    )
    p.add_argument("what", choices=("toolchain", "cache"), help="toolchain: the tools found; cache: root and hit/miss/store counts")
    p.add_argument("--devices", default="", help="toolchain: also check ocloc can build these (comma-separated canonical names)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the toolchain or the cache counters (text or ``--json``)."""
    from aotwheel.buildsteps.cache import DeviceCodeCache

    cache = DeviceCodeCache.from_env()
    if args.what == "cache":
        s = cache.stats()
        doc: dict[str, object] = {"root": str(cache.root) if cache.root else None, "hits": s.hits,
                                  "misses": s.misses, "stores": s.stores}
    else:
        from aotwheel.buildsteps.toolchain import discover

        doc = discover([d for d in args.devices.split(",") if d], cache).to_dict()
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        for key, value in doc.items():
            print(f"{key}: {value}")
    return 0
