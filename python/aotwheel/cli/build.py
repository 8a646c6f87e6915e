"""``aotwheel build``: the open toolchain, the device-code caches, and warming a remote cache.

``aotwheel build toolchain [--devlist LIST]``   the tools found (and whether ocloc builds LIST)
``aotwheel build cache``                        hits, misses, bytes and failures of the last build
``aotwheel build warm [--shard i/n] [--devlist LIST] [SOURCE_DIR]``
    compile SOURCE_DIR's device-code jobs (this shard's) into the caches, no extension or wheel
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from aotwheel.cli.options import devlist_option
from aotwheel.errors import AotwheelError
from aotwheel.variables import SHARD

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aotwheel.buildsteps.progress import Progress


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``aotwheel build {toolchain,cache,warm}`` to the CLI."""
    p = sub.add_parser(
        "build",
        help="the open toolchain, the device-code caches, and warming a remote cache (builds no wheel)",
        description="A group of three commands about what aotwheel_add_device_code uses; 'pip wheel .' builds a wheel.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="""commands:
  toolchain   the clang, llvm-spirv and ocloc builds use (and their versions); with
              --devlist LIST, also whether this ocloc builds every device of LIST
  cache       the device-code cache ($AOTWHEEL_CACHE_DIR; 'off' disables it; default
              $XDG_CACHE_HOME/aotwheel or ~/.cache/aotwheel) and the remote stores of
              $AOTWHEEL_REMOTE_CACHE: hits, misses, bytes and failures of the last build
  warm        configure a project as scikit-build-core does and compile its device code
              (this runner's slice with --shard i/n) into the caches, without building the
              extension or a wheel; then 'pip wheel .' on any machine finds every job cached

  aotwheel build toolchain --devlist pvc,acm-g10
  aotwheel build warm --shard 2/4 --devlist pvc,acm-g10,tgllp,dg1 .
""",
    )
    what = p.add_subparsers(dest="what", required=True, metavar="{toolchain,cache,warm}")
    t = what.add_parser("toolchain", help="the clang, llvm-spirv and ocloc builds use, and whether ocloc builds a device list",
                        description="Print the tools aotwheel_add_device_code would use; with --devlist, also check that the "
                        "installed ocloc builds every device of the list.")
    devlist_option(t, help="also check that ocloc builds these devices (any USE_AOT_DEVLIST value, e.g. pvc,acm-g10)", old=("--devices",))
    c = what.add_parser("cache", help="local and remote hits, misses, bytes and failures of the last build",
                        description="The device-code cache ($AOTWHEEL_CACHE_DIR) and the remote stores ($AOTWHEEL_REMOTE_CACHE): "
                        "what the last build found, compiled and stored.")
    w = what.add_parser("warm", help="compile a project's device code into the caches (one shard of it with --shard); no wheel",
                        description="Configure SOURCE_DIR as scikit-build-core would and build only its device code, so the "
                        "local and remote caches hold it, listing each object it compiled or found.")
    w.add_argument("source_dir", nargs="?", default=".", help="the project (with its CMakeLists.txt); default .")
    w.add_argument("--shard", help="this runner's slice i/n (1 <= i <= n); default: all jobs")
    devlist_option(w, help="USE_AOT_DEVLIST for the project (default: the environment's)")
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

    listed = _listed(args.devlist, args.devlist_option)
    doc = {}
    for name, toolchain in backends.toolchains():  # each vendor with tools reports its own
        doc.update(toolchain.report(listed.get(name, []), cache))
    _print(doc, args.json)
    return 0


def _listed(text: str | None, option: str) -> dict[str, list[str]]:
    """Each backend's canonical names in ``--devlist``, resolved as USE_AOT_DEVLIST is: a typo is
    one "did you mean" line naming the option (``option``: as spelled), not a toolchain that lacks a device."""
    if not text:
        return {}
    from aotwheel.devlist import resolve
    from aotwheel.errors import DevlistError
    from aotwheel.variables import DEVLIST

    try:
        devlist = resolve(text)
    except DevlistError as exc:
        raise DevlistError(str(exc).replace(DEVLIST.name, option, 1), exc.token, exc.suggestions) from None
    return {p.vendor: list(p.listed) for p in devlist.parts}


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
    # scikit-build-core's backend, or aotwheel's wrapper of it (aotwheel.pep517: the same build, one at a time)
    if not str(doc.get("build-system", {}).get("build-backend", "")).startswith(("scikit_build_core", "aotwheel.pep517")):
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
            progress = None if cmd[1] == "-G" or as_json else _ocloc_progress(build)
            returncode, output = _stream(cmd, env, progress)
            if returncode != 0:
                sys.stderr.write(output[-8000:])
                raise AotwheelError(f"'{' '.join(cmd[:2])} …' failed (exit {returncode}; its log is above); "
                                    "fix the project's configure/device-code build first")
            for line in output.splitlines():  # the cache's one-line warnings
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


def _ocloc_progress(build: Path) -> Progress | None:
    """A progress counter over the device jobs of every build plan configure wrote in ``build``."""
    from aotwheel.buildsteps.progress import Progress

    total = 0
    for plan in build.rglob("plan.json"):
        try:
            doc = json.loads(plan.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for edge in doc.get("edges", []):
            data = edge.get("data") or {}
            if edge.get("pool") and isinstance(data, dict) and isinstance(data.get("natives"), list):  # a device-compiler edge
                total += len(data["natives"])
    return Progress(total, sys.stdout) if total else None


def _stream(cmd: list[str], env: dict[str, str], progress: Progress | None) -> tuple[int, str]:
    """Run ``cmd``, its output kept; each device an edge reports finished goes to ``progress`` at once
    (the build step of a device-code edge prints ``<x>.spv -device <d>: <how> (<n> bytes) in <t> s``)."""
    import re
    import subprocess

    done = re.compile(r"^aotwheel: \S+ -device (\S+): .* in (\d+(?:\.\d+)?) s$")
    lines: list[str] = []
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            m = done.match(line.rstrip("\n")) if progress is not None else None
            if m and progress is not None:
                progress.done(m[1], float(m[2]))
        returncode = proc.wait()
    if progress is not None:
        progress.close()
    return returncode, "".join(lines)


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
