"""``python -m aotwheel.buildsteps <step> ...``: every step CMake runs, at configure time and on the
build edges (as ``python <...>/aotwheel/buildsteps/__main__.py <step> ...``, which needs no
PYTHONPATH; cmake/aotwheel-config.cmake: ``_AOTWHEEL_STEP_COMMAND``, ``_aotwheel_python``).

compress   one image -> one zstd frame (COMPRESS ON): what a vendor's embed step then .incbin's
manifest   write _aot_manifest.json (every target, whichever function built its images)
cache      print the cache root and its hit/miss/store counters
hook       write <package>/_aot.py (``python -m aotwheel.hook``)
resolve    resolve a device list (``python -m aotwheel resolve``; CMake's aotwheel_resolve_devlist)
<vendor>   that backend's own steps, e.g. ``intel ocloc ...``, ``nvidia compile ...``: the
           build-steps module its registry entry names (``aotwheel.backends.build_module``), imported by name

Errors print ``aotwheel: error: <one line>`` and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file (CMake's build edges): the aotwheel around it, first
    _here = Path(__file__).resolve()
    if sys.path and sys.path[0] == str(_here.parent):  # Python put this folder first (not with -P/PYTHONSAFEPATH)
        del sys.path[0]
    sys.path.insert(0, str(_here.parents[2]))

from aotwheel.buildsteps.edge import run_step, step_parser
from aotwheel.errors import AotwheelError, run_command


def _load_toolchain(path: str) -> dict:
    return json.loads(Path(path).read_text())


def cmd_compress(a: argparse.Namespace) -> int:
    """Store one image as a zstd frame (aotwheel_add_device_code's COMPRESS ON)."""
    from aotwheel.buildsteps.compress import compress_file

    stored, size = compress_file(a.input, a.output, a.level)
    print(f"aotwheel: {Path(a.input).name}: {size} -> {stored} bytes (zstd {a.level})")
    return 0


def cmd_manifest(a: argparse.Namespace) -> int:
    """Write _aot_manifest.json: the core's keys and each backend's part (``manifest.vendor_parts``)."""
    from aotwheel.buildsteps.cache import atomic_write
    from aotwheel.buildsteps.manifest import build_manifest, read_records, remote_outcomes
    from aotwheel.errors import AotwheelError

    images = []
    for spec in a.image or []:
        triple, source, path = spec.split("=", 2)
        # A fat binary's member list sits next to it (written by the fatbin step).
        info = path + ".json" if Path(path + ".json").is_file() else ""
        stored = path + ".zst" if a.compress == "on" else ""  # what is embedded (the compress step's)
        images.append({"triple": triple, "source": source, "path": path, "info": info, "stored": stored})
    from aotwheel import backends

    records: dict[str, list[dict]] = {}
    for spec in a.records or []:
        vendor, sep, list_file = spec.partition("=")
        if not sep or vendor not in backends.names():
            raise AotwheelError(f"--records takes BACKEND=LIST with BACKEND one of {', '.join(backends.names())}, not {spec!r}")
        records.setdefault(vendor, []).extend(read_records(list_file))
    kernels = [k.decode() for k in Path(a.tgtsym).read_bytes().split(b"\0") if k] if a.tgtsym else []
    devlist = json.loads(Path(a.devlist).read_text())
    if a.jit_fallback is not None:
        devlist["jit_fallback"] = a.jit_fallback == "on"
    doc = build_manifest(name=a.name, devlist=devlist, toolchain=_load_toolchain(a.toolchain), options=a.options,
                         images=images, kernels=kernels, records=records,
                         steps={name: backends.build_module(name) for name in backends.names()})
    doc["remote_cache"] = remote_outcomes(Path(a.output).parent)
    atomic_write(Path(a.output), (json.dumps(doc, indent=2) + "\n").encode())
    return 0


def cmd_cache(a: argparse.Namespace) -> int:
    """Print the cache root and the last build's counters as JSON."""
    from aotwheel.buildsteps.cache import DeviceCodeCache

    c = DeviceCodeCache.from_env()
    print(json.dumps({"root": str(c.root) if c.root else None, **c.stats(last_build=True).to_dict()}))
    return 0


def _manifest_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--name", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--devlist", required=True)
    s.add_argument("--toolchain", required=True)
    s.add_argument("--options", default="")
    s.add_argument("--tgtsym")
    s.add_argument("--jit-fallback", choices=("on", "off"), help="what was built (overrides the devlist JSON)")
    s.add_argument("--image", action="append", metavar="TRIPLE=SOURCE=PATH")
    s.add_argument("--records", action="append", metavar="BACKEND=LIST",
                   help="a file naming that backend's image records (JSON files), one a line (repeatable)")
    s.add_argument("--compress", choices=("on", "off"), default="off",
                   help="on: each image is embedded as <path>.zst (the compress step's zstd frame)")


def _compress_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--input", required=True, help="the image (fat binary or SPIR-V)")
    s.add_argument("--output", required=True, help="the zstd frame to write")
    s.add_argument("--level", type=int, default=9, help="zstd level (default 9)")


def _cache_arguments(s: argparse.ArgumentParser) -> None:
    """No arguments: the cache root and counters come from the environment."""


_STEPS = {
    "compress": (_compress_arguments, cmd_compress),
    "manifest": (_manifest_arguments, cmd_manifest),
    "cache": (_cache_arguments, cmd_cache),
}


def _resolve(argv: list[str]) -> int:
    from aotwheel.cli import main as cli_main

    return cli_main(["resolve", *argv])


def _hook(argv: list[str]) -> int:
    from aotwheel.hook import main as hook_main

    return hook_main(argv)


def _vendor_main(module: str, argv: list[str]) -> int:
    import importlib

    steps = importlib.import_module(module)
    return int(steps.main(argv))


def _no_steps(vendor: str) -> int:
    raise AotwheelError(f"the {vendor} backend has no build steps; build its device code with that vendor's own tools")


# Steps with a command line of their own elsewhere: the arguments go there unparsed.
_DELEGATED = {"resolve": _resolve, "hook": _hook}


_PROG = "python -m aotwheel.buildsteps"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``python -m aotwheel.buildsteps`` parser of the core's steps; ``only``: that step's alone."""
    return step_parser(_PROG, __doc__, _STEPS, only)


def main(argv: list[str] | None = None) -> int:
    """Run one step; errors print one line and return 2."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in _DELEGATED:
        return _DELEGATED[argv[0]](argv[1:])
    if argv and argv[0] not in _STEPS:
        from aotwheel.backends import build_module, names

        if argv[0] in names():
            module = build_module(argv[0])  # a vendor's steps: the module its registry entry names
            if module is None:
                return run_command(lambda: _no_steps(argv[0]))
            return _vendor_main(module, argv[1:])
    return run_step(_PROG, __doc__, _STEPS, argv)


if __name__ == "__main__":
    sys.exit(main())
