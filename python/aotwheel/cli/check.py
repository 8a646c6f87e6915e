"""``aotwheel devices``, ``aotwheel check`` and ``aotwheel selftest``: the run-time side.

When ``OCL_ICD_VENDORS`` is unset and Intel's CPU OpenCL runtime is installed from PyPI in this
environment, these commands point the OpenCL loader at it (library calls never touch the
environment). ``--device`` overrides the probes exactly like ``AOTWHEEL_DEVICE``; it is passed
down as an argument, never written to the environment.
"""

from __future__ import annotations

import argparse
import json
import sys

from aotwheel.cli.options import devlist_option

TYPE_CHECKING = False  # not typing's: this module is imported for every `aotwheel check`
if TYPE_CHECKING:
    from aotwheel.runtime import Checked


def _device_help() -> str:
    """``--device``'s help: every backend's tokens and examples (its settings module's, standard
    library only: help imports no backend object), and ``cpu``."""
    from aotwheel import backends
    from aotwheel.variables import DEVICE

    words = [backends.settings(name) for name in backends.names()]
    return (f"devices to assume instead of probing: {', '.join(w.DEVICE_KINDS for w in words)} or 'cpu', "
            f"comma-separated (same as ${DEVICE.name}; e.g. {', '.join(e for w in words for e in w.DEVICE_EXAMPLES)})")


def register(sub: argparse._SubParsersAction) -> None:
    device_help = _device_help()
    p = sub.add_parser("devices", help="list the devices this machine has (Level Zero, OpenCL, SYCL, torch.xpu, CUDA)",
                       description="Probe every runtime for devices; runtimes that are missing say why.")
    p.add_argument("--json", action="store_true", help="print the probes' results as JSON")
    devlist_option(p, help=device_help, old=("--device",), dest="device")
    p.set_defaults(handler=run_devices)

    p = sub.add_parser("check", help="native, JIT or unsupported: a binary's device code on this machine's devices",
                       description="For each device here (or --devlist), say whether BINARY's device code runs native, "
                                   "is JIT-compiled (SPIR-V, PTX) at first use, or cannot run, and which rule decided it; "
                                   "every device of every vendor gets a verdict for every binary. Exit status 1 when a "
                                   "device is unsupported or --jit error meets a JIT verdict, 2 for bad input (an unreadable binary included).")
    p.add_argument(
        "binary", metavar="BINARY", help="a .so, wheel, directory, fat binary, .bin or .spv; or a module or package name such as aotwheel._kernels or dpnp"
    )
    devlist_option(p, help=device_help, old=("--device",), dest="device")
    p.add_argument("--json", action="store_true", help='print {"verdicts": [...]} as JSON')
    p.add_argument("--jit", choices=("warn", "error", "ignore"), help="JIT policy (default: $AOTWHEEL_JIT, else warn)")
    p.add_argument("--strict-compat", action="store_true",
                   help="model a driver without compatibility mode (a product-config mismatch is never accepted)")
    p.set_defaults(handler=run_check)

    p = sub.add_parser("selftest", help="load device code on every OpenCL and CUDA device; run aotwheel's own kernels against NumPy",
                       description="Create the programs of aotwheel's kernels, or of SOURCE (native on Intel GPUs, SPIR-V JIT "
                                   "elsewhere; cubin or PTX on NVIDIA GPUs), and every kernel in them, on every device found; run "
                                   "aotwheel's own kernels against a NumPy reference and print verdict, build time and max error "
                                   "(a kernel of yours is checked by being created). Exit status 1 when a kernel fails.")
    p.add_argument("sources", nargs="*", metavar="SOURCE",
                   help="device code to test instead of aotwheel._kernels: .spv files, binaries with SPIR-V (your extension's .so) "
                   "or module names; each kernel is created, and aotwheel's own are also run")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--simulate", metavar="DEVICES",
                   help="instead: load every image on GPUs the installed driver simulates without hardware (catalog names, "
                        "e.g. pvc,bmg-g21, or all) and create every kernel, none run: native / jit / fail per device")
    p.set_defaults(handler=run_selftest)


