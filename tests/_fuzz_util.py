"""Parser fuzzing (issue 7.2): real seed binaries, a structure-aware byte mutator, and a harness
that runs one mutated input through one parser and says what went wrong, if anything.

Seeds are made by the real tools (clang-15 + llvm-spirv-15, Debian's ocloc in both binary formats,
CMake + ninja through aotwheel_add_device_code, nvcc, zstandard, zipfile) and cached under
tests/.cache/fuzz/. The only seed no installed tool can write is an LLVM OffloadBinary
(clang-offload-packager is not packaged for LLVM 15 here): it is packed by :func:`offload_binary`
from llvm/Object/OffloadBinary.h around real SPIR-V.

The oracle: a parser may return anything or raise :class:`aotwheel.errors.InspectError`; any
other exception is a finding, and so is an input that runs past the per-input time guard.
Used by tests/test_fuzz_*.py (short runs) and fuzz/fuzz_long.py (the long run).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import BUNDLER, CLANG, LLVM_SPIRV, REPO, ocloc_output

CACHE = REPO / "tests" / ".cache" / "fuzz"
KERNEL = """
__kernel void add(__global float *a, __global const float *b) { size_t i = get_global_id(0); a[i] += b[i]; }
__kernel void scale(__global float *a, const float s) { a[get_global_id(0)] *= s; }
"""
CUDA_KERNEL = 'extern "C" __global__ void vadd(float* c, const float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] += a[i]; }\n'
# Small cap for decompression inside the harness: a mutated frame may not make us allocate more.
ZSTD_CAP = 16 << 20


class MissingTool(Exception):
    """A seed needs a tool that is not installed (tests skip with this message)."""


# ------------------------------------------------------------------------------------------------
# Seeds (real binaries)


def _run(cmd: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    tool = shutil.which(cmd[0]) if os.sep not in cmd[0] else cmd[0]
    if tool is None:
        raise MissingTool(f"needs {cmd[0]} to make a fuzz seed (CI installs it)")
    proc = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")


def _cached(name: str, make: Callable[[Path], None]) -> Path:
    """``CACHE/name``, made once by ``make(tmp_path)`` and renamed into place (safe under -n)."""
    out = CACHE / name
    if not out.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        make(tmp)
        os.replace(tmp, out)
    return out


def spirv_seed() -> Path:
    def make(tmp: Path) -> None:
        src = CACHE / "k.cl"
        src.write_text(KERNEL)
        bc = tmp.with_suffix(".bc")
        _run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(src), "-o", str(bc)])
        _run([LLVM_SPIRV, str(bc), "-o", str(tmp)])

    return _cached("k.spv", make)


def _ocloc(name: str, devices: str, *extra: str) -> Path:
    """``ocloc compile`` of the seed SPIR-V: one device -> a bare binary, several -> a fat ar."""
    spv = spirv_seed()

    def make(tmp: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="fuzz-ocloc-") as work:
            _run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", devices,
                  "-output", "out", "-output_no_suffix", *extra], cwd=Path(work))
            shutil.copyfile(ocloc_output(Path(work), "out"), tmp)

    return _cached(name, make)


def legacy_seed() -> Path:
    from conftest import ocloc_writes_legacy_images

    if not ocloc_writes_legacy_images():  # asked of the installed ocloc
        raise MissingTool("the installed ocloc writes only zebin images; the legacy patch-token seed comes from "
                          "Debian 12's ocloc 22.43 (the bookworm CI lane)")
    return _ocloc("pvc.legacy.bin", "pvc")  # Debian's ocloc 22.43 writes patch-token ELFs


def zebin_seed() -> Path:
    return _ocloc("pvc.zebin", "pvc", "--format", "zebin")


def carried_so_seed() -> Path:
    """A host .so whose .rodata holds a zebin and a SPIR-V module as plain data (what a library
    loads itself: aotwheel.carried), the hot spots of both headers inside the file."""
    zebin, spv = zebin_seed(), spirv_seed()

    def make(tmp: Path) -> None:
        asm = tmp.with_suffix(".s")
        asm.write_text(f'.section .rodata\n.balign 16\n.incbin "{zebin}"\n.balign 16\n.incbin "{spv}"\n'
                       ".text\n.globl anchor\nanchor: ret\n")
        _run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(tmp), str(asm)])

    return _cached("carried.so", make)


def fat_seed() -> Path:
    return _ocloc("fat.ar", "pvc,acm-g10")


def fat_zebin_seed() -> Path:
    return _ocloc("fat-zebin.ar", "pvc,acm-g10", "--format", "zebin")


def generic_ir_seed() -> Path:
    """The ``generic_ir`` member of the fat binary (an 0xFF02 ELF carrying SPIR-V), via GNU ar."""
    fat = fat_seed()

    def make(tmp: Path) -> None:
        if shutil.which("ar") is None:
            raise MissingTool("needs GNU ar (binutils) to extract generic_ir")
        data = subprocess.run(["ar", "p", str(fat), "generic_ir"], capture_output=True, check=True).stdout
        tmp.write_bytes(data)

    return _cached("generic_ir.elf", make)


def zstd_seed() -> Path:
    """A real zstd frame (content size declared) holding the fat binary."""
    fat = fat_seed()

    def make(tmp: Path) -> None:
        import zstandard

        tmp.write_bytes(zstandard.ZstdCompressor(level=3, write_content_size=True).compress(fat.read_bytes()))

    return _cached("fat.ar.zst", make)


_SO_PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(fuzzseed LANGUAGES C)
add_library(fz MODULE fz.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_add_device_code(fz SOURCES {kernel} DEVICES pvc acm-g10 NAME fz)
"""


