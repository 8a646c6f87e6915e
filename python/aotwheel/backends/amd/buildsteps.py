"""Build steps of the AMD backend, run by ``cmake/aotwheel-amd.cmake`` (standard library only).

    python -m aotwheel.buildsteps amd configure --targets gfx90a,gfx1030 --out amd.json --plan plan.json --source k.hip ...
    python -m aotwheel.buildsteps amd compile --plan plan.json --edge k.gfx90a
    python -m aotwheel.buildsteps amd bundle --plan plan.json --edge k.hipfb
    python -m aotwheel.buildsteps amd embed --name kernels --out-c e.c --out-h e.h k.hipfb ...

``configure`` finds hipcc, asks it (``--version`` and one ``-###`` dry run) for its clang, its
``clang-offload-bundler`` and the processors its ROCm device libraries serve, checks every target
against them and writes the build plan (:mod:`aotwheel.backends.amd.plan`): one ``compile`` edge
per (source, target), so ninja runs them in parallel, each looked up in aotwheel's device-code
cache (:mod:`aotwheel.buildsteps.cache`) first, keyed by the source as hipcc's preprocessor sees
it for the target (every ``#include`` in it: :mod:`aotwheel.buildsteps.preprocess`), the target,
hipcc's and clang's versions, clang's binary and the options; one ``bundle`` edge per source. ``embed`` puts
every bundle into the host object's ``.hip_fatbin`` section, page-aligned, where hipcc itself puts
them (so ``roc-obj-ls``, ``clang-offload-bundler`` and ``aotwheel inspect`` read them). Every
hipcc run has ``HIP_PLATFORM=amd`` (:func:`aotwheel.backends.amd.hipcc.hip_env`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from aotwheel.buildsteps.edge import edge_arguments, embed_arguments, write_if_changed
from aotwheel.errors import ToolchainError

_TIMEOUT = 600
TRIPLE = "amdgcn-amd-amdhsa"  # the manifest's triple of HIP code objects


def _targets(text: str) -> tuple[str, ...]:
    """The target ids of ``text`` (tokens), checked and canonical: the one place the build parses
    them (the plan's edges carry the result)."""
    from aotwheel.backends.amd.targets import parse_listed

    tokens = [t for t in text.replace(";", ",").replace(" ", ",").split(",") if t]
    return tuple(dict.fromkeys(str(parse_listed(t.lower(), t)) for t in tokens))


def configure(args: argparse.Namespace) -> int:
    """Find hipcc, check every target against what it builds, write the toolchain JSON and the plan."""
    from aotwheel.backends.amd.hipcc import find_hipcc, query, require_processors

    targets = _targets(args.targets)
    if not targets:
        raise ToolchainError("no AMD targets given; pass --targets gfx90a,... (USE_AOT_DEVLIST's gfx names)")
    hipcc = query(find_hipcc(args.hipcc or None), list(targets))
    require_processors(hipcc, targets)
    data = {**hipcc.to_dict(), "targets": list(targets)}
    out = Path(args.out)
    write_if_changed(out, json.dumps(data, indent=1, sort_keys=True) + "\n")  # unchanged: nothing downstream reruns
    if args.plan:
        from aotwheel.backends.amd.plan import build_plan, image_record
        plan = build_plan(name=args.name, work=Path(args.plan).parent, sources=args.source or [], targets=targets,
                          toolchain=str(out), settings=args.settings, options=tuple(args.option or ()))
        plan.write(args.plan)
        write_if_changed(plan.record, json.dumps(image_record(plan), indent=1) + "\n")
    return 0


def _cache_key(tc: dict, source_sha256: str, target: str, options: list[str], tool_sha256: str):  # type: ignore[no-untyped-def]
    # ``source_sha256``: the source as hipcc's preprocessor sees it for this target, every
    # #include'd file in it (aotwheel.buildsteps.preprocess). Tools by version and clang's binary
    # hash, never path.
    from aotwheel.buildsteps.cache import CacheKey

    return CacheKey(input_sha256=source_sha256, target=f"amd:{target}", tool="hipcc",
                    tool_version=f"{tc['version']} clang {tc['clang_version']}", tool_sha256=tool_sha256,
                    options=" ".join(options), flags=("hipcc", "preprocessed"))


def compile_image(args: argparse.Namespace) -> int:
    """One hipcc job, the plan's edge ``--edge``: the code object of its target; cached, keyed by
    the source as hipcc's preprocessor sees it for the target (headers included)."""
    from aotwheel.backends.amd.hipcc import hip_env
    from aotwheel.buildsteps.edge import load_edge, plan_data
    from aotwheel.buildsteps.preprocess import compile_cached
    from aotwheel.buildsteps.tiers import Tiers, load_settings

    plan, edge = load_edge(args.plan, args.edge, args.digest)
    target, options = plan_data(edge, args.plan, lambda d: (str(d["target"]), [str(o) for o in d["options"]]))
    tc = json.loads(Path(plan["toolchain"]).read_text())
    out = Path(edge["outputs"][0])
    cmd = [tc["hipcc"], f"--offload-arch={target}", "--genco", "--no-gpu-bundle-output", *options]
    tiers = Tiers.for_build(out.parent, load_settings(plan["settings"]))
    compile_cached(tool="hipcc", install="the ROCm installation", command=cmd, source=Path(edge["source"]), target=target,
                   out=out, depfile=edge["depfile"], tiers=tiers, env=hip_env(), timeout=_TIMEOUT,
                   key=lambda sha: _cache_key(tc, sha, target, options, tiers.local.tool_sha256(tc["clang"])))
    return 0


def bundle(args: argparse.Namespace) -> int:
    """``clang-offload-bundler`` over one source's code objects, the plan's edge ``--edge``:
    the empty host entry first, as hipcc writes it."""
    from aotwheel.buildsteps.edge import load_edge, plan_data

    plan, edge = load_edge(args.plan, args.edge, args.digest)
    members, align = plan_data(edge, args.plan, lambda d: ([(str(m["id"]), str(m["path"])) for m in d["members"]], int(d["align"])))
    tc = json.loads(Path(plan["toolchain"]).read_text())
    ids = ",".join([tc["host_bundle_id"], *(i for i, _ in members)])
    cmd = [tc["bundler"], "-type=o", f"-bundle-align={align}", f"-targets={ids}", f"-input={os.devnull}",
           *(f"-input={p}" for _, p in members), f"-output={edge['outputs'][0]}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"clang-offload-bundler failed to run: {exc}; check the ROCm installation") from None
    if proc.returncode != 0:
        raise ToolchainError(f"clang-offload-bundler failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[:200]}")
    return 0


def render_embed(name: str, bundles: list[str]) -> tuple[str, str]:
    """C source and header that place each bundle in ``.hip_fatbin`` (page-aligned, as hipcc
    does) and export ``aotwheel_<name>_hip_images[]`` = {start, end} per bundle."""
    from aotwheel.backends.amd.plan import BUNDLE_ALIGN

    lines = [f"/* Generated by aotwheel.backends.amd.buildsteps: {len(bundles)} HIP offload bundles in .hip_fatbin. */",
             f'#include "{name}_hip.h"', ""]
    for i, path in enumerate(bundles):
        esc = str(Path(path).resolve()).replace("\\", "\\\\").replace('"', '\\"')
        lines += [
            "__asm__(",
            '    ".pushsection .hip_fatbin, \\"a\\"\\n"',
            f'    ".balign {BUNDLE_ALIGN}\\n"',
            f'    "aotwheel_{name}_hip_{i}:\\n"',
            f'    ".incbin \\"{esc}\\"\\n"',
            f'    "aotwheel_{name}_hip_{i}_end:\\n"',
            '    ".popsection\\n");',
            f"extern const unsigned char aotwheel_{name}_hip_{i}[], aotwheel_{name}_hip_{i}_end[];",
        ]
    entries = ", ".join(f"{{aotwheel_{name}_hip_{i}, aotwheel_{name}_hip_{i}_end}}" for i in range(len(bundles)))
    lines += ["", f"const struct aotwheel_hip_image aotwheel_{name}_hip_images[] = {{{entries}}};" if bundles
              else f"const struct aotwheel_hip_image aotwheel_{name}_hip_images[1];",
              f"const unsigned aotwheel_{name}_hip_image_count = {len(bundles)};", ""]
    guard = f"AOTWHEEL_{name.upper()}_HIP_H"
    header = "\n".join([
        f"#ifndef {guard}", f"#define {guard}", "#ifndef AOTWHEEL_HIP_IMAGE_DEFINED", "#define AOTWHEEL_HIP_IMAGE_DEFINED",
        "/* One offload bundle (a hipModuleLoadData() argument): [start, end). */",
        "struct aotwheel_hip_image { const unsigned char *start, *end; };", "#endif",
        f"extern const struct aotwheel_hip_image aotwheel_{name}_hip_images[];",
        f"extern const unsigned aotwheel_{name}_hip_image_count;", "#endif", ""])
    return "\n".join(lines), header


def embed(args: argparse.Namespace) -> int:
    c_text, h_text = render_embed(args.name, args.bundles)
    write_if_changed(args.out_c, c_text)
    write_if_changed(args.out_h, h_text)
    return 0


def manifest_part(*, devlist: dict, toolchain: dict, options: str, images: list[dict], records: list[dict]) -> dict:
    """This backend's part of ``_aot_manifest.json`` (:func:`aotwheel.buildsteps.manifest.vendor_parts`):
    ``amd`` in the devlist (the listed target ids) and one entry per bundle of ``records``
    (:func:`.plan.image_record`'s)."""
    listed = (devlist.get("amd") or {}).get("targets", [])
    return {"devlist": [("jit_fallback", "amd", list(listed))], "images": [_manifest_image(r) for r in records]}


def _manifest_image(record: dict) -> dict[str, object]:
    """One offload bundle: its code objects, each native for its target id."""
    from aotwheel.buildsteps.manifest import digest

    size, sha = digest(record["bundle"])
    members = [{"device": m["target"], "name": m["id"], "kind": "code-object", "size": Path(m["path"]).stat().st_size}
               for m in record["members"]]
    return {"triple": TRIPLE, "vendor": "amd", "source": record["source"], "size": size, "sha256": sha, "members": members}


def _configure_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("--targets", required=True, help="AMD target ids: gfx90a,gfx1030,gfx90a:xnack-")
    c.add_argument("--hipcc", default="")
    c.add_argument("--out", required=True, help="the toolchain JSON (hipcc's facts; the manifest's toolchain)")
    c.add_argument("--plan", default="", help="write the build plan here (its folder holds the outputs)")
    c.add_argument("--name", default="", help="the image set's name (NAME)")
    c.add_argument("--source", action="append", help="a HIP source, absolute (repeatable, in SOURCES order)")
    c.add_argument("--option", action="append", help="extra hipcc argument (repeatable)")
    c.add_argument("--settings", default="", help="remote-cache settings CMake wrote (NAME=value lines)")


_STEPS = {
    "configure": (_configure_arguments, configure),
    "compile": (edge_arguments, compile_image),
    "bundle": (edge_arguments, bundle),
    "embed": (lambda e: embed_arguments(e, "bundles"), embed),
}


def main(argv: list[str] | None = None) -> int:
    """Run one step (parsed by its own parser alone: one per edge process); errors print one line
    and return 2."""
    from aotwheel.buildsteps.edge import run_step

    return run_step("python -m aotwheel.buildsteps amd", __doc__, _STEPS, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
