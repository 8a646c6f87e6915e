"""Device images a library keeps as plain data and loads itself (aotwheel.carried, issue 39), and
static archives read member by member, on binaries built here by the real tools: ocloc zebins,
clang-15 + llvm-spirv-15 SPIR-V, nvcc cubins, PTX and objects, gcc and ar. Expected offsets and
sizes are where the built files' own bytes sit in the library (found with ``bytes.find``), targets
are the ones the tools were asked for, archive counts are cuobjdump's."""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

from aotwheel.inspector import inspect

from _inspect_util import require, run, spirv


def _asm_so(workdir: Path, name: str, rodata: list[Path | bytes], extra: list[str] = (), shared: bool = True) -> Path:  # type: ignore[assignment]
    """A host .so (or, ``shared=False``, an object) whose .rodata holds each file of ``rodata``
    (``.incbin``, 16-byte aligned) or raw bytes, as a library keeps images it loads itself."""
    require("gcc")
    lines = [".section .rodata", ".balign 16"]
    for i, item in enumerate(rodata):
        lines += [".balign 16", f"blob{i}:"]
        if isinstance(item, Path):
            lines.append(f'.incbin "{item}"')
        else:
            lines.append(".byte " + ",".join(str(b) for b in item))
    lines += [*extra, ".text", f".globl anchor_{name.replace('.', '_')}", f"anchor_{name.replace('.', '_')}: ret"]
    asm = workdir / f"{name}.s"
    asm.write_text("\n".join(lines) + "\n")
    out = workdir / name
    run(["gcc", *(["-shared", "-nostdlib"] if shared else ["-c"]), "-fPIC", "-o", str(out), str(asm)])
    return out


def _intel_images(tmp_path: Path) -> tuple[Path, Path]:
    """A pvc zebin (``--format zebin``: ocloc 22.43 writes the legacy format by default) and the SPIR-V it was built from."""
    spv = spirv(tmp_path)
    out = tmp_path / "zebin"
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc", "--format", "zebin", "-output", "k", "-out_dir", str(out)])
    (zebin,) = out.glob("k*.bin")
    return zebin, spv


