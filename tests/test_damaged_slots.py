"""Damaged embedded frames are named, the same way by `inspect`, `inspect --deep`, `check` and the
OpenCL loader (issue 37 item 3): a slot that is empty, holds bytes no reader knows, a random
frame, two frames, or the other slot's frame (swapped) is a warning naming the image and never a
native claim; the loader refuses it with one error naming the image (it handed a fat binary to
OpenCL as source, and named a temporary file).

The binary is a real CMake + ninja build (Debian's ocloc, pvc and acm-g10, COMPRESS ON); it is
damaged here with pyelftools' offsets and zstandard, not with aotwheel's readers."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import types
from pathlib import Path

import pytest

from aotwheel.errors import AotwheelError

from _build_util import PYTHONPATH, REPO, embedded_images, require, run

pytestmark = pytest.mark.usefixtures("builds")

PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(ds LANGUAGES C)
add_library(dsext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
aotwheel_add_device_code(dsext SOURCES {kernel} DEVLIST DEVS NAME ds)
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    require("cmake", "ninja", "cc", "ocloc", "clang-15", "llvm-spirv-15")
    root = tmp_path_factory.mktemp("ds")
    (root / "src").mkdir()
    (root / "src" / "CMakeLists.txt").write_text(PROJECT.format(kernel=REPO / "csrc" / "kernels" / "reduce.cl"))
    (root / "src" / "ext.c").write_text('#include "ds_aot.h"\nunsigned long n(void) { return aotwheel_ds_image_count; }\n')
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "AOTWHEEL_CACHE_DIR": str(root / "cache")}
    run(["cmake", "-G", "Ninja", "-S", str(root / "src"), "-B", str(root / "b"), f"-Daotwheel_DIR={REPO / 'cmake'}",
         f"-DPython_EXECUTABLE={sys.executable}", "-DUSE_AOT_DEVLIST=pvc,acm-g10"], env=env)
    run(["ninja", "-C", str(root / "b")], env=env)
    return next((root / "b").glob("libdsext*.so"))


def _slots(so: Path) -> list[tuple[str, int, int, int]]:
    """(section, file offset, size, file offset of the .tgtimg entry) per image, by pyelftools."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection

    with open(so, "rb") as f:
        elf = ELFFile(f)
        tgt = elf.get_section_by_name(".tgtimg")
        relocs = {r["r_offset"]: r["r_addend"] for s in elf.iter_sections() if isinstance(s, RelocationSection)
                  for r in s.iter_relocations() if s.is_RELA()}
        out = []
        for i in range(0, tgt["sh_size"], 16):
            vaddr, size = struct.unpack_from("<QQ", tgt.data(), i)
            vaddr = relocs.get(tgt["sh_addr"] + i, vaddr)
            sec = next(s for s in elf.iter_sections() if s["sh_addr"] <= vaddr < s["sh_addr"] + s["sh_size"])
            out.append((sec.name, sec["sh_offset"] + vaddr - sec["sh_addr"], size, tgt["sh_offset"] + i))
        return out


def _swap_section_names(data: bytearray, so: Path) -> None:
    """Exchange the sh_name of the two bundle sections: each frame then sits in the other's slot."""
    from elftools.elf.elffile import ELFFile

    with open(so, "rb") as f:
        elf = ELFFile(f)
        shoff, shentsize = elf["e_shoff"], elf["e_shentsize"]
        idx = [i for i, s in enumerate(elf.iter_sections()) if s.name.startswith("__CLANG_OFFLOAD_BUNDLE__sycl-spir64")]
    a, b = (shoff + i * shentsize for i in idx)
    na, nb = data[a : a + 4], data[b : b + 4]
    data[a : a + 4], data[b : b + 4] = nb, na


def _damage(so: Path, how: str, out: Path) -> Path:
    import zstandard

    data = bytearray(so.read_bytes())
    (name, off, size, entry) = next(s for s in _slots(so) if s[0].endswith("spir64_gen"))
    if how == "bad-magic":
        data[off] ^= 0xFF
    elif how == "random-frame":
        data[off + 4 : off + size] = os.urandom(size - 4)
    elif how == "empty":
        struct.pack_into("<Q", data, entry + 8, 0)
    elif how == "two-frames":  # a smaller frame of the same image + a skippable frame: the slot's size
        image = zstandard.ZstdDecompressor().decompress(bytes(data[off : off + size]))
        small = zstandard.ZstdCompressor(level=19, write_content_size=True, write_checksum=True).compress(image)
        pad = size - len(small) - 8
        assert pad >= 0
        data[off : off + size] = small + struct.pack("<II", 0x184D2A50, pad) + bytes(pad)
    elif how == "swapped":
        _swap_section_names(data, so)
    out.write_bytes(bytes(data))
    return out


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": PYTHONPATH, "AOTWHEEL_JIT": "ignore"})