def _prepare(args: argparse.Namespace) -> None:
    from aotwheel import backends

    del args  # --device travels as an argument (check(devices=...)), never through os.environ
    for backend in backends.all_backends():
        if (prepare := backend.capabilities.prepare_probes) is not None:
            prepare()


def run_devices(args: argparse.Namespace) -> int:
    from aotwheel.probe import merge, probe_all
    from aotwheel.probe.override import from_environment, parse
    from aotwheel.variables import DEVICE

    _prepare(args)
    forced = parse(args.device, source=args.device_option) if args.device else from_environment()
    results = probe_all(heavy=True)
    devices = forced if forced is not None else merge(results)
    if args.json:
        print(json.dumps({"override": forced is not None, "devices": [d.to_dict() for d in devices],
                          "probes": [r.to_dict() for r in results]}, indent=2))
        return 0
    if forced is not None:
        print(f"{args.device_option if args.device else DEVICE.name} override (probes not used):")
    for d in devices:
        extra = ", ".join(x for x in (f"IP {d.ip}" if d.ip else "IP unknown", d.catalog or "", d.vendor) if x)
        print(f"  {d.kind:<5} {d.name} [{d.backend}] ({extra})")
    if not devices:
        print("no devices found")
    print("probes:")
    for r in results:
        print(f"  {r.backend:<10} {len(r.devices)} device(s)" + (f": {r.reason}" if r.reason else ""))
    return 0


def run_check(args: argparse.Namespace) -> int:
    from aotwheel.probe.override import from_environment, parse
    from aotwheel.runtime import JITError, evaluate

    # The devices first: a typo fails before the binary is read, in the flag's own words; named
    # devices (--device or AOTWHEEL_DEVICE) leave every runtime unprobed.
    forced = parse(args.device, source=args.device_option) if args.device else from_environment()
    if forced is None:
        _prepare(args)
    try:
        checked = evaluate(args.binary, forced, policy=args.jit, compatibility=not args.strict_compat,
                           policy_given=f"--jit {args.jit}" if args.jit else None)
    except JITError as exc:  # the policy rejects a verdict: exit 1, not the bad-input 2
        if args.json:
            print(json.dumps({"binary": args.binary, "error": str(exc)}, indent=2))
        print(f"aotwheel: error: {exc}", file=sys.stderr)
        return 1
    verdicts, elsewhere = checked.verdicts, checked.elsewhere
    # A damaged image slot (aotwheel.slots): no verdict came from it; say why, on stderr and in the JSON.
    warnings = [f"{fr.path}: {w}" for fr in checked.files for w in getattr(fr, "warnings", ()) if " is damaged: " in w]
    for w in warnings:
        print(f"aotwheel: warning: {w}", file=sys.stderr)
    cached = _cached_native_builds(checked)
    sycl = _sycl_cache_note(verdicts)
    if args.json:
        rows = [{**v.to_dict(), **({"cached_native_build": cached[i]} if i in cached else {}),
                 **({"for_this_device": False} if i in elsewhere else {})} for i, v in enumerate(verdicts)]
        print(json.dumps({"binary": args.binary, "verdicts": rows, "warnings": warnings, **({"sycl_cache": sycl} if sycl else {})}, indent=2))
    else:
        if not verdicts:  # devices were found (else each file gets a no-device verdict): nothing for them to load
            print(f"{args.binary}: no device code (no GPU image or IR of any vendor in it): nothing to check")
        binaries = list(dict.fromkeys(v.binary or args.binary for v in verdicts))
        for binary in binaries:
            indent = ""
            if len(binaries) > 1:  # a package, directory or wheel: name each binary
                print(binary)
                indent = "  "
            for i, v in enumerate(verdicts):
                if (v.binary or args.binary) == binary and i in elsewhere:
                    why = v.reason.removeprefix("unsupported: ").split(", none of which")[0]
                    print(f"{indent}{v.device}{f' ({v.ip})' if v.ip else ''}: not for this device [rule other-vendor] - {why}; "
                          "another library of the package serves it")
                elif (v.binary or args.binary) == binary:
                    where = f" {v.image}" if v.image else ""
                    fix = f"; {v.remedy}" if v.remedy and v.verdict != "native" and "rebuild with" not in v.reason else ""
                    print(f"{indent}{v.device}{f' ({v.ip})' if v.ip else ''}: {v.summary}{_cached_label(cached.get(i))}{where} "
                          f"[rule {v.rule}] - {v.reason}{fix}")
                    if v.carried is not None:  # images the library loads itself (issue 39): not in the verdict or exit status
                        print(f"{indent}  carried, loaded by the library itself: {v.carried}{f' {v.carried_image}' if v.carried_image else ''}")
        if len(binaries) > 1:
            from aotwheel.runtime import summarize

            print(f"{args.binary}: {summarize(verdicts)}")
        if sycl:
            print(f"SYCL: {sycl['advice']}")
    if any(v.rule == "unreadable" for v in verdicts):
        return 2
    return 1 if any(v.verdict == "unsupported" for i, v in enumerate(verdicts) if i not in elsewhere) else 0


