"""``aotwheel resolve``: what a USE_AOT_DEVLIST value means, before anything compiles."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotwheel.devlist import DevList

SYCL_TARGETS = "sycl-targets"  # --format's one vendor-neutral value (every vendor's -fsycl-targets entries); the rest are the backends'


def register(sub: argparse._SubParsersAction) -> None:
    # The backends' --format values and tools (Capabilities.resolve_formats / .toolchain): building
    # this parser imports the backend objects, which `aotwheel resolve` itself needs anyway.
    from aotwheel import backends
    from aotwheel.backends.capabilities import FormatOption
    from aotwheel.config import DEFAULT_DEVLIST

    everyone = backends.all_backends()
    declared = [f for b in everyone for f in b.capabilities.resolve_formats]
    # A tool's argument first (a backend's tool, then -fsycl-targets), then the plain lists.
    formats = [*(f for f in declared if f.argument), FormatOption(SYCL_TARGETS, "-fsycl-targets", argument=True),
               *(f for f in declared if not f.argument)]
    phrases = [f.phrase for f in formats]
    tools = [t for _, toolchain in backends.toolchains() for t in toolchain.tools]

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
    # Configure's check of variable names (aotwheel.varcheck): the environment's, and these CMake variables'.
    p.add_argument("--check-variables", dest="check_variables", metavar="NAMES", help=argparse.SUPPRESS)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the full result as JSON")
    out.add_argument("--format", choices=[f.word for f in formats], help=f"print one value: {_one_of(phrases)}")
    out.add_argument("--list", action="store_true", help="list every known device, alias and family")
    jit = p.add_mutually_exclusive_group()
    jit.add_argument("--jit-fallback", dest="jit_fallback", action="store_const", const=True, help="keep SPIR-V for JIT (default; env USE_AOT_JIT_FALLBACK)")
    jit.add_argument("--no-jit-fallback", dest="jit_fallback", action="store_const", const=False, help="drop SPIR-V: unlisted devices become unsupported")
    field = p.add_mutually_exclusive_group()
    field.add_argument("--field-defaults", dest="field_defaults", action="store_const", const=True,
                       help="report the options IPEX/torch-xpu-ops pass as in use (default; env USE_AOT_FIELD_DEFAULTS)")
    field.add_argument("--no-field-defaults", dest="field_defaults", action="store_const", const=False,
                       help="report no field-default options (USE_AOT_FIELD_DEFAULTS=OFF)")
    if tools:
        p.add_argument("--toolchain", choices=[t.word for t in tools], help="also check that the installed tool can build every target")
    for tool in tools:
        p.add_argument(f"--{tool.word}", dest=tool.word, metavar="PATH", help=tool.help)
    p.set_defaults(handler=run, toolchain=None)


def _one_of(words: list[str]) -> str:
    """``a, b or c``."""
    return f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else "".join(words)


def _cmake_keys(devlist: DevList, field_defaults: bool) -> dict[str, object]:
    """What CMake reads by vendor, naming none (cmake/aotwheel-config.cmake): each vendor's
    variables (``cmake``), what each vendor that builds lists (``listed``: its targets, else what
    its JIT fallback keeps, for configure's messages) and the vendors ``-fsycl-targets`` builds."""
    return {
        "cmake": {p.vendor: p.cmake_variables(field_defaults) for p in devlist.parts},
        "listed": {p.vendor: list(p.listed) or [p.jit_phrase] for p in devlist.parts if p.builds},
        "sycl_vendors": [p.vendor for p in devlist.parts if p.sycl_targets],
    }


def run(args: argparse.Namespace) -> int:
    import os

    from aotwheel import backends
    from aotwheel.config import DEVLIST, TORCH_ARCH_LIST, devlist_choice, read
    from aotwheel.devlist import describe, resolve
    from aotwheel.errors import DevlistError

    toolchains = backends.toolchains()
    tools = {t.word: getattr(args, t.word, None) for _, toolchain in toolchains for t in toolchain.tools}  # --<tool> PATH
    if args.list:
        lines = [line for _, toolchain in toolchains for line in toolchain.listing(tools)]
        print("\n".join([*lines, "keywords: none (JIT-only), native (devices on this machine), no-jit (drop SPIR-V)"]))
        return 0
    config = read()  # an empty variable counts as unset (the shell idiom `USE_AOT_DEVLIST= cmd`)
    if args.check_variables is not None:
        from aotwheel.config import all_variables
        from aotwheel.varcheck import check

        names = {n: "environment" for n in os.environ}
        names.update({n: "CMake variable" for n in args.check_variables.split(",") if n})
        check(names, (v.name for v in all_variables()), config.allow_undeclared)
    explicit = args.text if args.devlist_option is None else args.devlist_option
    if explicit is not None and args.devlist_option is None and explicit.strip():
        text, source = explicit, "the command line"
    else:  # CMake's variables (empty = unset), then the environment's chain
        text, source = devlist_choice(os.environ, explicit, args.torch_option)
        source = {DEVLIST.name: args.devlist_from or "--devlist",
                  TORCH_ARCH_LIST.name: f"{TORCH_ARCH_LIST.name} (CMake variable)"}.get(source, source)
    given = source != "the default"  # the user named these devices (a vendor without a build step then stops configure)
    jit_fallback = config.jit_fallback if args.jit_fallback is None else args.jit_fallback
    field_on = config.field_defaults if args.field_defaults is None else args.field_defaults

    # Each backend's toolchain facts, as far as its grammar needs them for this text (Intel asks
    # the installed ocloc only for names whose meaning it can change: no ocloc runs for pvc or sm_90).
    # Printed for a person (no --json / --format): the installed tools' view, whose notes say what they cannot build.
    person = not args.json and not args.format
    tables = {name: t for name, toolchain in toolchains if (t := toolchain.table(text, tools, installed=person)) is not None}
    try:
        devlist = resolve(text, jit_fallback=jit_fallback, tables=tables)
    except DevlistError as exc:  # the grammar speaks of USE_AOT_DEVLIST: name the variable the list came from
        if source.startswith(TORCH_ARCH_LIST.name):
            raise DevlistError(str(exc).replace(DEVLIST.name, source, 1), exc.token, exc.suggestions) from None
        raise
    if args.toolchain:
        for name, toolchain in toolchains:
            part = devlist.part(name)
            if any(t.word == args.toolchain for t in toolchain.tools) and part is not None:
                toolchain.check(part, args.toolchain, tools.get(args.toolchain))

    reports = [p.report(field_on) for p in devlist.parts]
    if args.json:
        import json

        from aotwheel.config import COMPRESS

        # USE_AOT_COMPRESS as written (CMake's variable, else the environment's), else its default
        # (ON): CMake reads no USE_AOT_* environment variable itself, and aotwheel_add_device_code
        # checks the word.
        compress = (args.compress_option or "").strip() or str(COMPRESS.get())
        extra = {k: v for fields, _ in reports for k, v in fields.items()}  # the backends' (Intel: fp64, field defaults)
        print(json.dumps({**devlist.to_dict(), "given": given, "source": source, **extra, "compress": compress,
                          **_cmake_keys(devlist, field_on)}, indent=2))
    elif args.format == SYCL_TARGETS:
        print(devlist.sycl_targets)
    elif args.format:
        print(next((v for p in devlist.parts if (v := p.formats().get(args.format)) is not None), ""))
    else:
        print(f"{DEVLIST.name}={text.strip()}" + ("" if source == "the command line" else f"  # from {source}"))
        print(describe(devlist))
        for _, lines in reports:
            for line in lines:
                print(line)
    return 0
