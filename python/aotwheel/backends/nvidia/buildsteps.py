"""Build steps of the nvcc backend, run by ``cmake/aotwheel-cuda.cmake`` (standard library only).

    python -m aotwheel.buildsteps nvidia configure --targets sm_90,ptx --out cuda.json --plan plan.json --source k.cl ...
    python -m aotwheel.buildsteps nvidia compile --plan plan.json --edge k.sm_90
    python -m aotwheel.buildsteps nvidia fatbin --plan plan.json --edge k.fatbin
    python -m aotwheel.buildsteps nvidia embed --name kernels --out-c e.c --out-h e.h k.fatbin ...

``configure`` checks every target against the nvcc found and writes the build plan
(:mod:`aotwheel.backends.nvidia.plan`): one ``compile`` edge per (source, target), so ninja runs
them in parallel, each looked up in aotwheel's device-code cache (:mod:`aotwheel.buildsteps.cache`)
first, keyed by the source as nvcc's preprocessor sees it for the target (the portability header
and every ``#include`` in it: :mod:`aotwheel.buildsteps.preprocess`), the target, nvcc's version
and binary and the options; one ``fatbin`` edge per source (``fatbinary``). The edges read their entry of the plan and
parse no target name. ``embed`` puts every fat binary into the host object's ``.nv_fatbin``
section, where nvcc itself puts them (so cuobjdump and ``aotwheel inspect`` read them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from aotwheel.buildsteps.edge import edge_arguments, embed_arguments, write_if_changed
from aotwheel.errors import ToolchainError

HEADER = Path(__file__).resolve().parents[3] / "csrc" / "aotwheel_portable.h"
_TIMEOUT = 600


def _targets(text: str, supported: frozenset[int]):  # type: ignore[no-untyped-def]
    """The targets of ``text`` (tokens), checked against the archs this nvcc builds: the one place
    the build parses them (the plan's edges carry the result), and their ``-gencode`` flags."""
    from aotwheel.backends.nvidia.targets import PTX_TOKEN, parse_cuda_target, plan

    tokens = [t for t in text.replace(";", ",").replace(" ", ",").split(",") if t]
    parsed = [parse_cuda_target(t, supported=supported) for t in tokens if t.lower() != PTX_TOKEN]
    p = plan(parsed, keep_newest_ptx=any(t.lower() == PTX_TOKEN for t in tokens))
    return p.targets, p.gencode_flags()


def configure(args: argparse.Namespace) -> int:
    """Find nvcc, check every target against what it builds, write the toolchain JSON and the plan."""
    from aotwheel.backends.nvidia.nvcc import find_nvcc

    nvcc = find_nvcc(args.nvcc or None)
    targets, gencode = _targets(args.targets, nvcc.real_archs)
    header = Path(args.header) if args.header else HEADER
    if not header.is_file():
        raise ToolchainError(f"portability header {header} is missing; pass --header or reinstall aotwheel")
    data = {
        "nvcc": nvcc.path,
        "fatbinary": nvcc.fatbinary,
        "version": nvcc.version,
        "header": str(header),
        "targets": [t.to_dict() | {"virtual": t.virtual} for t in targets],
        "gencode": gencode,
    }
    out = Path(args.out)
    write_if_changed(out, json.dumps(data, indent=1, sort_keys=True) + "\n")  # unchanged: nothing downstream reruns
    if args.plan:
        from aotwheel.backends.nvidia.plan import build_plan, image_record
        plan = build_plan(name=args.name, work=Path(args.plan).parent, sources=args.source or [], targets=targets,
                          toolchain=str(out), header=str(header), settings=args.settings,
                          options=tuple(args.option or ()), compress_mode=args.compress_mode)
        plan.write(args.plan)
        write_if_changed(plan.record, json.dumps(image_record(plan), indent=1) + "\n")
    return 0


def _cache_key(tc: dict, source_sha256: str, target: str, options: list[str], tool_sha256: str):  # type: ignore[no-untyped-def]
    # ``source_sha256``: the source as nvcc's preprocessor sees it for this target, the portability
    # header and every #include'd file in it (aotwheel.buildsteps.preprocess). Schema 2: nvcc by
    # version and binary hash, never by path, so other machines hit too.
    from aotwheel.buildsteps.cache import CacheKey

    return CacheKey(input_sha256=source_sha256, target=f"cuda:{target}", tool="nvcc", tool_version=tc["version"],
                    tool_sha256=tool_sha256, options=" ".join(options), flags=("nvcc", "preprocessed"))


def compile_image(args: argparse.Namespace) -> int:
    """One nvcc job, the plan's edge ``--edge``: ``-cubin`` or ``-ptx`` for its target; cached,
    keyed by the source as nvcc's preprocessor sees it for the target (headers included)."""
    from aotwheel.buildsteps.edge import load_edge
    from aotwheel.buildsteps.preprocess import compile_cached
    from aotwheel.buildsteps.tiers import Tiers, load_settings

    plan, edge = load_edge(args.plan, args.edge, args.digest)
    image = edge["data"]
    tc = json.loads(Path(plan["toolchain"]).read_text())
    options = list(image["options"])
    out = Path(edge["outputs"][0])
    mode = "-cubin" if image["kind"] == "cubin" else "-ptx"
    cmd = [tc["nvcc"], "-x", "cu", "-include", tc["header"], mode, f"-gencode=arch={image['virtual']},code={image['target']}", *options]
    # Local cache, then the remote stores (CMake's settings file, else the environment), with one
    # warning per build tree.
    tiers = Tiers.for_build(out.parent, load_settings(plan["settings"]))
    compile_cached(tool="nvcc", install="the CUDA installation", command=cmd, source=Path(edge["source"]), target=image["target"],
                   out=out, depfile=edge["depfile"], tiers=tiers, timeout=_TIMEOUT,
                   key=lambda sha: _cache_key(tc, sha, image["target"], options, tiers.local.tool_sha256(tc["nvcc"])))
    return 0


def fatbin(args: argparse.Namespace) -> int:
    """``fatbinary --create`` over one source's images, the plan's edge ``--edge``."""
    from aotwheel.buildsteps.edge import load_edge

    plan, edge = load_edge(args.plan, args.edge, args.digest)
    tc = json.loads(Path(plan["toolchain"]).read_text())
    spec = edge["data"]
    cmd = [tc["fatbinary"], "--64", f"--create={edge['outputs'][0]}"]
    if spec["compress_mode"]:
        cmd.append(f"--compress-mode={spec['compress_mode']}")
    cmd += [f"--image3=kind={m['kind']},sm={m['sm']},file={m['path']}" for m in spec["members"]]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"fatbinary failed to run: {exc}; check the CUDA installation") from None
    if proc.returncode != 0:
        raise ToolchainError(f"fatbinary failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[:200]}")
    return 0


