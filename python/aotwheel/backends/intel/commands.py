"""``aotwheel compile``: any SPIR-V module -> an ocloc fat binary (or one binary per device).

This backend's SPIR-V compiler (its settings' ``SPIRV_COMPILER``): the command's options, build and
report. The command is registered by :mod:`aotwheel.cli.compile` (which the backend lists in
its settings' ``COMMANDS``, as cibuildwheel's platform modules bring their own steps) and runs
:func:`run` with the core's devlist resolver; :mod:`aotwheel.compile` calls
:func:`compile_spirv_report` likewise."""

from __future__ import annotations

import argparse
import json
import sys

TYPE_CHECKING = False  # the command's start-up: no typing import
if TYPE_CHECKING:
    from typing import Any

    from aotwheel.backends.intel.buildsteps.compile import CompileResult, DeviceBuild, Resolver

HELP = "compile a SPIR-V module for a device list (Triton / Inductor kernels)"
DESCRIPTION = ("Compile IN.spv for every device of DEVLIST with ocloc, one job per device in parallel, "
               "through the device-code cache ($AOTWHEEL_CACHE_DIR). The output equals `ocloc compile -device a,b,...`: "
               "a fat binary with one member per image and generic_ir (the SPIR-V) for JIT fallback; one image serves several "
               "devices where the driver's compatibility rules let it from --min-driver on (members 64.bmg, 64.ptl, as "
               "`ocloc -device bmg,ptl` names them), else one image per device (members 64.<ip>). "
               "IN may also be a Triton-XPU kernel as Triton leaves it (a .spv beside its metadata .json, a cache entry, "
               "or a folder of them such as $TRITON_CACHE_DIR): each is built with its build_flags, for its own target "
               "unless -d names devices, into one fat binary per kernel (OUT/<hash>/<name>.ar + aotwheel-triton.json).")


def compile_spirv_report(spirv: bytes, devlist: Any, *, resolve: Resolver, **options: Any) -> CompileResult:
    """Build ``spirv`` for ``devlist`` (:func:`aotwheel.backends.intel.buildsteps.compile.compile_spirv_report`)."""
    from aotwheel.backends.intel.buildsteps.compile import compile_spirv_report as build

    return build(spirv, devlist, resolve=resolve, **options)


