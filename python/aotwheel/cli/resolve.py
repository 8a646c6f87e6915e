"""``aotwheel resolve``: what a USE_AOT_DEVLIST value means, before anything compiles."""

from __future__ import annotations

import argparse
import json

FORMATS = ("ocloc", "sycl-targets", "names", "ips")


def register(sub: argparse._SubParsersAction) -> None:
    from aotwheel.devlist import DEFAULT_DEVLIST

    p = sub.add_parser(
        "resolve",
        help="resolve a USE_AOT_DEVLIST value into AOT targets",
        description=f"Resolve a device list (default: $USE_AOT_DEVLIST, else {DEFAULT_DEVLIST}) into canonical AOT targets.",
    )
    p.add_argument("text", nargs="?", metavar="DEVLIST", help="device list, e.g. 'pvc,acm-g11,sm_90' (default: $USE_AOT_DEVLIST)")
    # --devlist=TEXT keeps an empty value visible as one argument (CMake drops empty list items).
    p.add_argument("--devlist", dest="devlist_option", metavar="DEVLIST", help=argparse.SUPPRESS)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the full result as JSON")
    out.add_argument("--format", choices=FORMATS, help="print one value: ocloc -device list, -fsycl-targets, names or IP versions")
    out.add_argument("--list", action="store_true", help="list every known device, alias and family")
    jit = p.add_mutually_exclusive_group()
    jit.add_argument("--jit-fallback", dest="jit_fallback", action="store_const", const=True, help="keep SPIR-V for JIT (default; env USE_AOT_JIT_FALLBACK)")
    jit.add_argument("--no-jit-fallback", dest="jit_fallback", action="store_const", const=False, help="drop SPIR-V: unlisted devices become unsupported")
    p.add_argument("--toolchain", choices=("ocloc",), help="also check that the installed tool can build every target")
    p.add_argument("--ocloc", metavar="PATH", help="ocloc to check against (default: $AOTWHEEL_OCLOC, then PATH)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from aotwheel.config import read
    from aotwheel.devlist import describe, resolve

    from aotwheel.buildsteps.toolchain import installed_catalog

    # The installed ocloc is the authority on what its names mean; the catalog answers without one.
    catalog = installed_catalog(args.ocloc)
    if args.list:
        print(_catalog_listing(catalog))
        return 0
    config = read()  # an empty variable counts as unset (the shell idiom `USE_AOT_DEVLIST= cmd`)
    text = args.text if args.devlist_option is None else args.devlist_option
    given = text is not None or config.devlist_given  # not the default: the user named these devices
    if text is None:
        text = config.devlist
    jit_fallback = config.jit_fallback if args.jit_fallback is None else args.jit_fallback

    devlist = resolve(text, jit_fallback=jit_fallback, catalog=catalog)
    if args.toolchain == "ocloc":
        check_ocloc(devlist, args.ocloc)

    if args.json:
        print(json.dumps(devlist.to_dict() | {"given": given}, indent=2))
    elif args.format == "ocloc":
        print(devlist.ocloc_device)
    elif args.format == "sycl-targets":
        print(devlist.sycl_targets)
    elif args.format == "names":
        print(",".join(devlist.names))
    elif args.format == "ips":
        print(",".join(t.ip for t in devlist.targets))
    else:
        print(f"USE_AOT_DEVLIST={text.strip()}")
        print(describe(devlist))
        unbuildable = [t for t in devlist.targets if catalog.ocloc_version and catalog.source(t.name) == "catalog"]
        if unbuildable:
            from aotwheel.backends.intel.ocloc import build_note

            names = ", ".join(t.name for t in unbuildable)
            print(f"note: the installed ocloc {catalog.ocloc_version} does not know {names}{build_note([t.name for t in unbuildable])}: "
                  "a build stops at configure; 'aotwheel resolve --toolchain ocloc' says how to get one that can")
    return 0


def check_ocloc(devlist, explicit: str | None) -> None:
    """Fail with one line if the installed ocloc cannot build a target of ``devlist``."""
    from aotwheel.errors import ToolchainError
    from aotwheel.backends.intel.ocloc import find_ocloc, too_new_message

    ocloc = find_ocloc(explicit)
    missing = [t for t in devlist.targets if not ocloc.supports((t.name, *t.aliases))]
    if missing:
        raise ToolchainError(too_new_message([(t.name, t.ip) for t in missing], ocloc.version, ocloc.path))


def _catalog_listing(cat) -> str:  # type: ignore[no-untyped-def]
    where = (f"from the installed ocloc {cat.ocloc_version} and aotwheel's catalog; [ocloc]/[catalog]: only that one knows the name"
             if cat.ocloc_version else "from aotwheel's catalog (no ocloc installed)")
    tag_of = (lambda name: "" if cat.source(name) == "catalog+ocloc" else f" [{cat.source(name)}]") if cat.ocloc_version else (lambda name: "")
    lines = [f"devices ({where}; name  IP  aliases  SYCL arch):"]
    for d in cat.devices:
        tag = "" if d.shipping else "  [pre-production]"
        lines.append(f"  {d.name + tag_of(d.name):<18} {d.ip:<8} {', '.join(d.aliases) or '-':<32} {d.sycl_arch}{tag}")
    lines.append("generic names (build the root product; the driver runs it on the whole group):")
    for name, root in cat.generic:
        lines.append(f"  {name + tag_of(name):<18} -> {root}")
    lines.append("families and releases (expand to shipping products):")
    for g in cat.groups:
        names = "/".join((g.name, *g.aliases))
        lines.append(f"  {names + tag_of(g.name):<18} -> {', '.join(m.name for m in g.members) or '(no shipping product)'}")
    lines.append("ranges: first:last, first:, :last (ocloc's notation; shipping products between, by IP)")
    lines.append("keywords: none (JIT-only), native (devices on this machine), no-jit (drop SPIR-V)")
    return "\n".join(lines)