def render_embed(name: str, fatbins: list[str]) -> tuple[str, str]:
    """C source and header that place each fat binary in ``.nv_fatbin`` (8-byte aligned, as
    nvcc does) and export ``aotwheel_<name>_cuda_images[]`` = {start, size} per fat binary."""
    lines = [
        f"/* Generated by aotwheel.backends.nvidia.buildsteps: {len(fatbins)} CUDA fat binaries in .nv_fatbin. */",
        f'#include "{name}_cuda.h"',
        "",
    ]
    for i, path in enumerate(fatbins):
        esc = str(Path(path).resolve()).replace("\\", "\\\\").replace('"', '\\"')
        lines += [
            "__asm__(",
            '    ".pushsection .nv_fatbin, \\"a\\"\\n"',
            '    ".balign 8\\n"',
            f'    "aotwheel_{name}_cuda_{i}:\\n"',
            f'    ".incbin \\"{esc}\\"\\n"',
            f'    "aotwheel_{name}_cuda_{i}_end:\\n"',
            '    ".popsection\\n");',
            f"extern const unsigned char aotwheel_{name}_cuda_{i}[], aotwheel_{name}_cuda_{i}_end[];",
        ]
    entries = ", ".join(f"{{aotwheel_{name}_cuda_{i}, aotwheel_{name}_cuda_{i}_end}}" for i in range(len(fatbins)))
    lines += [
        "",
        f"const struct aotwheel_cuda_image aotwheel_{name}_cuda_images[] = {{{entries}}};"
        if fatbins
        else f"const struct aotwheel_cuda_image aotwheel_{name}_cuda_images[1];",
        f"const unsigned aotwheel_{name}_cuda_image_count = {len(fatbins)};",
        "",
    ]
    header = "\n".join(
        [
            f"#ifndef AOTWHEEL_{name.upper()}_CUDA_H",
            f"#define AOTWHEEL_{name.upper()}_CUDA_H",
            "#ifndef AOTWHEEL_CUDA_IMAGE_DEFINED",
            "#define AOTWHEEL_CUDA_IMAGE_DEFINED",
            "/* One fat binary (a cuModuleLoadData() argument): [start, end). */",
            "struct aotwheel_cuda_image { const unsigned char *start, *end; };",
            "#endif",
            f"extern const struct aotwheel_cuda_image aotwheel_{name}_cuda_images[];",
            f"extern const unsigned aotwheel_{name}_cuda_image_count;",
            "#endif",
            "",
        ]
    )
    return "\n".join(lines), header


