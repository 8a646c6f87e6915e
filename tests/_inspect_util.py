"""Helpers for the inspector tests: real tools (clang-15, llvm-spirv-15, ocloc, gcc, readelf, ar),
pinned downloads cached under tests/.cache, and readings of binaries that do not use aotwheel."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CLANG, LLVM_SPIRV, require
from conftest import run_tool as run

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"
CACHE = TESTS / ".cache"

KERNELS_CL = """
kernel void add(global float* a, global const float* b) { size_t i = get_global_id(0); a[i] += b[i]; }
kernel void mul(global float* a, global const float* b) { size_t i = get_global_id(0); a[i] *= b[i]; }
kernel void neg(global float* a) { size_t i = get_global_id(0); a[i] = -a[i]; }
"""
KERNEL_NAMES = ("add", "mul", "neg")


def spirv(workdir: Path) -> Path:
    """SPIR-V for KERNELS_CL straight from clang-15 + llvm-spirv-15."""
    require(CLANG, LLVM_SPIRV)
    src = workdir / "k.cl"
    src.write_text(KERNELS_CL)
    run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(workdir / "k.bc")])
    run([LLVM_SPIRV, str(workdir / "k.bc"), "-o", str(workdir / "k.spv")])
    return workdir / "k.spv"


def ocloc_single(spv: Path, device: str, outdir: Path) -> tuple[Path, str]:
    """A single-device ``ocloc compile``; returns the .bin and the core ocloc names in its file name
    (``k_XE_HPC_COREpvc.bin`` -> ``XE_HPC_CORE``)."""
    require("ocloc")
    out = outdir / f"single-{device}"
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", "k", "-out_dir", str(out)])
    (binary,) = out.glob("k_*.bin")
    return binary, binary.name[2:].removesuffix(".bin")


def ocloc_fat(spv: Path, devices: str, outdir: Path, name: str = "kfat") -> Path:
    """``ocloc compile -device a,b`` (no -out_dir: ocloc then writes the ar fat binary in cwd)."""
    require("ocloc")
    outdir.mkdir(parents=True, exist_ok=True)
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", devices, "-output", name], cwd=outdir)
    return outdir / name


def ocloc_ip(device: str) -> str:
    words = run(["ocloc", "ids", device]).stdout.split()
    ips = [w for w in words if re.fullmatch(r"\d+\.\d+\.\d+", w)]
    assert len(ips) == 1, words
    return ips[0]


def ar_names(path: Path) -> list[str]:
    require("ar")
    return run(["ar", "t", str(path)]).stdout.split()


def build_so(workdir: Path, images: list[tuple[str, Path]], kernels: dict[str, list[str]], name: str = "libdev.so") -> Path:
    """A real PIC shared object laid out like icpx/our build: each image ``.incbin``-ed into
    ``__CLANG_OFFLOAD_BUNDLE__sycl-<triple>``, a ``.tgtimg`` of ``.quad start, size`` pairs (which
    become R_X86_64_RELATIVE relocations; GNU ld also stores the address in the section) and a
    ``.tgtsym`` name table."""
    require("gcc")
    lines = []
    for i, (triple, path) in enumerate(images):
        lines += [f'.section __CLANG_OFFLOAD_BUNDLE__sycl-{triple},"a"', ".balign 16", f"img{i}_start:", f'.incbin "{path}"', f"img{i}_end:"]
    lines += ['.section .tgtimg,"aw"', ".balign 16"]
    lines += [f".quad img{i}_start, img{i}_end - img{i}_start" for i in range(len(images))]
    lines += ['.section .tgtsym,""']
    lines += [f'.asciz "sycl-{triple}-unknown-unknown.{k}"' for triple, names in kernels.items() for k in names]
    lines += [".text", ".globl anchor", ".type anchor,@function", "anchor: ret"]
    asm = workdir / f"{name}.s"
    asm.write_text("\n".join(lines) + "\n")
    out = workdir / name
    run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(out), str(asm)])
    return out


def relocs_into(so: Path, section: str) -> list[tuple[int, str, int]]:
    """``(offset, type, addend)`` of dynamic relocations that land in ``section``, per readelf."""
    require("readelf")
    sec = {}
    for line in run(["readelf", "-SW", str(so)]).stdout.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]{16})\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m:
            sec[m[1]] = (int(m[2], 16), int(m[3], 16))
    lo, size = sec[section]
    out = []
    for line in run(["readelf", "-rW", str(so)]).stdout.splitlines():
        m = re.match(r"^([0-9a-f]{12,16})\s+[0-9a-f]+\s+(R_X86_64_\w+)\s+([0-9a-f]+)", line)
        if m and lo <= int(m[1], 16) < lo + size:
            out.append((int(m[1], 16), m[2], int(m[3], 16)))
    return out


def readelf_notes(path: Path) -> dict[int, bytes]:
    """IntelGT compat notes as readelf prints them (type -> description bytes)."""
    require("readelf")
    text = run(["readelf", "-n", "--wide", str(path)]).stdout
    section = text.split("Displaying notes found in: .note.intelgt.compat", 1)[1].split("Displaying notes", 1)[0]
    notes = {}
    for line in section.splitlines():
        m = re.match(r"\s*IntelGT\s+0x[0-9a-f]+\s+(.*?)\s+description data: ([0-9a-f ]+)", line)
        if not m:
            continue
        t = re.search(r"\(0x([0-9a-f]+)\)", m[1])
        # readelf names types 1/2/4 after generic ELF notes; the order in the file is 1, 2, 3, 4, 6...
        ntype = int(t[1], 16) if t else {"NT_VERSION (version)": 1, "NT_ARCH (architecture)": 2, "GO BUILDID": 4}[m[1].strip()]
        notes[ntype] = bytes.fromhex(m[2])
    return notes


def fetch(url_name: str, version: str, filename: str, sha256: str) -> Path:
    """A pinned wheel from PyPI (pip download), cached under tests/.cache and checked by sha256."""
    dest = CACHE / filename
    if not dest.exists() or hashlib.sha256(dest.read_bytes()).hexdigest() != sha256:
        CACHE.mkdir(parents=True, exist_ok=True)
        m = re.search(r"-(cp\d+)-[^-]+-(manylinux\w+)\.whl$", filename)
        target = ["--python-version", m[1][2] + "." + m[1][3:], "--platform", m[2]] if m else []
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", *target, "-d", str(CACHE), f"{url_name}=={version}"],
            capture_output=True, text=True,
        )
        if proc.returncode != 0 or not dest.exists():
            pytest.skip(f"cannot download {url_name}=={version} from PyPI: {proc.stderr.strip()[-200:]}")
    digest = hashlib.sha256(dest.read_bytes()).hexdigest()
    assert digest == sha256, f"{filename}: sha256 {digest} != pinned {sha256}"
    return dest


def decompress_to(src: Path, dest: Path) -> Path:
    """Unpack a committed ``.zst`` excerpt (python-zstandard, a dependency: never skipped)."""
    import zstandard

    with open(src, "rb") as fin, open(dest, "wb") as fout:
        zstandard.ZstdDecompressor().copy_stream(fin, fout)
    return dest


def drop_from_page_cache(path: Path) -> None:
    """Write back and evict one file's pages (only that file; needs no privileges)."""
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def resident_bytes(path: Path) -> int:
    """How much of ``path`` sits in the page cache (mincore over a fresh mapping)."""
    import ctypes
    import os

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    page = os.sysconf("SC_PAGE_SIZE")
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        assert addr not in (None, ctypes.c_void_p(-1).value), "mmap failed"
        vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
        try:
            assert libc.mincore(addr, size, vec) == 0, ctypes.get_errno()
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)
    return sum(v & 1 for v in vec) * page


