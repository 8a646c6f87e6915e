"""Issue 37's leftovers on image slots: the default ``inspect`` (hence ``check``) reads the head of
each compressed IR slot, so a fat binary in a ``spir64`` slot is damage there too, not only in
``--deep`` and the loader; a zstd frame whose checksum fails is one warning line naming the fix; a
slot of no known triple (a damaged descriptor) holding zeros is damage, not a silent "unknown";
``check --json`` carries the warnings its text prints.

Binaries: gcc-built shared objects around real clang/llvm-spirv/ocloc output compressed by the real
``zstd`` tool (tests/_inspect_util.py), and a real icpx-built library (vLLM's xpumem_allocator,
tests/data), damaged here with plain byte edits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.inspector import inspect

import _fuzz_util as fu
from _inspect_util import host_library, ocloc_fat, spirv, zstd_frame

PYTHONPATH = os.pathsep.join([str(fu.REPO / "python"), os.environ.get("PYTHONPATH", "")])


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": PYTHONPATH, "AOTWHEEL_JIT": "ignore"})


def _named(lines: list[str], triple: str) -> list[str]:
    return [w for w in lines if f"({triple} in " in w and " is damaged: " in w]


@pytest.fixture(params=["c", "python"])
def scanner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both table walks (the C scanner's leaves and the Python loop) must judge alike."""
    if request.param == "python":
        monkeypatch.setenv("AOTWHEEL_NO_FASTSCAN", "1")
    else:
        monkeypatch.delenv("AOTWHEEL_NO_FASTSCAN", raising=False)
    return str(request.param)


def test_a_fat_binary_in_a_spir64_slot_is_damage_by_default_and_in_deep(tmp_path: Path, scanner: str) -> None:
    spv = spirv(tmp_path)
    fat = ocloc_fat(spv, "pvc,tgllp", tmp_path / "fat").read_bytes()
    good = zstd_frame(tmp_path, spv.read_bytes(), "good", "-19")
    so = host_library(tmp_path, [("spir64", b, len(b)) for b in (zstd_frame(tmp_path, fat, "fat", "-19"), good)])
    for deep in (False, True):
        (fr,) = inspect(so, deep=deep).files
        assert [i.content for i in fr.images] == ["ar", "spirv"], (deep, fr.images)
        (w,) = fr.warnings
        assert w.startswith("image 0 (spir64 in ") and "holds ar where spirv belongs (misplaced)" in w, w
        assert fr.native_targets == [] and fr.ir == ["spirv"]  # the intact SPIR-V slot still gives the JIT claim
    lone = host_library(tmp_path, [("spir64", b, len(b)) for b in (zstd_frame(tmp_path, fat, "fat2", "-19"),)], name="lone")
    for deep in (False, True):
        (fr,) = inspect(lone, deep=deep).files
        assert fr.ir == [] and fr.native_targets == [] and len(fr.warnings) == 1, (deep, fr)  # no IR claim from it


def test_check_names_the_misplaced_slot_in_text_and_json(tmp_path: Path) -> None:
    spv = spirv(tmp_path)
    fat = ocloc_fat(spv, "pvc,tgllp", tmp_path / "fat").read_bytes()
    frame = zstd_frame(tmp_path, fat, "fat")
    so = host_library(tmp_path, [("spir64", frame, len(frame))])
    text = _cli("check", "--device", "pvc", str(so))
    named = _named(text.stderr.splitlines(), "spir64")
    assert len(named) == 1 and named[0].startswith(f"aotwheel: warning: {so}: image 0 (spir64 in "), text.stderr
    js = _cli("check", "--device", "pvc", "--json", str(so))
    doc = json.loads(js.stdout)
    assert doc["warnings"] == [named[0].removeprefix("aotwheel: warning: ")], doc
    assert [v["verdict"] for v in doc["verdicts"]] != ["native"] and "verdicts" in doc and doc["binary"] == str(so)
    clean = json.loads(_cli("check", "--device", "pvc", "--json", str(spv)).stdout)
    assert clean["warnings"] == []  # the key is always there; empty when nothing is damaged


def _flip_checksum(frame: bytes) -> bytes:
    assert frame[4] & 0x04, "the zstd tool writes a checksum by default"
    return frame[:-1] + bytes([frame[-1] ^ 0x01])


def test_a_failed_frame_checksum_is_one_line_by_default_and_in_deep(tmp_path: Path, scanner: str) -> None:
    spv = spirv(tmp_path).read_bytes()
    good = zstd_frame(tmp_path, spv, "good")
    bad = _flip_checksum(good)
    so = host_library(tmp_path, [("spir64", b, len(b)) for b in (good, bad)])
    for deep in (False, True):
        (fr,) = inspect(so, deep=deep).files
        (w,) = fr.warnings
        assert "\n" not in w and w.startswith("image 1 (spir64 in ") and "checksum" in w, (deep, w)
        assert w.endswith("(rebuild the binary or reinstall the package)"), w
        assert fr.ir == ["spirv"]  # image 0 is intact
    check = _cli("check", "--device", "pvc", "--json", str(so))
    assert len(json.loads(check.stdout)["warnings"]) == 1 and "checksum" in json.loads(check.stdout)["warnings"][0]
    (clean,) = inspect(host_library(tmp_path, [("spir64", good, len(good))], name="clean")).files
    assert clean.warnings == []