def host_so_seed() -> Path:
    """A host .so built by aotwheel_add_device_code (CMake + ninja): .tgtimg, .tgtsym, fat binary,
    SPIR-V image, R_X86_64_RELATIVE relocations."""

    def make(tmp: Path) -> None:
        for tool in ("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV):
            if shutil.which(tool) is None:
                raise MissingTool(f"needs {tool} to build the host .so seed (CI installs it)")
        with tempfile.TemporaryDirectory(prefix="fuzz-so-") as work:
            src = Path(work, "src")
            src.mkdir()
            (src / "k.cl").write_text(KERNEL)
            (src / "fz.c").write_text('#include "fz_aot.h"\nunsigned long n(void) { return aotwheel_fz_image_count; }\n')
            (src / "CMakeLists.txt").write_text(_SO_PROJECT.format(kernel="k.cl"))
            env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
            env["AOTWHEEL_CACHE_DIR"] = str(Path(work, "cache"))
            _run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(Path(work, "b")), f"-Daotwheel_DIR={REPO / 'cmake'}",
                  f"-DPython_EXECUTABLE={sys.executable}"], env=env)
            _run(["ninja", "-C", str(Path(work, "b"))], env=env)
            shutil.copyfile(next(Path(work, "b").glob("*fz*.so")), tmp)

    return _cached("libfz.so", make)


def wheel_seed() -> Path:
    """A wheel-shaped zip (deflated) holding the host .so and the fat binary, as pip lays them out."""
    so, fat = host_so_seed(), fat_seed()

    def make(tmp: Path) -> None:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("fz/__init__.py", "")
            zf.write(so, "fz/_fz.abi3.so")
            zf.write(fat, "fz/kernels.bin")
            zf.writestr("fz-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp310-abi3-linux_x86_64\n")

    return _cached("fz-0.1-cp310-abi3-linux_x86_64.whl", make)


def icpx_so_seed() -> Path:
    """A third-party host .so built by icpx (vLLM's xpumem_allocator, tests/data, Apache-2.0):
    .tgtimg with RELATIVE relocations, descriptors, zebin fat binaries (two cri members)."""
    packed = REPO / "tests" / "data" / "vllm-xpu-kernels-0.1.16.2" / "xpumem_allocator.abi3.so.zst"
    if not packed.is_file():
        raise MissingTool(f"needs {packed.relative_to(REPO)} (committed with the inspector tests)")

    def make(tmp: Path) -> None:
        import zstandard

        tmp.write_bytes(zstandard.ZstdDecompressor().decompress(packed.read_bytes()))

    return _cached("xpumem_allocator.abi3.so", make)


AMD_KERNEL = "kernel void add(global float* a, global const float* b) { size_t i = get_global_id(0); a[i] += b[i]; }\n"