def _cached_native_builds(checked: Checked) -> dict[int, dict[str, int]]:
    """Per verdict index, the modules of a JIT verdict's binary that aotwheel.opencl's JIT cache
    already holds native builds of (``{"modules": n, "cached": k}``), from the devices and the
    inspected files of the check (nothing is probed or inspected again)."""
    if not any(v.verdict == "jit" for v in checked.verdicts):
        return {}  # nothing to look up, and aotwheel.opencl stays unimported
    from aotwheel.opencl import cached_native_builds

    return cached_native_builds(checked.verdicts, checked.devices, checked.files_by_binary())


def _cached_label(entry: dict[str, int] | None) -> str:
    if not entry or not entry["cached"]:
        return ""
    if entry["cached"] == entry["modules"]:
        return " (cached native build)"
    return f" (cached native build for {entry['cached']} of {entry['modules']} modules)"


def _sycl_cache_note(verdicts: list) -> dict[str, object] | None:
    """The SYCL runtime's persistent-cache state, when a JIT verdict's binary links libsycl."""
    binaries = [v.binary.split("!")[0] for v in verdicts if v.verdict == "jit" and v.binary]
    if not binaries:
        return None  # no binary to look at, and aotwheel.syclcache stays unimported
    from aotwheel import syclcache

    if not any(syclcache.links_sycl(b) for b in binaries):
        return None
    st = syclcache.state()
    return {"persistent": st.persistent, "folder": st.folder, "advice": st.advice()}


def run_selftest(args: argparse.Namespace) -> int:
    from aotwheel.selftest import format_results, modules_from_extension, modules_from_path, run

    _prepare(args)
    from aotwheel.errors import AotwheelError

    opencl_error: AotwheelError | None = None
    if args.simulate:
        from aotwheel import backends

        simulator = backends.simulator()
        devices = simulator.named_devices(args.simulate)  # a bad name fails before any image is read
        modules = [m for s in args.sources for m in modules_from_path(s)] if args.sources else modules_from_extension()
        from aotwheel.runtime import check

        results = simulator.selftest(modules, devices, lambda path, device: str(check(path, [device], policy="ignore")[0].verdict))
        print(json.dumps({"results": [r.to_dict() for r in results]}, indent=2) if args.json else format_results(results))
        return 0 if all(r.ok for r in results) else 1
    try:
        modules = [m for s in args.sources for m in modules_from_path(s)] if args.sources else modules_from_extension()
        results = run(modules)
    except AotwheelError as exc:  # e.g. no pyopencl on a CUDA-only machine: the CUDA part may still run
        results, opencl_error = [], exc
    # Devices outside OpenCL (NVIDIA GPUs through the CUDA driver): each backend runs the same
    # kernels from the binaries' own images.
    from aotwheel import backends
    from aotwheel.runtime import resolve_binary

    for binary in args.sources or ["aotwheel._kernels"]:
        try:
            path = resolve_binary(binary)
        except AotwheelError:
            continue
        for backend in backends.all_backends():
            if (selftest := backend.capabilities.selftest) is not None:
                results += selftest(path)
    if not results and opencl_error is not None:
        raise opencl_error
    if args.json:
        print(json.dumps({"results": [r.to_dict() for r in results]}, indent=2))
    else:
        print(format_results(results))
    return 0 if all(r.ok for r in results) else 1