def compile_triton(paths: list[Any], devlist: Any, *, resolve: Resolver, output: str | None = None, **options: Any) -> list[Any]:
    """The Triton kernels at ``paths`` built (:func:`aotwheel.backends.intel.triton.compile_kernels`),
    and written to ``output`` when given."""
    from pathlib import Path

    from aotwheel.backends.intel.triton import compile_kernels, find_kernels, write_kernels

    kernels = [k for p in paths for k in find_kernels(Path(p))]
    builds = compile_kernels(kernels, devlist, resolve=resolve, **options)
    if output is not None:
        write_kernels(builds, output)
    return builds


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``aotwheel compile``."""
    p.add_argument("input", metavar="IN.spv", help="SPIR-V module, or Triton kernel(s): a .spv beside its .json, a cache entry or folder")
    p.add_argument("-d", "--devlist", default=None,
                   help="devices, USE_AOT_DEVLIST grammar (default, or when empty: $USE_AOT_DEVLIST, else "
                   "$TORCH_XPU_ARCH_LIST, else aotwheel's default devlist)")
    p.add_argument("-o", "--output", default=None, help="output file (fatbin) or folder (dir; a folder of Triton kernels); default IN.ar / IN.d / IN.aot")
    p.add_argument("--options", default="", help="ocloc -options, one string (e.g. \"-cl-fast-relaxed-math\"; the word "
                   "after --options is its value even when it starts with -), added to the field defaults (to build_flags for Triton)")
    p.add_argument("--no-field-defaults", action="store_true",
                   help="do not pass the ocloc options IPEX and torch-xpu-ops pass (-cl-intel-enable-auto-large-GRF-mode "
                   "-cl-poison-unsupported-fp64-kernels -cl-intel-greater-than-4GB-buffer-required); "
                   "env USE_AOT_FIELD_DEFAULTS=OFF does the same; Triton kernels never get them (their build_flags are the options)")
    p.add_argument("--format", choices=("fatbin", "dir"), default="fatbin",
                   help="fatbin: one ocloc-compatible ar; dir: <device>.bin per image, named by the device it is built for "
                   "(+ generic_ir.spv with JIT fallback)")
    p.add_argument("--grf", choices=("default", "small", "large", "auto"), default=None,
                   help="register file: default (the options as given: ocloc picks, 256 on pvc when it likes under "
                   "-cl-intel-enable-auto-large-GRF-mode), small (-cl-intel-128-GRF-per-thread), large "
                   "(-cl-intel-256-GRF-per-thread), auto (default, then large where that build spilled and more registers "
                   "are possible; the default for Triton kernels, as Triton's own native path). The report gives the "
                   "registers ocloc allocated, read from the image")
    p.add_argument("--strict-target", action="store_true",
                   help="Triton kernels: refuse (exit 2) a listed device other than the GPU the kernel was specialised "
                   "for (default: build it and warn)")
    # --no-jit-fallback as `aotwheel resolve` spells it; --no-jit, the older spelling, stays hidden.
    p.add_argument("--no-jit-fallback", dest="no_jit", action="store_true", help="no generic_ir member (no JIT fallback)")
    p.add_argument("--no-jit", dest="no_jit", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--min-driver", default=None, metavar="YY.WW",
                   help="the oldest Intel driver (compute-runtime release, e.g. 26.05) every listed device must run natively "
                   "on: one image serves several devices where its rules allow (default: $USE_AOT_MIN_DRIVER, else auto: "
                   "the release that first runs every listed device)")
    p.add_argument("--legacy-images", action="store_true",
                   help="write legacy patch-token images instead of zebin (only an ocloc that still offers them, such as "
                   "Debian 12's 22.43; compute-runtime 26.18 and newer JIT-compile them); env USE_AOT_IMAGE_FORMAT=legacy "
                   "does the same")
    p.add_argument("-j", "--jobs", type=int, default=None,
                   help="parallel ocloc jobs (default: $AOTWHEEL_OCLOC_JOBS, else the CPU count)")
    p.add_argument("--json", action="store_true", help="print the per-device report as JSON")
    _value_after(p, "--options")


def _value_after(p: argparse.ArgumentParser, option: str) -> None:
    """Make the word after ``option`` its value even when it starts with ``-`` (every ocloc option
    does): argparse takes ``--options -cl-fast-relaxed-math`` for two options and stops with
    "expected one argument". The subcommand's parser is handed its words through
    ``parse_known_args`` (Python 3.10 to 3.14), where ``option VALUE`` becomes ``option=VALUE``."""
    parse = p.parse_known_args

    def joined(args: Any = None, namespace: Any = None) -> Any:
        words = list(sys.argv[1:] if args is None else args)
        out: list[str] = []
        i = 0
        while i < len(words):
            if words[i] == "--":
                out.extend(words[i:])
                break
            if words[i] == option and i + 1 < len(words):
                out.append(f"{option}={words[i + 1]}")
                i += 2
                continue
            out.append(words[i])
            i += 1
        return parse(out, namespace)

    p.parse_known_args = joined  # type: ignore[method-assign]


def _name(b: DeviceBuild) -> str:
    """A device's name in the report, with the member it shares where one image serves several."""
    shared = f" as {b.member}, native on {', '.join(b.serves)}" if b.serves != (b.device,) or b.member != f"64.{b.ip}" else ""
    return f"{b.device} ({b.ip}){shared}"


def _report(b: DeviceBuild, image_format: str) -> str:
    """One device's line of the report: format, size, the GRF ocloc allocated (read from the image),
    where it came from, spills, what --grf auto tried, poisoned kernels."""
    regs = f"{b.registers} registers" if b.registers else "registers not recorded in the image"
    note = "cache hit" if b.cache_hit else "compiled"
    if b.spills:
        note += f"; spills ~{max(s.spill_bytes for s in b.spills)} bytes"
    if len(b.tried) > 1:
        steps = [f"{a.added or 'no GRF option'}: {a.registers} registers, "
                 + (f"spilled ~{max(s.spill_bytes for s in a.spills)} bytes" if a.spills else "no spills")
                 + (" (kept)" if a.kept else "") for a in b.tried]
        note += "; tried " + " then ".join(steps)
    if b.note:
        note += f"; {b.note}"
    if b.poisoned:
        note += f"; no fp64 here, poisoned (return without computing): {', '.join(b.poisoned)}"
    return f"{image_format}, {b.size} bytes, {b.grf} GRF ({regs}), {note}"