def embed(args: argparse.Namespace) -> int:
    c_text, h_text = render_embed(args.name, args.fatbins)
    write_if_changed(args.out_c, c_text)
    write_if_changed(args.out_h, h_text)
    return 0


def _configure_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("--targets", required=True, help="NVIDIA tokens: sm_90,sm_80,compute_80,ptx")
    c.add_argument("--nvcc", default="")
    c.add_argument("--header", default="")
    c.add_argument("--out", required=True, help="the toolchain JSON (nvcc's facts; the manifest's toolchain)")
    c.add_argument("--plan", default="", help="write the build plan here (its folder holds the outputs)")
    c.add_argument("--name", default="", help="the image set's name (NAME)")
    c.add_argument("--source", action="append", help="a kernel source, absolute (repeatable, in SOURCES order)")
    c.add_argument("--option", action="append", help="extra nvcc argument (repeatable)")
    c.add_argument("--compress-mode", default="", choices=["", "default", "size", "speed", "balance", "none"])
    c.add_argument("--settings", default="", help="remote-cache settings CMake wrote (NAME=value lines)")


# The clang/SYCL triple of NVIDIA device code, for the ``triple`` field of CUDA fat binaries.
CUDA_TRIPLE = "nvptx64-nvidia-cuda"


def manifest_part(*, devlist: dict, toolchain: dict, options: str, images: list[dict], records: list[dict]) -> dict:
    """This backend's part of ``_aot_manifest.json`` (:func:`aotwheel.buildsteps.manifest.vendor_parts`):
    ``cuda`` in the devlist (the listed target names) and one entry per fat binary of ``records``
    (``{"source", "fatbin", "members": [{"target", "kind", "path"}]}``, :func:`.plan.image_record`'s)."""
    return {
        "devlist": [("jit_fallback", "cuda", [t["name"] for t in (devlist.get("cuda") or {}).get("targets", [])])],
        "images": [_manifest_image(r) for r in records],
    }


def _manifest_image(record: dict) -> dict[str, object]:
    """One CUDA fat binary: cubins (native, ``device`` = sm_XY) and PTX (``device`` None, like
    an Intel fat binary's generic IR member)."""
    from aotwheel.buildsteps.manifest import digest

    size, sha = digest(record["fatbin"])
    members = [{"device": m["target"] if m["kind"] == "cubin" else None, "name": m["target"], "kind": m["kind"],
                "size": Path(m["path"]).stat().st_size} for m in record["members"]]
    return {"triple": CUDA_TRIPLE, "vendor": "nvidia", "source": record["source"], "size": size, "sha256": sha,
            "members": members}


_STEPS = {
    "configure": (_configure_arguments, configure),
    "compile": (edge_arguments, compile_image),
    "fatbin": (edge_arguments, fatbin),
    "embed": (lambda e: embed_arguments(e, "fatbins"), embed),
}


def main(argv: list[str] | None = None) -> int:
    """Run one step (parsed by its own parser alone: one per edge process); errors print one line
    and return 2."""
    from aotwheel.buildsteps.edge import run_step

    return run_step("python -m aotwheel.buildsteps nvidia", __doc__, _STEPS, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
