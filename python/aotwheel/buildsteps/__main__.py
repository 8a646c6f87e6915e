"""``python -m aotwheel.buildsteps <step> ...``: the steps CMake's ``aotwheel_add_device_code`` runs.

configure  find clang/llvm-spirv/ocloc, check the devices, write the toolchain JSON
spirv      one kernel source -> SPIR-V (with a ninja depfile)
ocloc      one (SPIR-V, device) -> native binary, through the device-code cache
fatbin     native binaries + SPIR-V -> ocloc-compatible ar (+ a sidecar JSON for the manifest)
tgtsym     SPIR-V modules -> the .tgtsym names file
embed      write the C file + header that embed the images (configure time)
manifest   write _aot_manifest.json
cache      print the cache root and its hit/miss/store counters

Errors print ``aotwheel: error: <one line>`` and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aotwheel.errors import AotwheelError, run_command


def _write_if_changed(path: str, text: str) -> None:
    """Leave an unchanged file alone so ninja does not rebuild what depends on it."""
    p = Path(path)
    if p.is_file() and p.read_text() == text:
        return
    from aotwheel.buildsteps.cache import atomic_write

    atomic_write(p, text.encode())


def _load_toolchain(path: str) -> dict:
    return json.loads(Path(path).read_text())


def cmd_configure(a: argparse.Namespace) -> int:
    """Find the tools and check the devices; write the toolchain JSON."""
    from aotwheel.buildsteps.toolchain import discover

    devices = [d for d in a.devices.split(",") if d]
    tc = discover(devices)
    _write_if_changed(a.out, json.dumps(tc.to_dict(), indent=2, sort_keys=True) + "\n")
    return 0


def cmd_spirv(a: argparse.Namespace) -> int:
    """Compile one kernel source to SPIR-V."""
    from aotwheel.buildsteps.spirv import compile_to_spirv
    from aotwheel.backends.intel.clang import SpirvToolchain

    t = _load_toolchain(a.toolchain)
    tc = SpirvToolchain(t["clang"], t["clang_version"], t["llvm_spirv"], t["llvm_spirv_version"])
    compile_to_spirv(tc, a.source, a.output, depfile=a.depfile, extra=a.clang_arg or [])
    return 0


def cmd_ocloc(a: argparse.Namespace) -> int:
    """Build one (SPIR-V, device) binary, from the cache when possible."""
    from aotwheel.buildsteps.ocloc_job import run_job

    t = _load_toolchain(a.toolchain)
    if not t.get("ocloc"):
        raise AotwheelError("no ocloc in the toolchain file; re-run CMake configure")
    device = t.get("ocloc_names", {}).get(a.device, a.device)
    res = run_job(spirv=a.spirv, device=device, output=a.output, ocloc=t["ocloc"],
                  ocloc_version=t["ocloc_version"], options=a.options)
    # ninja prints this only with -v or on failure; the cache's events.log is the record.
    print(f"aotwheel: {Path(a.spirv).name} -device {device}: {'cache hit' if res.cache_hit else 'compiled'} ({res.size} bytes)")
    return 0


def cmd_fatbin(a: argparse.Namespace) -> int:
    """Assemble one source's fat binary and its member list."""
    from aotwheel.buildsteps.cache import atomic_write
    from aotwheel.buildsteps.fatbin import build_fatbin, member_name, spirv_ir_elf
    from aotwheel.buildsteps.manifest import fatbin_info

    natives: list[tuple[str, bytes]] = []
    info: list[tuple[str, str, int]] = []
    for spec in a.native or []:
        device, ip, path = spec.split("=", 2)
        data = Path(path).read_bytes()
        natives.append((ip, data))
        info.append((device, member_name(ip), len(data)))
    spirv = Path(a.spirv).read_bytes() if a.spirv else None
    atomic_write(Path(a.output), build_fatbin(natives, spirv))
    ir_size = len(spirv_ir_elf(spirv)) if spirv is not None else None
    _write_if_changed(a.info, json.dumps(fatbin_info(info, ir_size), indent=2) + "\n")
    return 0


def cmd_tgtsym(a: argparse.Namespace) -> int:
    """Write the .tgtsym names of all SPIR-V modules."""
    from aotwheel.buildsteps.cache import atomic_write
    from aotwheel.buildsteps.embed import tgtsym
    from aotwheel.buildsteps.spirv import entry_points

    triples = [t for t in a.triples.split(",") if t]
    entries = []
    for triple in triples:
        for spv in a.spirv:
            entries.append((triple, entry_points(Path(spv).read_bytes())))
    atomic_write(Path(a.output), tgtsym(entries))
    return 0