def run(args: argparse.Namespace, resolve: Resolver) -> int:
    """Compile (the device list resolved by ``resolve``, the core's), write the output only when
    every device built, print the report."""
    from pathlib import Path

    from aotwheel.backends.intel.buildsteps.compile import write_outputs
    from aotwheel.backends.intel.variables import OCLOC_JOBS
    from aotwheel.errors import AotwheelError

    jobs = args.jobs
    if jobs is None and (text := OCLOC_JOBS.given()) is not None:
        if not text.isdigit():
            raise AotwheelError(f"AOTWHEEL_OCLOC_JOBS={text!r} is not a number of jobs; set it to 1 or more, or unset it")
        jobs = int(text)
    if jobs is not None and jobs < 1:
        raise AotwheelError(f"--jobs / AOTWHEEL_OCLOC_JOBS must be at least 1, not {jobs}")
    from aotwheel.backends.intel.triton import is_triton_input

    path = Path(args.input)
    if is_triton_input(path):
        return _run_triton(args, path, resolve, jobs)
    try:
        spirv = path.read_bytes()
    except OSError as exc:
        raise AotwheelError(f"cannot read {args.input}: {exc.strerror or exc}") from None
    if args.strict_target:
        raise AotwheelError("--strict-target is for Triton kernels (a .spv beside its metadata .json); drop it for a bare SPIR-V module")
    from aotwheel.backends.intel.variables import MIN_DRIVER
    from aotwheel.buildsteps.progress import Progress
    from aotwheel.variables import FIELD_DEFAULTS, flag

    devlist = args.devlist or ""  # empty = unset: the core's resolver takes the settings' list
    field_defaults = flag(FIELD_DEFAULTS.get(), name=FIELD_DEFAULTS.name) and not args.no_field_defaults

    min_driver = args.min_driver if args.min_driver is not None else MIN_DRIVER.given()
    # Each image as it finishes: on a terminal one live line (stdout's, or stderr's under --json),
    # erased before the report; in a log its report line, numbered, at once (the report is those lines).
    live = sys.stderr if args.json else sys.stdout
    log = not args.json and not live.isatty()
    progress: Progress | None = None

    def finished(build: DeviceBuild, seconds: float, images: int, image_format: str) -> None:
        nonlocal progress
        if progress is None:
            progress = Progress(images, sys.stdout if log else live)
        if log:
            print(progress.line(_name(build), seconds, _report(build, image_format)), flush=True)
        elif progress.live:
            progress.done(build.device, seconds)

    result = compile_spirv_report(spirv, devlist, resolve=resolve, options=args.options, jit_fallback=not args.no_jit,
                                  grf=args.grf or "default", jobs=jobs,
                                  field_defaults=field_defaults,
                                  image_format="legacy" if args.legacy_images else None, format_source="--legacy-images",
                                  min_driver=min_driver, progress=finished)
    if progress is not None:
        progress.close()
    output = args.output or str(path.with_suffix(".ar" if args.format == "fatbin" else ".d"))
    written = write_outputs(result, output, args.format)
    if args.json:
        print(json.dumps({**result.to_dict(), "format": args.format, "written": written}, indent=2))
        return 0
    if not log:
        for b in result.builds:
            print(f"{_name(b)}: {_report(b, result.image_format)}")
    ir = " + generic_ir (JIT fallback)" if result.jit_fallback else ""
    print(f"wrote {', '.join(written)}{ir if args.format == 'fatbin' else ''}", file=sys.stdout)
    return 0


def _run_triton(args: argparse.Namespace, path: Any, resolve: Resolver, jobs: int | None) -> int:
    """Triton kernels: one file -> its fat binary (or --format dir) as for SPIR-V; a folder -> one
    fat binary per kernel in OUT (default IN.aot) with aotwheel-triton.json."""
    from aotwheel.backends.intel.buildsteps.compile import write_outputs
    from aotwheel.backends.intel.triton import compile_kernels, find_kernels, write_kernels
    from aotwheel.errors import AotwheelError

    kernels = find_kernels(path)
    if path.is_dir() and args.format != "fatbin":
        raise AotwheelError("--format dir takes one kernel; a folder of Triton kernels gives one fat binary per kernel (drop --format)")
    devlist = args.devlist if args.devlist and args.devlist.strip() else None  # None: each kernel's own target

    from aotwheel.backends.intel.variables import MIN_DRIVER

    builds = compile_kernels(kernels, devlist, resolve=resolve, options=args.options, grf=args.grf or "auto",
                             jit_fallback=not args.no_jit, jobs=jobs, strict_target=args.strict_target,
                             image_format="legacy" if args.legacy_images else None,
                             min_driver=args.min_driver if args.min_driver is not None else MIN_DRIVER.given())
    if path.is_dir():
        written = write_kernels(builds, args.output or f"{str(path).rstrip('/')}.aot")
    else:
        output = args.output or str(kernels[0].spv.with_suffix(".ar" if args.format == "fatbin" else ".d"))
        written = write_outputs(builds[0].result, output, args.format)
    if args.json:
        print(json.dumps({"kernels": [b.to_dict() for b in builds], "format": args.format, "written": written}, indent=2))
        return 0
    for b in builds:
        k = b.kernel
        print(f"{k.name} ({k.key}): Triton target {k.target_ip or 'unknown'}, ocloc -options {b.result.options!r}")
        for d in b.result.builds:
            print(f"  {_name(d)}: {_report(d, b.result.image_format)}")
    print(f"wrote {', '.join(written)}")
    return 0