def amd_bundle_seed() -> Path:
    """A real clang offload bundle: clang-15 code objects for gfx90a:xnack- and gfx1030 (AMDGPU
    relocatable objects), bundled by clang-offload-bundler-15 with a host entry."""

    def make(tmp: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="fuzz-amd-") as work:
            src = Path(work, "a.cl")
            src.write_text(AMD_KERNEL)
            for cpu in ("gfx90a:xnack-", "gfx1030"):
                _run([CLANG, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-nogpulib", "-O2",
                      "-c", str(src), "-o", str(Path(work, cpu.split(":")[0] + ".co"))])
            Path(work, "host.bin").write_bytes(b"")
            _run([BUNDLER, "-type=bc",
                  "-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-,hipv4-amdgcn-amd-amdhsa--gfx1030",
                  f"-input={Path(work, 'host.bin')}", f"-input={Path(work, 'gfx90a.co')}", f"-input={Path(work, 'gfx1030.co')}",
                  f"-output={tmp}"])

    return _cached("amd.bundle", make)


def ccob(bundle: bytes, version: int, method: int) -> bytes:
    """A CCOB (compressed offload bundle) as clang's OffloadBundler.cpp writes it: magic, u16
    version, u16 method (0 zlib, 1 zstd), sizes (v2: u32 total, u32 uncompressed; v3: u64 each),
    u64 MD5 prefix, stream. Packed here: Debian 12's newest bundler (16) cannot compress."""
    import hashlib
    import zlib

    import zstandard

    stream = zstandard.ZstdCompressor(level=3).compress(bundle) if method == 1 else zlib.compress(bundle)
    digest = hashlib.md5(bundle).digest()[:8]
    if version == 2:
        return b"CCOB" + struct.pack("<HHII", 2, method, 24 + len(stream), len(bundle)) + digest + stream
    return b"CCOB" + struct.pack("<HHQQ", 3, method, 32 + len(stream), len(bundle)) + digest + stream


def hip_fatbin_seed() -> Path:
    """A .hip_fatbin section's bytes: the plain bundle, a zstd CCOB v2 and a zlib CCOB v3, each
    at a 4096-byte boundary as hipcc aligns them."""
    bundle = amd_bundle_seed().read_bytes()

    def make(tmp: Path) -> None:
        out = bytearray()
        for blob in (bundle, ccob(bundle, 2, 1), ccob(bundle, 3, 0)):
            out += b"\0" * (-len(out) % 4096) + blob
        tmp.write_bytes(bytes(out))

    return _cached("hip_fatbin.bin", make)


_CPU_AOT = """
import sys
import pyopencl as cl
dev = [d for p in cl.get_platforms() for d in p.get_devices(cl.device_type.CPU)][0]
prg = cl.Program(cl.Context([dev]), open(sys.argv[1], "rb").read()).build()
open(sys.argv[2], "wb").write(prg.get_info(cl.program_info.BINARIES)[0])
"""


def cpu_aot_seed() -> Path:
    """A CPU AOT image (ELF 0xff04, x86-64, .ocl.*): Intel's CPU OpenCL runtime's own program
    binary for the SPIR-V seed (pyopencl; intel-opencl-rt from PyPI)."""
    spv = spirv_seed()

    def make(tmp: Path) -> None:
        lib = next((Path(p, "lib", "libintelocl.so") for p in (sys.prefix, sys.base_prefix) if Path(p, "lib", "libintelocl.so").is_file()), None)
        if lib is None:
            raise MissingTool("needs Intel's CPU OpenCL runtime (ci/install-opencl-cpu.sh) to make the CPU AOT seed")
        with tempfile.TemporaryDirectory(prefix="fuzz-cpu-") as work:
            Path(work, "intel-cpu.icd").write_text(f"{lib}\n")
            env = dict(os.environ, OCL_ICD_VENDORS=work)
            _run([sys.executable, "-c", _CPU_AOT, str(spv), str(tmp)], env=env)

    return _cached("k_cpu.bin", make)


def listed_size_so_seed() -> Path:
    """A host .so laid out as bitsandbytes 0.50.2's icpx builds: zstd images whose .tgtimg entry
    lists the decompressed size, past the end of the loaded segment (gcc assembles it)."""
    import zstandard

    images = [fat_seed().read_bytes(), spirv_seed().read_bytes()]

    def make(tmp: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="fuzz-listed-") as work:
            lines = []
            for i, (triple, data) in enumerate(zip(("spir64_gen", "spir64"), images)):
                Path(work, f"img{i}.zst").write_bytes(zstandard.ZstdCompressor(level=19, write_content_size=True).compress(data))
                lines += [f'.section __CLANG_OFFLOAD_BUNDLE__sycl-{triple},"a"', ".balign 16", f"img{i}:", f'.incbin "{work}/img{i}.zst"']
            lines += ['.section .tgtimg,"aw"', ".balign 16"] + [f".quad img{i}, {len(d)}" for i, d in enumerate(images)]
            lines += [".text", ".globl anchor", ".type anchor,@function", "anchor: ret"]
            Path(work, "s.s").write_text("\n".join(lines) + "\n")
            _run(["gcc", "-shared", "-fPIC", "-nostdlib", "-o", str(tmp), str(Path(work, "s.s"))])

    return _cached("listed-size.so", make)


