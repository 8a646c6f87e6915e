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
        description=f"Resolve a device list (default: $USE_AOT_DEVLIST, else $TORCH_XPU_ARCH_LIST, else {DEFAULT_DEVLIST}; "
        "an empty value counts as unset) into canonical AOT targets.",
    )
    p.add_argument("text", nargs="?", metavar="DEVLIST",
                   help="device list, e.g. 'pvc,acm-g11,sm_90' (default: $USE_AOT_DEVLIST, else $TORCH_XPU_ARCH_LIST)")
    # --devlist=TEXT keeps an empty value visible as one argument (CMake drops empty list items);
    # --torch-xpu-arch-list=TEXT is CMake's TORCH_XPU_ARCH_LIST variable (after $USE_AOT_DEVLIST).
    p.add_argument("--devlist", dest="devlist_option", metavar="DEVLIST", help=argparse.SUPPRESS)
    p.add_argument("--compress", dest="compress_option", help=argparse.SUPPRESS)  # CMake's USE_AOT_COMPRESS, passed on
    p.add_argument("--torch-xpu-arch-list", dest="torch_option", metavar="DEVLIST", help=argparse.SUPPRESS)
    p.add_argument("--devlist-from", dest="devlist_from", metavar="LABEL", help=argparse.SUPPRESS)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the full result as JSON")
    out.add_argument("--format", choices=FORMATS, help="print one value: ocloc -device list, -fsycl-targets, names or IP versions")
    out.add_argument("--list", action="store_true", help="list every known device, alias and family")
    jit = p.add_mutually_exclusive_group()
    jit.add_argument("--jit-fallback", dest="jit_fallback", action="store_const", const=True, help="keep SPIR-V for JIT (default; env USE_AOT_JIT_FALLBACK)")
    jit.add_argument("--no-jit-fallback", dest="jit_fallback", action="store_const", const=False, help="drop SPIR-V: unlisted devices become unsupported")
    field = p.add_mutually_exclusive_group()
    field.add_argument("--field-defaults", dest="field_defaults", action="store_const", const=True,
                       help="report the options IPEX/torch-xpu-ops pass as in use (default; env USE_AOT_FIELD_DEFAULTS)")
    field.add_argument("--no-field-defaults", dest="field_defaults", action="store_const", const=False,
                       help="report no field-default options (USE_AOT_FIELD_DEFAULTS=OFF)")
    p.add_argument("--toolchain", choices=("ocloc",), help="also check that the installed tool can build every target")
    p.add_argument("--ocloc", metavar="PATH", help="ocloc to check against (default: $AOTWHEEL_OCLOC, then PATH)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import os

    from aotwheel.buildsteps.toolchain import catalog_for, installed_catalog
    from aotwheel.config import devlist_choice, read
    from aotwheel.devlist import describe, resolve

    if args.list:
        print(_catalog_listing(installed_catalog(args.ocloc)))
        return 0
    config = read()  # an empty variable counts as unset (the shell idiom `USE_AOT_DEVLIST= cmd`)
    explicit = args.text if args.devlist_option is None else args.devlist_option
    if explicit is not None and args.devlist_option is None and explicit.strip():
        text, source = explicit, "the command line"
    else:  # CMake's variables (empty = unset), then the environment's chain
        text, source = devlist_choice(os.environ, explicit, args.torch_option)
        source = {"USE_AOT_DEVLIST": args.devlist_from or "--devlist",
                  "TORCH_XPU_ARCH_LIST": "TORCH_XPU_ARCH_LIST (CMake variable)"}.get(source, source)
    given = source != "the default"  # the user named these devices (a vendor without a build step then stops configure)
    jit_fallback = config.jit_fallback if args.jit_fallback is None else args.jit_fallback
    field_on = config.field_defaults if args.field_defaults is None else args.field_defaults

    # The installed ocloc is the authority on what its names mean (the catalog answers without one).
    # It is asked only where its answer can differ from the catalog's: families, releases, ranges,
    # ids and names the catalog lacks. A list of catalog products (`pvc,acm-g10`), `none` or sm_90
    # runs no ocloc at configure (a fresh machine against a warm remote cache runs none at all).
    catalog = catalog_for(text, args.ocloc)
    devlist = resolve(text, jit_fallback=jit_fallback, catalog=catalog)
    if args.toolchain == "ocloc":
        check_ocloc(devlist, args.ocloc)

    field = field_report(devlist, field_on)
    if args.json:
        from aotwheel.config import COMPRESS

        # USE_AOT_COMPRESS as written (CMake's variable, else the environment's), else its default
        # (ON): CMake reads no USE_AOT_* environment variable itself, and aotwheel_add_device_code
        # checks the word.
        compress = (args.compress_option or "").strip() or os.environ.get(COMPRESS.name, "").strip() or str(COMPRESS.default)
        print(json.dumps({**devlist.to_dict(), "given": given, "source": source, "no_fp64": field["no_fp64"],
                          "field_defaults": field, "compress": compress}, indent=2))
    elif args.format == "ocloc":
        print(devlist.ocloc_device)
    elif args.format == "sycl-targets":
        print(devlist.sycl_targets)
    elif args.format == "names":
        print(",".join(devlist.names))
    elif args.format == "ips":
        print(",".join(t.ip for t in devlist.targets))
    else:
        print(f"USE_AOT_DEVLIST={text.strip()}" + ("" if source == "the command line" else f"  # from {source}"))
        print(describe(devlist))
        print(describe_field(field))
        unbuildable = [t for t in devlist.targets if catalog.ocloc_version and catalog.source(t.name) == "catalog"]
        if unbuildable:
            from aotwheel.backends.intel.ocloc import build_note

            names = ", ".join(t.name for t in unbuildable)
            print(f"note: the installed ocloc {catalog.ocloc_version} does not know {names}{build_note([t.name for t in unbuildable])}: "
                  "a build stops at configure; 'aotwheel resolve --toolchain ocloc' says how to get one that can")
    return 0


def field_report(devlist, enabled: bool) -> dict[str, object]:
    """The field-default options for ``devlist``'s Intel devices and which of them lack fp64."""
    from aotwheel.backends.intel.catalog import load_catalog
    from aotwheel.backends.intel.options import field_defaults

    cat = load_catalog()
    return field_defaults(devlist.names, no_fp64=cat.no_fp64, emulated=cat.fp64_conv_emulation, enabled=enabled)


def describe_field(field: dict) -> str:
    """Lines for the human-readable report: fp64 and the default options."""
    from aotwheel.backends.intel.options import FP64_POISON_OPTION

    lines = []
    if field["no_fp64"]:
        fate = (f"kernels using double are poisoned there ({FP64_POISON_OPTION}), the rest build" if field["enabled"]
                else f"a kernel using double fails to build for them; add {FP64_POISON_OPTION} to the options")
        lines.append(f"no fp64 (double): {', '.join(field['no_fp64'])}: {fate}")
    if not field["enabled"]:
        lines.append("field defaults: off (USE_AOT_FIELD_DEFAULTS=OFF): only your own ocloc options are passed")
    elif field["ocloc_options"]:
        lines.append(f"field defaults: ocloc -options '{' '.join(field['ocloc_options'])}'")
        icpx = [*field["sycl_compile_options"], *field["sycl_link_options"]]
        lines.append(f"icpx adds: {' '.join(dict.fromkeys(icpx))} (+ -fsycl-max-parallel-link-jobs)")
    return "\n".join(lines)


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
