"""Issue 39 on pinned PyPI wheels (slow; skipped offline): device images a library loads itself,
static archives, and the containers a verdict counts, each checked against an independent reading
written here from the formats' specs (ELF gABI headers, CUDA's ELF e_flags, SPIR-V's physical
layout, the fat binary container header) or against cuobjdump (the pinned nvidia-cuda-cuobjdump).

- onnxruntime-gpu 1.31.1: 114 raw cubins in libonnxruntime_providers_cuda.so's .rodata.
- onemkl-sycl-dft 2026.2.0: 20 zebins and 21 SPIR-V modules in libmkl_sycl_dft.so.6's .rodata
  (20 of the SPIR-V modules are the zebins' own .spv sections, one stands alone).
- nvidia-cudnn-cu12 9.28.0.42: the verdict's modules cover .nv_fatbin's and .cask_resource's containers.
- sgl-kernel 0.3.21: libmscclpp_static.a and libmscclpp_nccl_static.a, cuobjdump's per-architecture counts.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from aotwheel.backends.nvidia.report import cuda_fields
from aotwheel.inspector import inspect

from _cuda_util import listing, wheel_member
from _inspect_util import run

pytestmark = pytest.mark.usefixtures("large_binaries")

ORT = ("onnxruntime-gpu==1.31.1", "onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
       "e26c475fe361b2015f45b4b824bd13f0bb20204e59b62814e6f0acd5f3d491a6")
DFT = ("onemkl-sycl-dft==2026.2.0", "onemkl_sycl_dft-2026.2.0-py2.py3-none-manylinux_2_28_x86_64.whl",
       "2cb6760c7f3d2e6141e31b326a8cfa43c76c1feaf98cfc51570f92efbf61d03a")
CUDNN = ("nvidia-cudnn-cu12==9.28.0.42", "nvidia_cudnn_cu12-9.28.0.42-py3-none-manylinux_2_27_x86_64.whl",
         "9ff58b7f36dacd0a93e89f8f2957b52466889217963701daa15e577317cfa375")
SGL = ("sgl-kernel==0.3.21", "sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl",
       "57dfb3a2a3cd759f499c32e2bad5f6489b7c58f7f9a84ee00c53ec92d303aaab")


def _section(path: Path, name: str) -> tuple[int, int]:
    """(file offset, size) of section ``name``, as readelf prints it."""
    for line in run(["readelf", "-SW", str(path)]).stdout.splitlines():
        m = re.search(r"\]\s+(\S+)\s+\S+\s+[0-9a-f]{16}\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and m[1] == name:
            return int(m[2], 16), int(m[3], 16)
    raise AssertionError(f"{path}: no section {name}")


def _elf_extent(data: bytes, at: int) -> int | None:
    """An ELF64 LE file at ``at`` (gABI): its last byte from the program and section header tables and its sections."""
    if data[at : at + 6] != b"\x7fELF\x02\x01":
        return None
    phoff, shoff = struct.unpack_from("<QQ", data, at + 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, at + 54)
    if shentsize != 64 or not shnum:
        return None
    end = max(shoff + 64 * shnum, phoff + phentsize * phnum)
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", data, at + shoff + 64 * i + 4)
        off, size = struct.unpack_from("<QQ", data, at + shoff + 64 * i + 24)
        if sh_type != 8:  # SHT_NOBITS has no bytes
            end = max(end, off + size)
    return end


def _elves(data: bytes, lo: int, hi: int, machine: int) -> list[tuple[int, int, int]]:
    """(offset, size, e_flags) of each ELF of ``machine`` whose magic sits in [lo, hi), not nested in an earlier one."""
    out, pos = [], lo
    while (at := data.find(b"\x7fELF", pos, hi)) >= 0:
        pos = at + 4
        if struct.unpack_from("<H", data, at + 18)[0] != machine or (size := _elf_extent(data, at)) is None:
            continue
        out.append((at, size, struct.unpack_from("<I", data, at + 48)[0]))
        pos = at + size
    return out


def _cuda_sm(flags: int) -> str:
    # CUDA ELF header before ABI version 8 (what these cubins are): SM in the low byte, 0x800 = "a".
    return f"sm_{flags & 0xFF}{'a' if flags & 0x800 else ''}"


def test_onnxruntime_raw_cubins_are_carried_with_their_architectures() -> None:
    so = wheel_member(ORT, "onnxruntime/capi/libonnxruntime_providers_cuda.so")
    data = so.read_bytes()
    lo, size = _section(so, ".rodata")
    expected = [(at, n, _cuda_sm(flags)) for at, n, flags in _elves(data, lo, lo + size, 190)]
    assert len(expected) == 114
    (fr,) = inspect(so).files
    assert fr.carried is not None
    assert [(i.offset, i.size, i.arch) for i in fr.carried.images] == expected
    assert Counter(t.name for t in fr.carried.native_targets) == Counter(a for _, _, a in expected)
    assert not any(i.section == ".rodata" for i in fr.images)  # none of them counted as registered


def _spirv_magics(data: bytes, lo: int, hi: int) -> list[int]:
    out, pos = [], lo
    while (at := data.find(b"\x03\x02\x23\x07", pos, hi)) >= 0:
        version, bound, schema = struct.unpack_from("<I", data, at + 4)[0], *struct.unpack_from("<II", data, at + 12)
        if version in {0x10000 | (m << 8) for m in range(7)} and bound and schema == 0:
            out.append(at)
        pos = at + 4
    return out


def test_onemkl_dft_zebins_and_spirv_modules_are_carried() -> None:
    so = wheel_member(DFT, "onemkl_sycl_dft-2026.2.0.data/data/lib/libmkl_sycl_dft.so.6")
    data = so.read_bytes()
    lo, size = _section(so, ".rodata")
    zebins = _elves(data, lo, lo + size, 205)
    spirv = _spirv_magics(data, lo, lo + size)
    assert (len(zebins), len(spirv)) == (20, 21)
    inside = [s for s in spirv if any(a <= s < a + n for a, n, _ in zebins)]
    (fr,) = inspect(so).files
    assert fr.carried is not None
    got_zebins = [(i.offset, i.size) for i in fr.carried.images if i.kind == "zebin"]
    got_spirv = [i.offset for i in fr.carried.images if i.kind == "spirv"]
    assert got_zebins == [(a, n) for a, n, _ in zebins]
    assert got_spirv == sorted(set(spirv) - set(inside))  # the one module that stands alone
    assert len(inside) == 20 and all(t.rebuildable for t in fr.carried.native_targets)  # each zebin's own SPIR-V
    assert {t.name for t in fr.carried.native_targets} == {"pvc"}
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(so), "--device", "pvc", "--json", "--jit", "ignore"],
                          capture_output=True, text=True)
    (v,) = json.loads(proc.stdout)["verdicts"]
    assert (proc.returncode, v["verdict"], v["carried"]) == (0, "jit", "native")


def _containers(data: bytes, lo: int, hi: int, *, tiled: bool) -> int:
    """Fat binary containers {u32 0xBA55ED50, u16 version 1, u16 header 16, u64 size} in [lo, hi):
    consecutive (and 8-byte aligned, zero-padded) in .nv_fatbin, else found by magic whose first
    entry header (u16 kind 1/2/8, u32 header size >= 64) holds."""
    n, pos = 0, lo
    while pos + 16 <= hi:
        at = pos if tiled else data.find(b"\x50\xed\x55\xba", pos, hi)
        if at < 0:
            break
        magic, version, header, fat = struct.unpack_from("<IHHQ", data, at)
        if tiled and magic == 0:
            pos += 8
            continue
        kind, _v, entry_header = struct.unpack_from("<HHI", data, at + 16)
        if magic != 0xBA55ED50 or version != 1 or header != 16 or at + 16 + fat > hi or kind not in (1, 2, 8) or entry_header < 64:
            assert not tiled, f"bad container at {at:#x}"
            pos = at + 4
            continue
        n += 1
        pos = at + 16 + fat
    return n


def test_cudnn_verdict_modules_count_every_container_inspect_lists() -> None:
    so = wheel_member(CUDNN, "nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9")
    data = so.read_bytes()
    expected = sum(_containers(data, off, off + size, tiled=name == ".nv_fatbin")
                   for name in (".nv_fatbin", ".cask_resource") for off, size in [_section(so, name)])
    (fr,) = inspect(so).files
    assert sum(m.containers for m in cuda_fields(fr).modules) == expected
    assert any(".cask_resource" in m.section for m in cuda_fields(fr).modules)
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(so), "--device", "sm_80", "--json"], capture_output=True, text=True)
    (v,) = json.loads(proc.stdout)["verdicts"]
    # The verdict counts the registered containers (modules the CUDA runtime loads) and, apart, those
    # the library loads itself: together every container inspect lists.
    said = re.search(r"; (\d+) containers? registered, and (\d+) more in ([^;]*?) that the library loads itself, (\d+) of them", v["reason"])
    assert said is not None, v["reason"]
    assert int(said[1]) + int(said[2]) == expected and said[3] == ".cask_resource" and int(said[4]) <= int(said[2])
    assert Counter(v["unsupported_modules"]) <= Counter(m.label() for m in cuda_fields(fr).modules)


@pytest.mark.parametrize("member", ["lib/libmscclpp_static.a", "lib/libmscclpp_nccl_static.a"])
def test_sgl_kernel_static_archives_give_cuobjdumps_counts(member: str) -> None:
    lib = wheel_member(SGL, member)
    expected = Counter(listing(lib))
    assert expected  # sm_80 / sm_90 cubins and PTX
    (fr,) = inspect(lib).files
    assert Counter((i.kind, (i.arch or "").replace("compute_", "sm_")) for i in fr.images) == expected