def offload_binary(image: bytes, strings: dict[str, str], image_kind: int = 6, offload_kind: int = 8) -> bytes:
    """An OffloadBinary (version 1) laid out as llvm/Object/OffloadBinary.h writes it: header
    {magic, u32 version, u64 size, u64 entry offset, u64 entry size}, one entry {u16 image kind,
    u16 offload kind, u32 flags, u64 string offset, u64 string count, u64 image offset, u64 image
    size}, the string table {u64 key, u64 value} offsets, the strings, then the 8-aligned image."""
    header, entry = struct.calcsize("<4sIQQQ"), struct.calcsize("<HHIQQQQ")  # 32, 40
    table = header + entry
    strtab = b""
    offsets = []
    base = table + 16 * len(strings)
    for k, v in strings.items():
        ko = base + len(strtab)
        strtab += k.encode() + b"\0"
        vo = base + len(strtab)
        strtab += v.encode() + b"\0"
        offsets.append((ko, vo))
    img_off = (base + len(strtab) + 7) & ~7
    size = img_off + len(image)
    out = bytearray(struct.pack("<4sIQQQ", b"\x10\xff\x10\xad", 1, size, header, entry))
    out += b"\0" * (header - len(out))
    out += struct.pack("<HHIQQQQ", image_kind, offload_kind, 0, table, len(strings), img_off, len(image))
    for ko, vo in offsets:
        out += struct.pack("<QQ", ko, vo)
    out += strtab
    out += b"\0" * (img_off - len(out))
    out += image
    return bytes(out)


def offload_seed() -> Path:
    spv = spirv_seed()

    def make(tmp: Path) -> None:
        one = offload_binary(spv.read_bytes(), {"triple": "spir64-unknown-unknown", "arch": "pvc", "kind": "sycl"})
        two = offload_binary(fat_seed().read_bytes(), {"triple": "spir64_gen-unknown-unknown", "arch": "pvc,acm-g10"}, image_kind=1)
        tmp.write_bytes(one + b"\0" * (-len(one) % 8) + two)

    return _cached("two.offload", make)


def cuda_fatbin_seed() -> Path:
    """nvcc 13: an sm_90 cubin and zstd-compressed compute_90 PTX in one .fatbin."""
    return _nvcc("vadd.fatbin", "-fatbin", "-gencode=arch=compute_90,code=[sm_90,compute_90]")


def cuda_so_seed() -> Path:
    return _nvcc("libvadd.so", "-shared", "-Xcompiler", "-fPIC", "-gencode=arch=compute_90,code=[sm_90,compute_90]")


def _nvcc(name: str, *args: str) -> Path:
    from aotwheel.backends.nvidia.nvcc import find_nvcc
    from aotwheel.errors import ToolchainError

    try:
        nvcc = find_nvcc().path
    except ToolchainError as exc:
        raise MissingTool(f"needs nvcc (CUDA 13; bash ci/setup.sh installs it from PyPI) to make the NVIDIA fuzz seeds: {exc}") from None

    def make(tmp: Path) -> None:
        src = CACHE / "vadd.cu"
        src.write_text(CUDA_KERNEL)
        from _cuda_util import nvcc_link_args

        link = nvcc_link_args(nvcc) if "-shared" in args else []
        _run([nvcc, *args, str(src), *link, "-o", str(tmp)])

    return _cached(name, make)


# ------------------------------------------------------------------------------------------------
# Parsers under test: each takes the mutated bytes (and a scratch file for path-based APIs)


def _region(data: bytes):
    from aotwheel.formats.region import Region

    return Region(data, "fuzz")


def _each(*steps: Callable[[], object]) -> None:
    """Run every step even when an earlier one rejects the input; re-raise the first rejection."""
    from aotwheel.errors import InspectError

    first: InspectError | None = None
    for step in steps:
        try:
            step()
        except InspectError as exc:
            first = first or exc
    if first is not None:
        raise first


