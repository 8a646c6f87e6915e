"""Build steps of the nvcc backend, run by ``cmake/aotwheel-cuda.cmake`` (standard library only).

    python -m aotwheel.backends.nvidia.build configure --targets sm_90,sm_80,ptx --out cuda.json
    python -m aotwheel.backends.nvidia.build compile --toolchain cuda.json --source k.cl --target sm_90 --output k.sm_90.cubin
    python -m aotwheel.backends.nvidia.build fatbin --toolchain cuda.json --output k.fatbin --image sm_90=k.sm_90.cubin ...
    python -m aotwheel.backends.nvidia.build embed --name kernels --out-c e.c --out-h e.h k.fatbin ...

One ``compile`` per (source, target) so ninja runs them in parallel; each is looked up in
aotwheel's device-code cache (:mod:`aotwheel.buildsteps.cache`) first, keyed by the source, the
portability header, the target, nvcc's path and version and the options. ``fatbinary`` then
combines a source's images, and ``embed`` puts every fat binary into the host object's
``.nv_fatbin`` section, where nvcc itself puts them (so cuobjdump and ``aotwheel inspect`` read them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from aotwheel.errors import ToolchainError, run_command

HEADER = Path(__file__).resolve().parents[3] / "csrc" / "aotwheel_portable.h"
_TIMEOUT = 600


def _targets(text: str, supported: frozenset[int]) -> tuple[list[dict[str, object]], list[str]]:
    from aotwheel.backends.nvidia.targets import PTX_TOKEN, parse_cuda_target, plan

    tokens = [t for t in text.replace(";", ",").replace(" ", ",").split(",") if t]
    parsed = [parse_cuda_target(t, supported=supported) for t in tokens if t.lower() != PTX_TOKEN]
    p = plan(parsed, keep_newest_ptx=any(t.lower() == PTX_TOKEN for t in tokens))
    return [t.to_dict() | {"virtual": t.virtual} for t in p.targets], p.gencode_flags()


def configure(args: argparse.Namespace) -> int:
    """Find nvcc, check every target against what it builds, write the toolchain JSON."""
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
        "targets": targets,
        "gencode": gencode,
    }
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    out = Path(args.out)
    if not out.is_file() or out.read_text() != text:  # unchanged file: nothing downstream reruns
        out.write_text(text)
    if args.print_targets:
        print(";".join(str(t["name"]) for t in targets))
    return 0


def _cache_key(tc: dict, source: bytes, target: str, options: list[str], tool_sha256: str):  # type: ignore[no-untyped-def]
    # The key hashes the kernel source and the portability header, not files the source
    # #includes: kernels that include other headers should pass them through NVCC_OPTIONS
    # (-D...) or disable the cache (AOTWHEEL_CACHE_DIR=off). OpenCL C kernels rarely include.
    # Schema 2: nvcc by version and binary hash, never by path, so other machines hit too.
    from aotwheel.buildsteps.cache import CacheKey

    digest = hashlib.sha256(source + b"\0" + Path(tc["header"]).read_bytes()).hexdigest()
    return CacheKey(input_sha256=digest, target=f"cuda:{target}", tool="nvcc", tool_version=tc["version"],
                    tool_sha256=tool_sha256, options=" ".join(options), flags=("nvcc",))


def compile_image(args: argparse.Namespace) -> int:
    """One nvcc job: ``-cubin`` for ``sm_XY``, ``-ptx`` for ``compute_XY``; cached."""
    from aotwheel.buildsteps.cache import atomic_write
    from aotwheel.buildsteps.tiers import Tiers
    from aotwheel.backends.nvidia.targets import parse_cuda_target

    tc = json.loads(Path(args.toolchain).read_text())
    target = parse_cuda_target(args.target)
    source = Path(args.source)
    options = list(args.option or [])
    out = Path(args.output)
    # Local cache, then the remote stores (CMake's settings file, else the environment), with one
    # warning per build tree.
    from aotwheel.buildsteps.tiers import load_settings

    tiers = Tiers.for_build(out.parent, load_settings(args.settings))
    key = _cache_key(tc, source.read_bytes(), target.name, options, tiers.local.tool_sha256(tc["nvcc"]))
    cached, _, writable = tiers.lookup(key, label=source.name)
    if cached is not None:
        atomic_write(out, cached)
        if args.depfile:
            _write_depfile(Path(args.depfile), out, [source, Path(tc["header"])])
        return 0
    mode = "-cubin" if target.kind == "cubin" else "-ptx"
    cmd = [tc["nvcc"], "-x", "cu", "-include", tc["header"], mode, f"-gencode=arch={target.virtual},code={target.name}", *options]
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    cmd += [str(source), "-o", str(tmp)]
    if args.depfile:
        cmd += ["-MD", "-MF", args.depfile, "-MT", str(out)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"nvcc failed to run for {source.name} ({target.name}): {exc}; check the CUDA installation") from None
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip().splitlines()[:1] or ["no output"])
        raise ToolchainError(f"nvcc could not compile {source.name} for {target.name}: {str(first).strip()[:200]}")
    data = tmp.read_bytes()
    tmp.unlink()
    atomic_write(out, data)
    tiers.store(key, data, source.name, writable)
    return 0


def _write_depfile(depfile: Path, output: Path, inputs: list[Path]) -> None:
    deps = " ".join(str(p).replace(" ", "\\ ") for p in inputs)
    depfile.write_text(f"{str(output).replace(' ', chr(92) + ' ')}: {deps}\n")


def fatbin(args: argparse.Namespace) -> int:
    """``fatbinary --create`` over one source's images (``--image sm_90=file``)."""
    from aotwheel.backends.nvidia.targets import parse_cuda_target

    tc = json.loads(Path(args.toolchain).read_text())
    cmd = [tc["fatbinary"], "--64", f"--create={args.output}"]
    if args.compress_mode:
        cmd.append(f"--compress-mode={args.compress_mode}")
    for spec in args.image:
        name, _, path = spec.partition("=")
        t = parse_cuda_target(name)
        kind = "elf" if t.kind == "cubin" else "ptx"
        cmd.append(f"--image3=kind={kind},sm={t.arch}{t.suffix},file={path}")
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
        f"/* Generated by aotwheel.backends.nvidia.build: {len(fatbins)} CUDA fat binaries in .nv_fatbin. */",
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
        f"const struct aotwheel_cuda_image aotwheel_{name}_cuda_images[] = {{{entries}}};" if fatbins else f"const struct aotwheel_cuda_image aotwheel_{name}_cuda_images[1];",
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
    from aotwheel.buildsteps.cache import atomic_write

    c_text, h_text = render_embed(args.name, args.fatbins)
    for path, text in ((Path(args.out_c), c_text), (Path(args.out_h), h_text)):
        if not path.is_file() or path.read_text() != text:
            atomic_write(path, text.encode())
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m aotwheel.backends.nvidia.build", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="step", required=True)
    c = sub.add_parser("configure")
    c.add_argument("--targets", required=True, help="NVIDIA tokens: sm_90,sm_80,compute_80,ptx")
    c.add_argument("--nvcc", default="")
    c.add_argument("--header", default="")
    c.add_argument("--out", required=True)
    c.add_argument("--print-targets", action="store_true")
    c.set_defaults(run=configure)
    j = sub.add_parser("compile")
    j.add_argument("--toolchain", required=True)
    j.add_argument("--source", required=True)
    j.add_argument("--target", required=True)
    j.add_argument("--output", required=True)
    j.add_argument("--depfile", default="")
    j.add_argument("--option", action="append", help="extra nvcc argument (repeatable)")
    j.add_argument("--settings", default="", help="remote-cache settings CMake wrote (NAME=value lines)")
    j.set_defaults(run=compile_image)
    f = sub.add_parser("fatbin")
    f.add_argument("--toolchain", required=True)
    f.add_argument("--output", required=True)
    f.add_argument("--image", action="append", required=True, help="TARGET=FILE")
    f.add_argument("--compress-mode", default="", choices=["", "default", "size", "speed", "balance", "none"])
    f.set_defaults(run=fatbin)
    e = sub.add_parser("embed")
    e.add_argument("--name", required=True)
    e.add_argument("--out-c", required=True)
    e.add_argument("--out-h", required=True)
    e.add_argument("fatbins", nargs="*")
    e.set_defaults(run=embed)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(lambda: args.run(args))


if __name__ == "__main__":
    sys.exit(main())