def test_a_native_frame_with_a_failed_checksum_is_named_by_default(tmp_path: Path, scanner: str) -> None:
    fat = ocloc_fat(spirv(tmp_path), "pvc,tgllp", tmp_path / "fat").read_bytes()
    bad = _flip_checksum(zstd_frame(tmp_path, fat, "gen"))
    so = host_library(tmp_path, [("spir64_gen", bad, len(bad))])
    (fr,) = inspect(so).files
    (w,) = fr.warnings
    assert "(spir64_gen in " in w and "fails its checksum" in w and fr.native_targets == [], w
    assert w.endswith("; no target is read from it (rebuild the binary or reinstall the package)") and "\n" not in w, w


def test_zeroed_slot_of_no_known_triple_is_damage(tmp_path: Path, scanner: str) -> None:
    zeros = bytes(4096)
    so = host_library(tmp_path, [("foo64", zeros, len(zeros))])
    (fr,) = inspect(so).files
    (w,) = fr.warnings
    assert w.startswith("image 0 (foo64 in ") and "all zero bytes" in w, w
    text = _cli("check", "--device", "pvc", str(so))
    assert len(_named(text.stderr.splitlines(), "foo64")) == 1, text.stderr


def test_zeroing_4_kib_of_an_icpx_library_names_the_image(tmp_path: Path, scanner: str) -> None:
    """The issue's case: 4 KiB of zeros over the image (and, the second time, over its descriptor's
    triple too) turned the image into a silent "unknown"."""
    try:
        src = fu.icpx_so_seed()
    except fu.MissingTool as exc:
        pytest.skip(str(exc))
    data = src.read_bytes()
    (orig,) = inspect(src).files
    assert orig.native_targets and not any(" is damaged: " in w for w in orig.warnings)
    (img,) = orig.images
    triple_at = data.find(b"spir64_gen\0")
    assert triple_at > 0
    for name, spans in (("image", [img.offset]), ("image-and-triple", [img.offset, triple_at])):
        damaged = bytearray(data)
        for at in spans:
            damaged[at : at + 4096] = bytes(4096)
        path = tmp_path / f"{name}.so"
        path.write_bytes(bytes(damaged))
        (fr,) = inspect(path).files
        named = [w for w in fr.warnings if " is damaged: " in w]
        assert len(named) == 1 and "all zero bytes" in named[0] and fr.native_targets == [], (name, fr.warnings)
        check = json.loads(_cli("check", "--device", "pvc", "--json", str(path)).stdout)
        assert [w.removeprefix(f"{path}: ") for w in check["warnings"]] == named, check


def test_a_static_library_judges_each_members_slots_apart(tmp_path: Path, scanner: str) -> None:
    """Members of one archive share the walk's memo: a damaged slot 0 in one member must not make
    another member's intact slot 0 count as damaged (its SPIR-V claim was dropped)."""
    import shutil

    from _inspect_util import require, run

    require("gcc", "ar")
    spv = spirv(tmp_path)
    fat = zstd_frame(tmp_path, ocloc_fat(spv, "pvc,tgllp", tmp_path / "fat").read_bytes(), "fat")
    good = zstd_frame(tmp_path, spv.read_bytes(), "good")
    # members: two gcc-built shared objects (a walk reads any ELF member as a host binary)
    members = [str(host_library(tmp_path, [("spir64", blob, len(blob))], name=name)) for name, blob in (("a", fat), ("b", good))]
    lib = tmp_path / "libboth.a"
    run([shutil.which("ar") or "ar", "rcs", str(lib), *members])
    (fr,) = inspect(lib).files
    named = [w for w in fr.warnings if " is damaged: " in w]
    assert len(named) == 1 and named[0].startswith("liba.so: image 0 (spir64 in ") and "misplaced" in named[0], fr.warnings
    assert fr.ir == ["spirv"], fr  # libb.so's intact SPIR-V slot


def test_what_the_default_mode_reads_of_a_frame_that_declares_no_size_or_a_large_one(tmp_path: Path, scanner: str) -> None:
    """The documented bound (docs/reliability.md §6): a frame declaring at most 128 KiB, or of one
    block, is decompressed whole (checksum verified); of any other only the first block is read,
    enough to name a fat binary in the SPIR-V slot, and its checksum is left to --deep."""
    spv = spirv(tmp_path)
    fat = ocloc_fat(spv, "pvc,tgllp", tmp_path / "fat").read_bytes()
    nosize = zstd_frame(tmp_path, fat, "nosize", "--no-content-size")
    big = zstd_frame(tmp_path, spv.read_bytes() * 400, "big")  # several 128 KiB blocks
    assert len(spv.read_bytes()) * 400 > 3 * (128 << 10)
    big_bad = _flip_checksum(big)
    so = host_library(tmp_path, [("spir64", b, len(b)) for b in (nosize, big_bad)])
    (fast,) = inspect(so).files
    (w,) = fast.warnings
    assert w.startswith("image 0 (spir64 in ") and "holds ar where spirv belongs" in w, fast.warnings
    (deep,) = inspect(so, deep=True).files
    assert [w[:8] for w in deep.warnings] == ["image 0 ", "image 1 "] and "checksum" in deep.warnings[1], deep.warnings