def parse_inspect(data: bytes, scratch: Path) -> None:
    """The public entry point in deep mode (every image walked, decompressed, hashed)."""
    from aotwheel.inspector import inspect

    scratch.write_bytes(data)
    inspect(scratch, deep=True)


def parse_elf(data: bytes, scratch: Path) -> None:
    from aotwheel.formats.elf import open_elf, read_host

    _each(lambda: read_host(open_elf(_region(data))), lambda: parse_inspect(data, scratch))


def parse_ar(data: bytes, scratch: Path) -> None:
    from aotwheel.formats.ar import read_ar
    from aotwheel.formats.arname import member_target

    _each(lambda: [member_target(m.name) for m in read_ar(_region(data))], lambda: parse_inspect(data, scratch))


def parse_zebin(data: bytes, scratch: Path) -> None:
    from aotwheel.backends.intel.zebin import read_zebin
    from aotwheel.backends.intel.zeinfo import validate_zebin

    # validate_zebin: --deep's check of the structure and .ze_info (parse_inspect reaches it too)
    _each(lambda: read_zebin(_region(data)), lambda: validate_zebin(_region(data)), lambda: parse_inspect(data, scratch))


def parse_legacy(data: bytes, scratch: Path) -> None:
    from aotwheel.backends.intel.kinds import sniff
    from aotwheel.backends.intel.legacy import ir_payload, read_legacy

    region = _region(data)
    # An 0xFF02 object (generic_ir) has no patch-token program: only its IR payload is read.
    first = (lambda: ir_payload(region)) if sniff(data[:64]) == "ir-elf" else (lambda: read_legacy(region))
    _each(first, lambda: parse_inspect(data, scratch))


def parse_carried(data: bytes, scratch: Path) -> None:
    """The standalone-image parsers on the whole input (as if it started at a magic match), then
    the inspector's search of a host's data sections (aotwheel.carried, deep mode)."""
    from aotwheel.backends.amd.codeobject import EM_AMDGPU
    from aotwheel.backends.intel.standalone import EM_INTELGT, spirv_size
    from aotwheel.backends.nvidia.standalone import EM_CUDA, ptx_text
    from aotwheel.formats.elf import standalone_size

    region = _region(data)
    _each(lambda: standalone_size(region, (EM_CUDA, EM_INTELGT, EM_AMDGPU)), lambda: spirv_size(region),
          lambda: ptx_text(region), lambda: parse_inspect(data, scratch))


def parse_spirv(data: bytes, scratch: Path) -> None:
    from aotwheel.formats.spirv import read_spirv

    _each(lambda: read_spirv(_region(data), count_kernels=True), lambda: parse_inspect(data, scratch))


def parse_zstd(data: bytes, scratch: Path) -> None:
    from aotwheel.formats import zstd

    region = _region(data)
    _each(lambda: zstd.content_size(region), lambda: zstd.peek(region, 64), lambda: zstd.decompress(region, cap=ZSTD_CAP),
          lambda: _frame_facts_agree(data, region))


def _frame_facts_agree(data: bytes, region: Any) -> None:
    """The inspect loop's header-only reading of a frame says what the Region readers say, or nothing."""
    from aotwheel.errors import InspectError
    from aotwheel.formats import zstd

    facts = zstd.frame_facts(data, 0, len(data))
    if facts is None or data[:4] != b"\x28\xb5\x2f\xfd":
        return
    try:
        expected = (zstd.frame_size(region), zstd.content_size(region))
    except InspectError as exc:  # not a rejection of the input: the two readings disagree
        raise AssertionError(f"frame_facts read {facts} where the Region readers say: {exc}") from None
    assert facts == expected, (facts, expected)


def parse_offload(data: bytes, scratch: Path) -> None:
    from aotwheel.formats.offload import read_all

    for entry in read_all(_region(data)):
        _region(data[entry.image_offset : entry.image_offset + entry.image_size])


def parse_wheel(data: bytes, scratch: Path) -> None:
    wheel = scratch.with_name("fuzz-0.1-cp310-abi3-linux_x86_64.whl")
    wheel.write_bytes(data)
    from aotwheel.inspector import inspect

    inspect(wheel, deep=True)


def parse_cuda(data: bytes, scratch: Path) -> None:
    from aotwheel.backends.nvidia.fatbin import entry_payload, read_fatbin

    scratch.write_bytes(data)
    fat = read_fatbin(scratch)
    for entry in fat.entries if fat else ():
        entry_payload(scratch, entry, cap=ZSTD_CAP)