def cmd_embed(a: argparse.Namespace) -> int:
    """Write the embedding C/C++ file and its header (configure time)."""
    from aotwheel.buildsteps.embed import EmbeddedImage, render_c, render_header

    images = []
    for spec in a.image or []:
        triple, source, path = spec.split("=", 2)
        images.append(EmbeddedImage(triple=triple, source=source, path=path))
    _write_if_changed(a.out_c, render_c(a.name, images, a.tgtsym))
    _write_if_changed(a.out_h, render_header(a.name))
    return 0


def cmd_manifest(a: argparse.Namespace) -> int:
    """Write _aot_manifest.json."""
    from aotwheel.buildsteps.cache import atomic_write
    from aotwheel.buildsteps.manifest import build_manifest

    images = []
    for spec in a.image or []:
        triple, source, path = spec.split("=", 2)
        # A fat binary's member list sits next to it (written by the fatbin step).
        info = path + ".json" if Path(path + ".json").is_file() else ""
        images.append({"triple": triple, "source": source, "path": path, "info": info})
    kernels = [k.decode() for k in Path(a.tgtsym).read_bytes().split(b"\0") if k] if a.tgtsym else []
    devlist = json.loads(Path(a.devlist).read_text())
    if a.jit_fallback is not None:
        devlist["jit_fallback"] = a.jit_fallback == "on"
    doc = build_manifest(name=a.name, devlist=devlist,
                         toolchain=_load_toolchain(a.toolchain), options=a.options, images=images,
                         kernels=kernels)
    atomic_write(Path(a.output), (json.dumps(doc, indent=2) + "\n").encode())
    return 0


def cmd_cache(a: argparse.Namespace) -> int:
    """Print the cache root and counters as JSON."""
    from aotwheel.buildsteps.cache import DeviceCodeCache

    c = DeviceCodeCache.from_env()
    s = c.stats()
    print(json.dumps({"root": str(c.root) if c.root else None, "hits": s.hits, "misses": s.misses, "stores": s.stores}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m aotwheel.buildsteps`` parser, one subcommand per step."""
    p = argparse.ArgumentParser(prog="python -m aotwheel.buildsteps", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)

    s = sub.add_parser("configure")
    s.add_argument("--devices", default="", help="comma-separated canonical device names")
    s.add_argument("--out", required=True)
    s.set_defaults(fn=cmd_configure)

    s = sub.add_parser("spirv")
    s.add_argument("--toolchain", required=True)
    s.add_argument("--source", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--depfile")
    s.add_argument("--clang-arg", action="append", help="extra clang argument (repeatable)")
    s.set_defaults(fn=cmd_spirv)

    s = sub.add_parser("ocloc")
    s.add_argument("--toolchain", required=True)
    s.add_argument("--spirv", required=True)
    s.add_argument("--device", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--options", default="")
    s.set_defaults(fn=cmd_ocloc)

    s = sub.add_parser("fatbin")
    s.add_argument("--output", required=True)
    s.add_argument("--info", required=True)
    s.add_argument("--spirv", help="SPIR-V for the generic_ir member (JIT fallback)")
    s.add_argument("--native", action="append", metavar="DEVICE=IP=PATH")
    s.set_defaults(fn=cmd_fatbin)

    s = sub.add_parser("tgtsym")
    s.add_argument("--output", required=True)
    s.add_argument("--triples", required=True, help="e.g. spir64_gen,spir64")
    s.add_argument("spirv", nargs="*")
    s.set_defaults(fn=cmd_tgtsym)

    s = sub.add_parser("embed")
    s.add_argument("--name", required=True)
    s.add_argument("--out-c", required=True)
    s.add_argument("--out-h", required=True)
    s.add_argument("--tgtsym", required=True)
    s.add_argument("--image", action="append", metavar="TRIPLE=SOURCE=PATH")
    s.set_defaults(fn=cmd_embed)

    s = sub.add_parser("manifest")
    s.add_argument("--name", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--devlist", required=True)
    s.add_argument("--toolchain", required=True)
    s.add_argument("--options", default="")
    s.add_argument("--tgtsym")
    s.add_argument("--jit-fallback", choices=("on", "off"), help="what was built (overrides the devlist JSON)")
    s.add_argument("--image", action="append", metavar="TRIPLE=SOURCE=PATH")
    s.set_defaults(fn=cmd_manifest)

    s = sub.add_parser("cache")
    s.set_defaults(fn=cmd_cache)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one step; errors print one line and return 2."""
    args = build_parser().parse_args(argv)
    return run_command(lambda: args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