@pytest.mark.parametrize("how", ["bad-magic", "random-frame", "empty", "two-frames", "swapped"])
def test_a_damaged_native_slot_is_named_and_never_native(how, built, tmp_path):
    so = _damage(built, how, tmp_path / f"{how}.so")
    for args in (("inspect", str(so)), ("inspect", "--deep", str(so))):
        proc = _cli(*args)
        assert proc.returncode == 0, proc.stderr
        warnings = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("warning: image ") and "damaged" in ln]
        # the native slot is named (swapped: --deep also names the SPIR-V slot holding the fat binary)
        assert sum("(spir64_gen in " in w for w in warnings) == 1 and len(warnings) <= 2, proc.stdout
        assert "native: none" in proc.stdout and " 0 with native code" in proc.stdout, proc.stdout
    check = _cli("check", "--device", "pvc,acm-g10", str(so))
    named = [ln for ln in check.stderr.splitlines() if ln.startswith("aotwheel: warning: ") and "(spir64_gen in " in ln]
    assert len(named) == 1 and "damaged" in named[0], check.stderr
    verdicts = [ln for ln in check.stdout.splitlines() if ln.startswith(("pvc ", "acm-g10 "))]
    assert len(verdicts) == 2 and not any(": native" in v or " native " in v.split(" - ")[0] for v in verdicts), check.stdout
    clean = _cli("check", "--device", "pvc", str(built))
    assert " native " in clean.stdout  # the undamaged build is native: the damage made the difference


def _module(so: Path, swap: bool = False, native: bytes | None = None) -> types.ModuleType:
    """A stand-in for the extension's Python face: images() over the frames embedded in ``so``
    (read with pyelftools), triples exchanged with ``swap``, the native frame replaced by ``native``."""
    frames = {e.triple: e.data for e in embedded_images(so)}
    if swap:
        frames = {"spir64_gen": frames["spir64"], "spir64": frames["spir64_gen"]}
    if native is not None:
        frames["spir64_gen"] = native
    mod = types.ModuleType("dsdemo")
    mod.images = lambda: [(t, "reduce.cl", d) for t, d in frames.items()]  # type: ignore[attr-defined]
    return mod


@pytest.mark.parametrize("case", ["swapped", "bad-magic", "empty"])
def test_the_loader_refuses_a_damaged_slot_naming_the_image(case, built):
    from aotwheel.opencl import device_code

    frames = {e.triple: e.data for e in embedded_images(built)}
    native = {"bad-magic": b"\x00" + frames["spir64_gen"][1:], "empty": b""}.get(case)
    with pytest.raises(AotwheelError) as err:
        device_code(_module(built, swap=case == "swapped", native=native))
    text = str(err.value)
    assert "\n" not in text and text.startswith("dsdemo:reduce.cl: image ") and "damaged" in text, text
    assert ("misplaced" in text) == (case == "swapped")
    good = device_code(_module(built))  # the intact frames load
    assert good.spirv is not None and good.fatbinary is not None


def test_the_loaders_error_names_the_image_not_a_temporary_file(built, tmp_path):
    from aotwheel.opencl import device_code

    frames = {e.triple: e.data for e in embedded_images(built)}
    import zstandard

    fat = bytearray(zstandard.ZstdDecompressor().decompress(frames["spir64_gen"]))
    fat[-40:] = b"\xff" * 40  # the last member (generic_ir or a native one) cut into
    path = tmp_path / "fat.ar"
    path.write_bytes(bytes(fat[: len(fat) - 20]))
    with pytest.raises(AotwheelError) as err:  # an InspectError naming /tmp/aotwheel-opencl-*/image.ar before
        device_code(str(path))
    assert "aotwheel-opencl-" not in str(err.value) and str(err.value).startswith(f"{path}: "), str(err.value)


def test_a_failed_checksum_in_the_spirv_slot_is_named_by_every_reader(built, tmp_path):
    """aotwheel writes a checksum into each frame: a changed checksum (or a changed byte it covers)
    is one line naming the image in inspect (the default mode decompresses a one-block frame whole),
    --deep, check (text and JSON) and the loader."""
    data = bytearray(built.read_bytes())
    (name, off, size, _entry) = next(s for s in _slots(built) if not s[0].endswith("spir64_gen"))
    assert data[off + 4] & 0x04  # the frame carries a checksum
    data[off + size - 1] ^= 0x01
    so = tmp_path / "checksum.so"
    so.write_bytes(bytes(data))
    for args in (("inspect", str(so)), ("inspect", "--deep", str(so))):
        proc = _cli(*args)
        named = [ln for ln in proc.stdout.splitlines() if "(spir64 in " in ln and "damaged" in ln]
        assert len(named) == 1 and "checksum" in named[0], proc.stdout
    check = _cli("check", "--device", "pvc", "--json", str(so))
    import json

    (warning,) = json.loads(check.stdout)["warnings"]
    assert "(spir64 in " in warning and "checksum" in warning, check.stdout
    from aotwheel.opencl import device_code

    frames = {e.triple: e.data for e in embedded_images(built)}
    bad = frames["spir64"][:-1] + bytes([frames["spir64"][-1] ^ 0x01])
    mod = _module(built)
    mod.images = lambda: [("spir64_gen", "reduce.cl", frames["spir64_gen"]), ("spir64", "reduce.cl", bad)]  # type: ignore[attr-defined]
    with pytest.raises(AotwheelError) as err:
        device_code(mod)
    assert "\n" not in str(err.value) and "checksum" in str(err.value) and "reinstall" in str(err.value), str(err.value)