def parse_hip_fatbin(data: bytes, scratch: Path) -> None:
    from aotwheel.backends.amd.codeobject import read_code_object
    from aotwheel.formats.bundle import read_hip_fatbin

    def walk() -> None:
        for b in read_hip_fatbin(_region(data), cap=ZSTD_CAP):
            for e in b.entries:
                if e.size:
                    read_code_object(b.bundle.sub(e.offset, e.size, "code object"))

    _each(walk, lambda: parse_inspect(data, scratch))


def parse_bundle(data: bytes, scratch: Path) -> None:
    from aotwheel.backends.amd.targets import parse_target_id
    from aotwheel.formats.bundle import read_bundle

    _each(lambda: [parse_target_id(e.target_id) for e in read_bundle(_region(data))], lambda: parse_inspect(data, scratch))


def parse_cpu_aot(data: bytes, scratch: Path) -> None:
    from aotwheel.backends.intel.cpu_aot import read_cpu_aot

    _each(lambda: read_cpu_aot(_region(data)), lambda: parse_inspect(data, scratch))


@dataclass(frozen=True)
class Target:
    """One parser and the real binaries its fuzzing starts from."""

    name: str
    parse: Callable[[bytes, Path], None]
    seeds: tuple[Callable[[], Path], ...]


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("elf-tgtimg", parse_elf, (host_so_seed,)),
    Target("elf-icpx", parse_elf, (icpx_so_seed,)),
    Target("ar", parse_ar, (fat_seed, fat_zebin_seed)),
    Target("zebin", parse_zebin, (zebin_seed,)),
    Target("legacy", parse_legacy, (legacy_seed, generic_ir_seed)),
    Target("spirv", parse_spirv, (spirv_seed,)),
    Target("zstd", parse_zstd, (zstd_seed,)),
    Target("offload", parse_offload, (offload_seed,)),
    Target("wheel", parse_wheel, (wheel_seed,)),
    Target("cuda", parse_cuda, (cuda_fatbin_seed, cuda_so_seed)),
    Target("elf-listed-size", parse_elf, (listed_size_so_seed,)),
    Target("hip-fatbin", parse_hip_fatbin, (hip_fatbin_seed,)),
    Target("bundle", parse_bundle, (amd_bundle_seed,)),
    Target("cpu-aot", parse_cpu_aot, (cpu_aot_seed,)),
    Target("carried", parse_carried, (carried_so_seed,)),
)}


def load_seeds(target: Target) -> list[bytes]:
    return [make().read_bytes() for make in target.seeds]


# ------------------------------------------------------------------------------------------------
# Mutations: a list of small edits, drawn by hypothesis (tests) or random.Random (long run)

#: Values that break size and offset arithmetic: zero, sign edges, "just past the end", huge.
INTERESTING = (0, 1, 2, 7, 8, 16, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0xFFFF, 0x10000, 0x7FFFFFFF,
               0x80000000, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF)
OPS = ("flip", "byte", "int", "ascii", "trunc", "delete", "insert", "copy")


def hot_spots(data: bytes) -> list[int]:
    """Offsets of fields parsers trust: ELF header and header tables, ar member headers,
    fat-binary containers; mutations aim here part of the time."""
    spots = list(range(0, min(64, len(data))))
    try:
        if data[:4] == b"\x7fELF" and data[4] == 2 and len(data) >= 64:
            phoff, shoff = struct.unpack_from("<QQ", data, 32)
            phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 54)
            for base, n, size in ((shoff, shnum, shentsize), (phoff, phnum, phentsize)):
                spots += [o for o in range(base, base + n * size) if o < len(data)]
        elif data[:8] == b"!<arch>\n":
            pos = 8
            while pos + 60 <= len(data):
                spots += range(pos, pos + 60)
                size = int(data[pos + 48 : pos + 58].decode().strip() or 0)
                pos += 60 + size + (size & 1)
        elif data[:4] == b"\x50\xed\x55\xba":
            spots += range(0, min(len(data), 16 + 64 * 4))
    except (ValueError, UnicodeDecodeError, struct.error):
        pass
    return spots