def _where(container: Path, blob: Path, after: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """(offset, size) of ``blob``'s bytes in ``container``, the first copy past ``after`` (an
    earlier blob's offset and size: a zebin holds its SPIR-V too)."""
    data, own = container.read_bytes(), blob.read_bytes()
    at = data.find(own, after[0] + after[1])
    assert at >= 0
    return at, len(own)


def test_zebin_and_spirv_in_rodata_are_carried_with_their_bytes_and_target(tmp_path: Path) -> None:
    zebin, spv = _intel_images(tmp_path)
    so = _asm_so(tmp_path, "libcarry.so", [zebin, spv])
    (fr,) = inspect(so).files
    assert fr.images == [] and fr.native_targets == []  # nothing a runtime registers
    assert fr.carried is not None
    got = [(i.offset, i.size, i.kind, i.section) for i in fr.carried.images]
    assert got == [(*_where(so, zebin), "zebin", ".rodata"), (*_where(so, spv, _where(so, zebin)), "spirv", ".rodata")]
    # The target is the zebin file's own reading (ocloc 22.43 writes no IP note for pvc; sid's 26.27 does).
    (alone,) = inspect(zebin).files
    assert [(t.name, t.ip, t.format) for t in fr.carried.native_targets] == [(t.name, t.ip, "zebin") for t in alone.native_targets]
    assert fr.carried.ir == ["spirv"] and fr.warnings == []
    text = run([sys.executable, "-m", "aotwheel", "inspect", str(so)]).stdout
    assert any(line.startswith("  carried, loaded by the library itself: 2 images · native: ") for line in text.splitlines())
    doc = json.loads(run([sys.executable, "-m", "aotwheel", "inspect", str(so), "--json"]).stdout)
    assert [(i["kind"], i["offset"], i["size"]) for i in doc["files"][0]["carried"]["images"]] == [(k, o, s) for o, s, k, _ in got]


def test_chance_magic_numbers_and_cut_images_are_not_images(tmp_path: Path) -> None:
    zebin, spv = _intel_images(tmp_path)
    rng = random.Random(39)
    junk = [b"\x7fELF\x02\x01\x01" + bytes(rng.randrange(256) for _ in range(300)),
            b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\xff\xff\xcd\x00" + bytes(rng.randrange(256) for _ in range(300)),  # EM_INTELGT, no tables
            b"\x03\x02\x23\x07\x00\x00\x01\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00" + bytes(rng.randrange(256) for _ in range(300)),
            b".version 8.0\n.target sm_80\n.address_size 64\n" + b"x" * 200,  # no kernel, no NUL before the next blob's bytes
            zebin.read_bytes()[: zebin.read_bytes().find(spv.read_bytes())],  # a zebin cut where its SPIR-V starts: no section table
            spv.read_bytes()[:200]]  # a SPIR-V module cut before its first function ends
    so = _asm_so(tmp_path, "libjunk.so", junk)
    (fr,) = inspect(so).files
    assert fr.carried is None and fr.warnings == []


def _sycl_so(workdir: Path, name: str, spv: Path, rodata: list[Path]) -> Path:
    """A SYCL-like host: one registered SPIR-V image (.tgtimg) and ``rodata`` kept as plain data."""
    extra = ['.section __CLANG_OFFLOAD_BUNDLE__sycl-spir64,"a"', ".balign 16", "img0:", f'.incbin "{spv}"', "img0_end:",
             '.section .tgtimg,"aw"', ".balign 16", ".quad img0, img0_end - img0"]
    return _asm_so(workdir, name, rodata, extra)


def test_check_gives_the_carried_verdict_apart_from_the_registered_one(tmp_path: Path) -> None:
    zebin, spv = _intel_images(tmp_path)
    plain = _sycl_so(tmp_path, "libplain.so", spv, [])
    carrying = _sycl_so(tmp_path, "libcarrying.so", spv, [spv])
    out = {}
    for so in (plain, carrying):
        proc = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(so), "--device", "pvc", "--json", "--jit", "ignore"],
                              capture_output=True, text=True)
        out[so.name] = (proc.returncode, json.loads(proc.stdout)["verdicts"])
    (rc0, (v0,)), (rc1, (v1,)) = out["libplain.so"], out["libcarrying.so"]
    assert rc0 == rc1 == 0
    assert v0["verdict"] == v1["verdict"] == "jit"  # the registered SPIR-V: unchanged by what the library keeps
    assert (v0["carried"], v1["carried"]) == (None, "jit")
    strip = {"binary", "carried", "carried_image", "reason", "remedy"}
    assert {k: v for k, v in v0.items() if k not in strip} == {k: v for k, v in v1.items() if k not in strip}
    text = run([sys.executable, "-m", "aotwheel", "check", str(carrying), "--device", "pvc", "--jit", "ignore"]).stdout
    assert "  carried, loaded by the library itself: jit spirv" in text.splitlines()


def test_static_archive_members_in_a_file_a_directory_and_a_wheel(tmp_path: Path) -> None:
    zebin, spv = _intel_images(tmp_path)
    obj = _asm_so(tmp_path, "z.o", [zebin], shared=False)
    other = _asm_so(tmp_path, "plain.o", [b"no device code here" * 8], shared=False)
    require("ar")
    lib = tmp_path / "pkg" / "libz.a"
    lib.parent.mkdir()
    bad = tmp_path / "bad.o"  # an ELF header whose section table lies 1 TiB past its end
    bad.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, 1 << 40, 0, 64, 0, 0, 64, 5, 1))
    run(["ar", "rcs", str(lib), str(obj), str(other), str(bad)])
    (fr,) = inspect(lib).files
    assert fr.error is None and len(fr.warnings) == 1 and fr.warnings[0].startswith("bad.o: not read: ")  # the other members still read
    assert fr.carried is not None
    assert [(i.kind, i.section) for i in fr.carried.images] == [("zebin", "z.o:.rodata")]
    assert [t.format for t in fr.carried.native_targets] == ["zebin"]
    at, size = _where(lib, zebin)
    assert (fr.carried.images[0].offset, fr.carried.images[0].size) == (at, size)
    whl = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.write(lib, "pkg/libz.a")
    for where in (lib.parent, whl):
        (other_fr,) = inspect(where).files
        assert [(i.kind, i.section, i.size) for i in other_fr.carried.images] == [("zebin", "z.o:.rodata", size)]
        assert [t.format for t in other_fr.carried.native_targets] == ["zebin"]


