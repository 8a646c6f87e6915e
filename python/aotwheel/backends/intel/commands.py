"""``aotwheel compile``: any SPIR-V module -> an ocloc fat binary (or one binary per device).

This backend's SPIR-V compiler (``IntelBackend.spirv_compiler``): the command's options, build and
report. The command is registered by :mod:`aotwheel.cli.compile` (which the backend lists in
``IntelBackend.commands``, as cibuildwheel's platform modules bring their own steps) and runs
:func:`run` with the core's devlist resolver; :mod:`aotwheel.compile` calls
:func:`compile_spirv_report` likewise."""

from __future__ import annotations

import argparse
import json
import sys

TYPE_CHECKING = False  # the command's start-up: no typing import
if TYPE_CHECKING:
    from typing import Any

    from aotwheel.backends.intel.build.compile import CompileResult, DeviceBuild, Resolver

HELP = "compile a SPIR-V module for a device list (Triton / Inductor kernels)"
DESCRIPTION = ("Compile IN.spv for every device of DEVLIST with ocloc, one job per device in parallel, "
               "through the device-code cache ($AOTWHEEL_CACHE_DIR). The output equals `ocloc compile -device a,b,...`: "
               "a fat binary with one member per image and generic_ir (the SPIR-V) for JIT fallback; one image serves several "
               "devices where the driver's compatibility rules let it from --min-driver on (members 64.bmg, 64.ptl, as "
               "`ocloc -device bmg,ptl` names them), else one image per device (members 64.<ip>).")


def compile_spirv_report(spirv: bytes, devlist: Any, *, resolve: Resolver, **options: Any) -> CompileResult:
    """Build ``spirv`` for ``devlist`` (:func:`aotwheel.backends.intel.build.compile.compile_spirv_report`)."""
    from aotwheel.backends.intel.build.compile import compile_spirv_report as build

    return build(spirv, devlist, resolve=resolve, **options)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``aotwheel compile``."""
    p.add_argument("input", metavar="IN.spv", help="SPIR-V module")
    p.add_argument("-d", "--devlist", default=None,
                   help="devices, USE_AOT_DEVLIST grammar (default, or when empty: $USE_AOT_DEVLIST, else "
                   "$TORCH_XPU_ARCH_LIST, else aotwheel's default devlist)")
    p.add_argument("-o", "--output", default=None, help="output file (fatbin) or folder (dir); default IN.ar / IN.d")
    p.add_argument("--options", default="", help="ocloc -options, one string (e.g. \"-cl-fast-relaxed-math\"), "
                   "added to the field defaults")
    p.add_argument("--no-field-defaults", action="store_true",
                   help="do not pass the ocloc options IPEX and torch-xpu-ops pass (-cl-intel-enable-auto-large-GRF-mode "
                   "-cl-poison-unsupported-fp64-kernels -cl-intel-greater-than-4GB-buffer-required); "
                   "env USE_AOT_FIELD_DEFAULTS=OFF does the same")
    p.add_argument("--format", choices=("fatbin", "dir"), default="fatbin",
                   help="fatbin: one ocloc-compatible ar; dir: <device>.bin per image, named by the device it is built for "
                   "(+ generic_ir.spv with JIT fallback)")
    p.add_argument("--grf", choices=("small", "large", "auto"), default="small",
                   help="register file: small (ocloc default), large (-cl-intel-256-GRF-per-thread), "
                   "auto (large where the small build spills)")
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


def _name(b: DeviceBuild) -> str:
    """A device's name in the report, with the member it shares where one image serves several."""
    shared = f" as {b.member}, native on {', '.join(b.serves)}" if b.serves != (b.device,) or b.member != f"64.{b.ip}" else ""
    return f"{b.device} ({b.ip}){shared}"


def _report(b: DeviceBuild, image_format: str) -> str:
    """One device's line of the report: format, size, GRF, where it came from, spills, poisoned kernels."""
    note = "cache hit" if b.cache_hit else "compiled"
    if b.retried_after_spills:
        worst = max(s.spill_bytes for s in b.retried_after_spills)
        note += f"; small GRF spilled (~{worst} bytes), rebuilt with large GRF"
    if b.spills:
        note += f"; spills ~{max(s.spill_bytes for s in b.spills)} bytes with {b.grf} GRF"
    if b.poisoned:
        note += f"; no fp64 here, poisoned (return without computing): {', '.join(b.poisoned)}"
    return f"{image_format}, {b.size} bytes, {b.grf} GRF, {note}"


def run(args: argparse.Namespace, resolve: Resolver) -> int:
    """Compile (the device list resolved by ``resolve``, the core's), write the output only when
    every device built, print the report."""
    import os
    from pathlib import Path

    from aotwheel import config
    from aotwheel.backends.intel.build.compile import write_outputs
    from aotwheel.backends.intel.variables import OCLOC_JOBS
    from aotwheel.errors import AotwheelError

    jobs = args.jobs
    if jobs is None and os.environ.get(OCLOC_JOBS.name, "").strip():
        text = os.environ[OCLOC_JOBS.name].strip()
        if not text.isdigit():
            raise AotwheelError(f"AOTWHEEL_OCLOC_JOBS={text!r} is not a number of jobs; set it to 1 or more, or unset it")
        jobs = int(text)
    if jobs is not None and jobs < 1:
        raise AotwheelError(f"--jobs / AOTWHEEL_OCLOC_JOBS must be at least 1, not {jobs}")
    try:
        spirv = Path(args.input).read_bytes()
    except OSError as exc:
        raise AotwheelError(f"cannot read {args.input}: {exc.strerror or exc}") from None
    from aotwheel.buildsteps.progress import Progress

    settings = config.read()
    devlist = args.devlist if args.devlist and args.devlist.strip() else settings.devlist  # empty = unset
    from aotwheel.backends.intel.variables import MIN_DRIVER

    min_driver = args.min_driver if args.min_driver is not None else os.environ.get(MIN_DRIVER.name)
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
                                  grf=args.grf, jobs=jobs, field_defaults=settings.field_defaults and not args.no_field_defaults,
                                  image_format="legacy" if args.legacy_images else None, format_source="--legacy-images",
                                  min_driver=min_driver, progress=finished)
    if progress is not None:
        progress.close()
    stem = Path(args.input)
    output = args.output or str(stem.with_suffix(".ar" if args.format == "fatbin" else ".d"))
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
