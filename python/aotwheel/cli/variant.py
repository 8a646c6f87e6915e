"""``aotwheel variant``: label device-list wheels as wheel variants (draft PEP 817/825), and show
what aotwheel's Intel GPU provider reports for this machine."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``aotwheel variant`` to the CLI."""
    p = sub.add_parser(
        "variant",
        help="write variant wheels (draft PEP 817) labelled with the GPUs each wheel runs natively",
        description="Copy each WHEEL into OUT as a wheel variant: its *.dist-info/variant.json (written by variantlib) "
        "lists an 'aotwheel_intel :: image :: <IP>' property per Intel native image and an 'nvidia :: sm_arch' value "
        "per cubin/PTX, read from the wheel's binaries; a wheel without native images (USE_AOT_DEVLIST=none) becomes "
        "the null variant, which every machine accepts and ranks last. Then run "
        "`variantlib generate-index-json -d OUT` for the index. Without WHEEL: print the values aotwheel's provider "
        "supports on this machine (AOTWHEEL_DEVICE overrides the probe). Needs `pip install 'variantlib[cli]'`.",
    )
    p.add_argument("wheels", nargs="*", metavar="WHEEL", help="wheels built for different device lists of one release")
    p.add_argument("-o", "--out", default=None, help="folder for the variant wheels (required with WHEEL)")
    p.add_argument("--no-validate", action="store_true",
                   help="do not check the aotwheel_intel properties against the installed provider plugin")
    p.add_argument("--pick", metavar="DIR", help="print the wheel of DIR's variant set (its <name>-<version>-variants.json) "
                   "that suits this machine, as variantlib orders them with the providers; the null variant suits every machine")
    p.add_argument("--install", action="store_true", help="with --pick: hand that wheel to pip (pip takes no variant file names yet)")
    p.add_argument("--python", default=None, metavar="PYTHON", help="with --install: the interpreter whose pip installs it (default: this one)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Label the wheels, or print the provider's supported values."""
    from dataclasses import asdict
    from pathlib import Path

    from aotwheel import variants
    from aotwheel.errors import AotwheelError

    if args.pick:
        wheel, ordered = variants.pick(args.pick)
        if args.json:  # flushed: pip's lines (its own process, on the same stdout) come after it
            print(json.dumps({"wheel": str(wheel), "label": wheel.name.rsplit("-", 1)[1][:-4], "order": ordered}, indent=2), flush=True)
        else:
            print(wheel, flush=True)
        if args.install:
            import sys

            return variants.install(wheel, args.python or sys.executable)
        return 0
    if args.install or args.python:
        raise AotwheelError("aotwheel variant: --install and --python go with --pick DIR")
    if not args.wheels:
        from aotwheel.probe.override import from_environment

        from_environment()  # a malformed AOTWHEEL_DEVICE: one error line, as `check` says it (the plugin stays silent)
        configs = variants.IntelGpuPlugin.get_supported_configs()
        if args.json:
            print(json.dumps({"namespace": variants.NAMESPACE, "configs": [asdict(c) for c in configs]}, indent=2))
        else:
            for c in configs:
                print(f"{variants.NAMESPACE} :: {c.name} :: {', '.join(c.values)}  (best first)")
        return 0
    if not args.out:
        raise AotwheelError("aotwheel variant: pass --out DIR for the variant wheels")
    results = variants.label_wheels(args.wheels, args.out, validate=not args.no_validate)
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
        return 0
    for r in results:
        props = "; ".join(r.properties) or "(none: null variant, the fallback)"
        print(f"{Path(r.output or r.wheel).name}: {props}")
        for note in r.notes:
            print(f"  note: {note}")
    print(f"next: variantlib generate-index-json -d {args.out}")
    return 0