# --- NVIDIA (nvcc 13 from PyPI: marked cuda) ------------------------------------------------------

KERNEL = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] += 1.0f; }\n'
KERNEL2 = 'extern "C" __global__ void k2(float* a) { a[threadIdx.x] *= 2.0f; }\n'


def test_cubin_and_ptx_in_rodata_are_carried(nvcc: str, tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    cubin, ptx = tmp_path / "k.cubin", tmp_path / "k.ptx"
    run([nvcc, "-cubin", "-arch=sm_80", "-o", str(cubin), str(src)])
    run([nvcc, "-ptx", "-arch=sm_86", "-o", str(ptx), str(src)])
    text = ptx.read_bytes()
    start = text.index(b".version ")  # the module from its first directive (the comments before it are trivia)
    body = tmp_path / "k.body.ptx"
    body.write_bytes(text[start:] + b"\0")  # cuModuleLoadData takes a C string
    so = _asm_so(tmp_path, "libcuda_carry.so", [cubin, body])
    (fr,) = inspect(so).files
    assert fr.carried is not None
    got = [(i.offset, i.size, i.kind, i.arch) for i in fr.carried.images]
    assert got == [(*_where(so, cubin), "cubin", "sm_80"), (*_where(so, body, _where(so, cubin)), "ptx", "compute_86")]
    assert [t.name for t in fr.carried.native_targets] == ["sm_80"] and fr.carried.ir == ["ptx compute_86"]


def test_nvcc_static_archive_counts_are_cuobjdumps(nvcc: str, tmp_path: Path) -> None:
    from _cuda_util import listing

    (tmp_path / "a.cu").write_text(KERNEL)
    (tmp_path / "b.cu").write_text(KERNEL2)
    run([nvcc, "-c", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
         "-o", str(tmp_path / "a.o"), str(tmp_path / "a.cu")])
    run([nvcc, "-c", "-rdc=true", "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_86,code=compute_86",
         "-o", str(tmp_path / "b.o"), str(tmp_path / "b.cu")])
    lib = tmp_path / "libk.a"
    run(["ar", "rcs", str(lib), str(tmp_path / "a.o"), str(tmp_path / "b.o")])
    expected = Counter(listing(lib))  # cuobjdump --list-elf --list-ptx: ("cubin", "sm_80"), ("ptx", "sm_90"), ...
    (fr,) = inspect(lib).files
    got = Counter((i.kind, (i.arch or "").replace("compute_", "sm_")) for i in fr.images)
    assert got == expected == Counter({("cubin", "sm_80"): 2, ("cubin", "sm_90"): 1, ("ptx", "sm_90"): 1, ("ptx", "sm_86"): 1})
    assert {i.section for i in fr.images} == {"a.o:.nv_fatbin", "b.o:__nv_relfatbin"}


def test_amd_code_objects_in_rodata_are_carried_with_their_processor(tmp_path: Path) -> None:
    from conftest import CLANG

    require(CLANG)
    (tmp_path / "k.cl").write_text("kernel void k(global float* a) { a[get_global_id(0)] += 1.0f; }\n")
    objects = []
    for cpu in ("gfx90a", "gfx1030"):  # clang-15's code objects (-c: relocatable, as the AMD tests build them)
        out = tmp_path / f"k-{cpu}.co"
        run([CLANG, "-x", "cl", "-cl-std=CL2.0", "-target", "amdgcn-amd-amdhsa", f"-mcpu={cpu}", "-nogpulib", "-O2", "-c",
             str(tmp_path / "k.cl"), "-o", str(out)])
        objects.append(out)
    so = _asm_so(tmp_path, "libamd_carry.so", objects)
    (fr,) = inspect(so).files
    assert fr.carried is not None
    assert [(i.offset, i.size, i.kind, i.arch) for i in fr.carried.images] == [
        (*_where(so, objects[0]), "code-object", "gfx90a"), (*_where(so, objects[1], _where(so, objects[0])), "code-object", "gfx1030")]
    assert [(t.arch, t.vendor) for t in fr.carried.native_targets] == [("gfx90a", "amd"), ("gfx1030", "amd")]
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "check", str(so), "--device", "gfx90a", "--json"], capture_output=True, text=True)
    assert json.loads(proc.stdout)["verdicts"] == []  # no registered image: no verdict, the exit status as before
    assert proc.returncode == 0
