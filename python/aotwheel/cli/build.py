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
from aotwheel.variables import SHARD


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
    from aotwheel import backends

    devices = [d for d in args.devices.split(",") if d]
    doc = {}
    for backend in backends.all_backends():  # each vendor reports its own tools
        doc.update(backend.toolchain_report(devices, cache))
    _print(doc, args.json)
    return 0


def _config_dir() -> Path:
    """Where ``aotwheel-config.cmake`` lives: inside the installed package, or the checkout's cmake/."""
    pkg = Path(__file__).resolve().parents[1]
    for cand in (pkg / "cmake", pkg.parents[1] / "cmake"):
        if (cand / "aotwheel-config.cmake").is_file():
            return cand
    raise AotwheelError("cannot find aotwheel-config.cmake next to this aotwheel; reinstall aotwheel")


def scikit_build_defines(source: Path, build: Path, env: dict[str, str]) -> dict[str, str]:
    """The cache variables scikit-build-core gives a project's CMake (SKBUILD, SKBUILD_SABI_COMPONENT,
    SKBUILD_SABI_VERSION, SKBUILD_SOABI, SKBUILD_PROJECT_*, the wheel folders) and its
    ``[tool.scikit-build.cmake.define]`` entries, for a project built by scikit-build-core: `warm`
    then configures the CMakeLists a scikit-build-core user writes
    (``find_package(Python … ${SKBUILD_SABI_COMPONENT})``, ``python_add_library(… USE_SABI …)``).
    Empty for any other project."""
    import sysconfig

    import tomllib

    try:
        doc = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not str(doc.get("build-system", {}).get("build-backend", "")).startswith("scikit_build_core"):
        return {}
    project = doc.get("project", {})
    skb = doc.get("tool", {}).get("scikit-build", {})
    py_api = str(skb.get("wheel", {}).get("py-api", "") or skb.get("wheel.py-api", ""))
    # As scikit-build-core decides: a CPython cp3X api at most this interpreter's version is abi3.
    minor = int(py_api[3:]) if py_api.startswith("cp3") and py_api[3:].isdigit() else None
    sabi = minor is not None and sys.implementation.name == "cpython" and minor <= sys.version_info.minor \
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
    try:
        from importlib.metadata import version

        core = version("scikit-build-core")
    except Exception:
        core = ""
    wheel = build / "wheel"
    out = {"SKBUILD": "2", "SKBUILD_CORE_VERSION": core, "SKBUILD_STATE": "wheel",
           "SKBUILD_SOABI": "abi3" if sabi else str(sysconfig.get_config_var("SOABI") or ""),
           "SKBUILD_SABI_COMPONENT": "Development.SABIModule" if sabi else "",
           "SKBUILD_SABI_VERSION": f"3.{minor}" if sabi else "",
           **{f"SKBUILD_{d.upper()}_DIR": str(wheel / d) for d in ("platlib", "data", "headers", "scripts", "metadata", "null")}}
    if project.get("name"):
        out["SKBUILD_PROJECT_NAME"] = str(project["name"]).replace("-", "_").replace(".", "_")
    if project.get("version"):
        out["SKBUILD_PROJECT_VERSION"] = out["SKBUILD_PROJECT_VERSION_FULL"] = str(project["version"])
    for key, value in (skb.get("cmake", {}).get("define") or {}).items():
        if isinstance(value, dict):  # {env = "X", default = "..."}: the environment first, as scikit-build-core does
            value = env.get(str(value.get("env", "")), value.get("default", ""))
        out[str(key)] = ("ON" if value else "OFF") if isinstance(value, bool) else str(value)
    return out


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
    start = _events_size(DeviceCodeCache.from_env())
    tmp = None if build_dir else tempfile.mkdtemp(prefix="aotwheel-warm-")
    build = Path(build_dir or str(tmp))
    env = dict(os.environ)
    if shard:
        env[SHARD.name] = shard
    defs = [f"-DCMAKE_PREFIX_PATH={_config_dir().parent}", f"-Daotwheel_DIR={_config_dir()}",
            f"-DPython_EXECUTABLE={sys.executable}", f"-DAOTWHEEL_SHARD={shard or ''}",
            *(f"-D{k}={v}" for k, v in scikit_build_defines(source, build, env).items())]
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
    cache = DeviceCodeCache.from_env()
    jobs = warmed(cache, start)
    doc = {"shard": shard or "all", "jobs": jobs, **cache.stats(last_build=True).to_dict()}
    if as_json:
        _print(doc, True)
        return 0
    print(f"shard {shard or 'all'}: {len(jobs)} device-code object{'s' if len(jobs) != 1 else ''}")
    for job in jobs:
        print(f"  {job['what']}: {job['outcome']}" + (f" ({job['bytes']} bytes)" if job["bytes"] else ""))
    _print({k: v for k, v in doc.items() if k not in ("shard", "jobs")}, False)
    return 0


def _events_size(cache: object) -> int:
    root = getattr(cache, "root", None)
    try:
        return (root / "events.log").stat().st_size if root is not None else 0
    except OSError:
        return 0


# How one object of the build was had, from its cache events (later events tell more).
_OUTCOMES = {"spirv-compiled": "compiled", "store": "compiled", "hit": "from the local cache",
             "spirv-hit": "from the local cache", "remote-hit": "from the remote cache",
             "spirv-remote-hit": "from the remote cache", "remote-store": "compiled, pushed to the remote cache"}


def warmed(cache: object, start: int) -> list[dict[str, object]]:
    """What ``warm`` compiled or found, per object: ``{"what": "saxpy.cl -> SPIR-V" | "saxpy.spv for
    tgllp", "outcome": ..., "bytes": n}``, from the cache's event log after offset ``start``."""
    root = getattr(cache, "root", None)
    if root is None:
        return []
    try:
        with open(root / "events.log", "rb") as f:
            f.seek(start)
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    jobs: dict[str, dict[str, object]] = {}
    for line in lines:
        fields = line.split(" ", 5)
        if len(fields) < 6 or fields[0] not in _OUTCOMES or fields[2] == "spirv-deps":
            continue
        kind, device, size, label = fields[0], fields[2], fields[4], fields[5]
        if device.startswith("spirv"):
            what = f"{label} -> SPIR-V"
        else:
            source, _, name = label.rpartition(":")
            what = f"{source} for {name}" if source else label
        job = jobs.setdefault(what, {"what": what, "outcome": "", "bytes": 0})
        job["outcome"] = _OUTCOMES[kind]
        job["bytes"] = int(size) if size.isdigit() and int(size) else job["bytes"]
    return list(jobs.values())
