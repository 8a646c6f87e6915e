"""``aotwheel build``: the open toolchain, the device-code caches, and warming a remote cache.

``aotwheel build cache``       local and remote hits, misses, bytes and failures of the last build
``aotwheel build toolchain``   the tools found (and, with ``--devices``, whether ocloc builds them)
``aotwheel build warm --shard i/n [--devlist …] [SOURCE_DIR]``
                               compile this shard's device-code jobs of SOURCE_DIR and push them to
                               ``AOTWHEEL_REMOTE_CACHE``, without building the extension or a wheel
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from aotwheel.errors import AotwheelError


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``aotwheel build {toolchain,cache,warm}`` to the CLI."""
    p = sub.add_parser(
        "build",
        help="show the open toolchain and the device-code caches; warm a remote cache",
        description="Inspect what aotwheel_add_device_code uses: clang/llvm-spirv/ocloc and the device-code cache "
        "($AOTWHEEL_CACHE_DIR, 'off' disables; default $XDG_CACHE_HOME/aotwheel or ~/.cache/aotwheel) with the "
        "remote stores of $AOTWHEEL_REMOTE_CACHE; or warm the remote cache with one shard of a project's jobs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    what = p.add_subparsers(dest="what", required=True, metavar="{toolchain,cache,warm}")
    t = what.add_parser("toolchain", help="the tools found")
    t.add_argument("--devices", default="", help="also check ocloc can build these (comma-separated canonical names)")
    c = what.add_parser("cache", help="local and remote hits, misses, bytes and failures of the last build")
    w = what.add_parser("warm", help="compile this shard's device code of a project and push it; no wheel")
    w.add_argument("source_dir", nargs="?", default=".", help="the project (with its CMakeLists.txt); default .")
    w.add_argument("--shard", help="this runner's slice i/n (1 <= i <= n); default: all jobs")
    w.add_argument("--devlist", help="USE_AOT_DEVLIST for the project (default: the environment's)")
    w.add_argument("--build-dir", help="the CMake build tree (default: a temporary one, removed after)")
    for q in (t, c, w):
        q.add_argument("--json", action="store_true", help="print JSON")
        q.set_defaults(handler=run)


def _print(doc: dict[str, object], as_json: bool) -> None:
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        for key, value in doc.items():
            print(f"{key}: {value}")


def run(args: argparse.Namespace) -> int:
    """Dispatch ``toolchain``, ``cache`` or ``warm``."""
    from aotwheel.buildsteps.cache import DeviceCodeCache

    cache = DeviceCodeCache.from_env()
    if args.what == "cache":
        from aotwheel.buildsteps.remote import config_from, redact

        cfg = config_from(os.environ)
        doc: dict[str, object] = {"root": str(cache.root) if cache.root else None,
                                  "remote": [redact(u) for u in cfg.urls], "remote_readonly": cfg.readonly,
                                  **cache.stats(last_build=True).to_dict()}
        _print(doc, args.json)
        return 0
    if args.what == "warm":
        return warm(Path(args.source_dir), shard=args.shard, devlist=args.devlist, build_dir=args.build_dir,
                    as_json=args.json)
    from aotwheel.buildsteps.toolchain import discover, ocloc_facts
    from aotwheel.errors import ToolchainError

    doc = discover([d for d in args.devices.split(",") if d], cache).to_dict()
    if doc.get("ocloc") is None:  # no devices asked for: still say which ocloc the builds would use
        try:
            doc["ocloc"], doc["ocloc_version"], _ = ocloc_facts(cache)
        except ToolchainError as exc:
            doc["ocloc_error"] = str(exc)
    _print(doc, args.json)
    return 0


def _config_dir() -> Path:
    """Where ``aotwheel-config.cmake`` lives: inside the installed package, or the checkout's cmake/."""
    pkg = Path(__file__).resolve().parents[1]
    for cand in (pkg / "cmake", pkg.parents[1] / "cmake"):
        if (cand / "aotwheel-config.cmake").is_file():
            return cand
    raise AotwheelError("cannot find aotwheel-config.cmake next to this aotwheel; reinstall aotwheel")


def warm(source: Path, *, shard: str | None, devlist: str | None, build_dir: str | None, as_json: bool) -> int:
    """Configure ``source`` and build only its device code (target ``aotwheel_device_code``)."""
    # Here, not at the top: every `aotwheel` command (CMake's resolver among them) imports this module.
    import shutil
    import subprocess
    import tempfile

    from aotwheel.buildsteps.cache import DeviceCodeCache
    from aotwheel.buildsteps.shard import parse_shard

    parse_shard(shard)  # a bad value fails here, with the fix, before CMake starts
    if not (source / "CMakeLists.txt").is_file():
        raise AotwheelError(f"{source} has no CMakeLists.txt; pass the project's source directory")
    for tool in ("cmake", "ninja"):
        if not shutil.which(tool):
            raise AotwheelError(f"{tool} not found; pip install {tool}")
    tmp = None if build_dir else tempfile.mkdtemp(prefix="aotwheel-warm-")
    build = Path(build_dir or str(tmp))
    env = dict(os.environ)
    if shard:
        env["AOTWHEEL_SHARD"] = shard
    defs = [f"-DCMAKE_PREFIX_PATH={_config_dir().parent}", f"-Daotwheel_DIR={_config_dir()}",
            f"-DPython_EXECUTABLE={sys.executable}", f"-DAOTWHEEL_SHARD={shard or ''}"]
    if devlist is not None:
        defs.append(f"-DUSE_AOT_DEVLIST={devlist}")
    try:
        for cmd in (["cmake", "-G", "Ninja", "-S", str(source), "-B", str(build), *defs],
                    ["cmake", "--build", str(build), "--target", "aotwheel_device_code"]):
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
                raise AotwheelError(f"'{' '.join(cmd[:2])} …' failed (exit {proc.returncode}; its log is above); "
                                    "fix the project's configure/device-code build first")
            for line in (proc.stdout + proc.stderr).splitlines():  # the cache's one-line warnings
                if line.startswith("aotwheel: warning:"):
                    print(line, file=sys.stderr)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    doc = {"shard": shard or "all", **DeviceCodeCache.from_env().stats(last_build=True).to_dict()}
    _print(doc, as_json)
    return 0