def zstd_frame(work: Path, data: bytes, name: str, *opts: str) -> bytes:
    """``data`` compressed by the real ``zstd`` tool with ``opts``."""
    require("zstd")
    raw = work / f"{name}.raw"
    raw.write_bytes(data)
    run(["zstd", "-q", "-f", *opts, str(raw), "-o", str(work / f"{name}.zst")])
    return (work / f"{name}.zst").read_bytes()


def host_library(work: Path, images: list[tuple[str, bytes, int]], name: str = "host") -> Path:
    """A gcc-built shared object ``lib<name>.so``: each image in ``__CLANG_OFFLOAD_BUNDLE__sycl-<triple>``,
    and a ``.tgtimg`` row for each listing the size given (the image's own, or not)."""
    require("gcc")
    lines = []
    for i, (triple, blob, _) in enumerate(images):
        (work / f"{name}{i}.bin").write_bytes(blob)
        lines += [f'.section __CLANG_OFFLOAD_BUNDLE__sycl-{triple},"a"', ".balign 16", f"img{i}:",
                  f'.incbin "{work / f"{name}{i}.bin"}"']
    lines += ['.section .tgtimg,"aw"', ".balign 16", *(f".quad img{i}, {n}" for i, (_, _, n) in enumerate(images))]
    lines += [".text", ".globl anchor", ".type anchor,@function", "anchor: ret"]
    (work / f"{name}.s").write_text("\n".join(lines) + "\n")
    run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(work / f"lib{name}.so"), str(work / f"{name}.s")])
    return work / f"lib{name}.so"