def apply(data: bytes, ops: Sequence[tuple], spots: Sequence[int] | None = None) -> bytes:
    """Apply ``ops`` (tuples ``(op, where, a, b)``; ``where`` picks a position: an index into
    ``spots`` when negative, else a plain offset, both taken modulo the length)."""
    buf = bytearray(data)
    for op, where, a, b in ops:
        n = len(buf)
        if n == 0:
            buf += bytes([a & 0xFF])
            continue
        pos = (spots[(-where - 1) % len(spots)] if where < 0 and spots else where) % n
        if op == "flip":
            buf[pos] ^= 1 << (a % 8)
        elif op == "byte":
            buf[pos] = a & 0xFF
        elif op == "int":
            width = (1, 2, 4, 8)[b % 4]
            value = (INTERESTING[a % len(INTERESTING)] + (n if a >= 1000 else 0) + (b // 4 % 3 - 1)) % (1 << (8 * width))
            buf[pos : pos + width] = value.to_bytes(width, "little")[: n - pos]
        elif op == "ascii":  # decimal fields (ar sizes)
            text = str((INTERESTING[a % len(INTERESTING)], n, n + 1, 10**12, -1)[b % 5]).encode()
            buf[pos : pos + len(text)] = text[: n - pos]
        elif op == "trunc":
            del buf[max(1, pos) :]
        elif op == "delete":
            del buf[pos : pos + 1 + a % 64]
        elif op == "insert":
            buf[pos:pos] = bytes([b & 0xFF]) * (1 + a % 64)
        elif op == "copy":  # duplicate a chunk elsewhere (splices headers into bodies)
            src = (a * 7919) % n
            chunk = buf[src : src + 1 + b % 128]
            buf[pos : pos + len(chunk)] = chunk
    return bytes(buf)


def random_ops(rng: random.Random, n_spots: int) -> list[tuple]:
    """1-8 edits; about a third of the positions aim at hot spots."""
    ops = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4, 8))):
        where = -1 - rng.randrange(max(1, n_spots)) if n_spots and rng.random() < 0.35 else rng.randrange(1 << 30)
        a = rng.randrange(1100) if rng.random() < 0.5 else rng.randrange(1 << 16)
        ops.append((rng.choice(OPS), where, a, rng.randrange(1 << 16)))
    return ops


# ------------------------------------------------------------------------------------------------
# Harness


class Timeout(BaseException):
    """Raised by the time guard (BaseException: a parser's ``except Exception`` cannot eat it)."""


@contextmanager
def time_guard(seconds: float):
    """Interrupt the block after ``seconds`` (SIGALRM; main thread only): a hang detector."""
    def fire(signum, frame):
        raise Timeout(f"input ran past the {seconds} s guard")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass(frozen=True)
class Finding:
    target: str
    error: str  # "ValueError: ..." or "Timeout: ..."
    where: str  # innermost frame file:line


def classify(target: Target, data: bytes, scratch: Path, guard_s: float = 2.0) -> tuple[str, Finding | None]:
    """``("accepted", None)``, ``("rejected", None)`` (one-line InspectError) or ``("finding", f)``."""
    import traceback

    from aotwheel.errors import InspectError

    try:
        with time_guard(guard_s):
            target.parse(data, scratch)
    except InspectError as exc:
        msg = str(exc)
        if "\n" in msg:  # the contract: one line
            return "finding", Finding(target.name, f"InspectError with a multi-line message: {msg[:200]!r}", "")
        return "rejected", None
    except (Exception, Timeout) as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        frame = next((f for f in reversed(tb) if "/aotwheel/" in f.filename), tb[-1] if tb else None)
        where = f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"
        return "finding", Finding(target.name, f"{type(exc).__name__}: {str(exc)[:200]}", where)
    return "accepted", None


def run_one(target: Target, data: bytes, scratch: Path, guard_s: float = 2.0) -> Finding | None:
    """Parse ``data`` with ``target``; ``None`` when it returned or raised a one-line InspectError."""
    return classify(target, data, scratch, guard_s)[1]


# ------------------------------------------------------------------------------------------------
# Open bugs the fuzzer finds in files this suite does not own (docs/reliability.md lists the fix).
# (exception type, file of the innermost aotwheel frame) -> one line: what is wrong, the fix.
# Empty: the fuzzer's findings so far are fixed (tests/test_fuzz_regressions.py, docs/reliability.md).
KNOWN: dict[tuple[str, str], str] = {}


def known_bug(finding: Finding) -> str | None:
    kind = finding.error.split(":", 1)[0]
    return KNOWN.get((kind, finding.where.split(":", 1)[0]))
