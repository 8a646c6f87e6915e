"""Real CMake + ninja builds with aotwheel_add_device_code: this repository's aotwheel._kernels,
and a three-line downstream project. Checked with pyelftools, GNU ar, ocloc disasm + iga64,
`ocloc ids` and .ninja_log, never with aotwheel's own readers."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import (
    REPO,
    ar_extract,
    ar_members,
    build_env,
    compile_spirv,
    disassemble,
    embedded_images,
    logged_runs,
    ocloc_ip,
    ocloc_logger,
    other_pythons,
    planned_ocloc_edges,
    require,
    run,
    tgtsym_names,
)
from conftest import CLANG, LLVM_SPIRV, ocloc_formats

pytestmark = pytest.mark.usefixtures("builds")

TOOLS = ("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV, "ar")
# In the order CMakeLists.txt lists them (the embedding order).
SOURCES = [REPO / p for p in re.findall(r"^\s+(csrc/kernels/[\w.-]+\.cl)\s*$", (REPO / "CMakeLists.txt").read_text(), re.M)]
# `ocloc disasm` + iga64 platform per device (iga64's own platform names).
IGA = {"pvc": "xehpc", "acm-g10": "xehpg"}


def _kernels_in(source: Path, work: Path) -> list[str]:
    """Kernel names of a source, from llvm-spirv's text form (independent of aotwheel)."""
    spv = work / (source.stem + ".ref.spv")
    compile_spirv(source, spv)
    txt = work / (source.stem + ".spt")
    run([LLVM_SPIRV, "-to-text", str(spv), "-o", str(txt)])
    return re.findall(r'^\d+ EntryPoint \d+ \d+ "([^"]+)"', txt.read_text(), re.M)


def _configure_build(src: Path, build: Path, env: dict[str, str], *defs: str, jobs: int = 2,
                     python: str = sys.executable) -> None:
    run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(build), f"-DPython_EXECUTABLE={python}", *defs],
        env=env)
    run(["ninja", "-C", str(build), f"-j{jobs}"], env=env)


@pytest.fixture(scope="module")
def repo_build(tmp_path_factory):
    """The repository's own extension, devlist pvc,ats-m150, built twice: cold and warm cache.

    The cold build compresses its images (COMPRESS ON, aotwheel's default); the warm one, with
    another Python (pyenv's have no zstandard, which COMPRESS ON needs), passes USE_AOT_COMPRESS=OFF:
    its plain images must equal the cold build's, decompressed."""
    require(*TOOLS)
    root = tmp_path_factory.mktemp("repo")
    wrapper, log = ocloc_logger(root / "bin")
    env = build_env(root / "cache", AOTWHEEL_OCLOC=str(wrapper))
    _configure_build(REPO, root / "b1", env, "-DUSE_AOT_DEVLIST=pvc,ats-m150")
    runs_cold = [r for r in logged_runs(log, "compile") if " -file " in f" {r} "]
    all_cold = log.read_text().splitlines()
    # A fresh build dir, same kernels and devlist, another Python when one is installed: no ocloc at all.
    other = (other_pythons() or [sys.executable])[0]
    _configure_build(REPO, root / "b2", env, "-DUSE_AOT_DEVLIST=pvc,ats-m150", "-DUSE_AOT_COMPRESS=OFF", python=other)
    all_warm = log.read_text().splitlines()[len(all_cold):]
    so1 = next((root / "b1").glob("_kernels*.so"))
    so2 = next((root / "b2").glob("_kernels*.so"))
    return dict(root=root, so=so1, so_warm=so2, runs_cold=runs_cold, runs_warm=all_warm, env=env, other=other,
                manifest=root / "b1" / "aotwheel" / "kernels" / "_aot_manifest.json")


def test_each_source_and_device_compiled_exactly_once(repo_build):
    # One ocloc run per (source, group of devices); each (source, device) in exactly one of them.
    runs = repo_build["runs_cold"]
    planned = planned_ocloc_edges(repo_build["root"] / "b1" / "aotwheel" / "kernels")
    assert len(runs) == len(planned) and len(SOURCES) <= len(runs) <= len(SOURCES) * 2
    pairs = [(re.search(r"-file \S*/(\w+)\.spv", r).group(1), d) for r in runs
             for d in re.search(r"-device (\S+)", r).group(1).split(",")]
    assert sorted(pairs) == sorted((s.stem, d) for s in SOURCES for d in ("pvc", "acm-g10"))


def test_fresh_build_dir_with_warm_cache_runs_no_ocloc(repo_build):
    assert repo_build["runs_warm"] == []
    assert repo_build["so_warm"].name == "_kernels.abi3.so"  # built for repo_build["other"]
    events = [e.split(" ") for e in (repo_build["root"] / "cache" / "v2" / "events.log").read_text().splitlines()]
    # device images (the SPIR-V step's objects have device spirv*): every one a hit
    assert sum(e[0] == "hit" and not e[2].startswith("spirv") for e in events) == len(SOURCES) * 2
    # and the fresh build dir's SPIR-V steps were local hits too (no clang)
    assert sum(e[0] == "spirv-hit" for e in events) == len(SOURCES)
    a = [i.image for i in embedded_images(repo_build["so"])]  # COMPRESS ON (default): zstandard decompresses
    b = [i.data for i in embedded_images(repo_build["so_warm"])]  # USE_AOT_COMPRESS=OFF: as ocloc/llvm-spirv wrote them
    assert a == b


def test_sections_and_tgtimg_table(repo_build):
    require("readelf")
    sections = run(["readelf", "-S", "-W", str(repo_build["so"])]).stdout
    for name in (".tgtimg", ".tgtsym", "__CLANG_OFFLOAD_BUNDLE__sycl-spir64_gen", "__CLANG_OFFLOAD_BUNDLE__sycl-spir64 "):
        assert name in sections
    images = embedded_images(repo_build["so"])
    assert [i.triple for i in images] == ["spir64_gen"] * len(SOURCES) + ["spir64"] * len(SOURCES)


def test_fat_binaries_hold_each_device_and_generic_ir(repo_build, tmp_path):
    expected = [f"64.{ocloc_ip('pvc')}", f"64.{ocloc_ip('ats-m150')}", "generic_ir"]
    assert expected[:2] == ["64.12.60.7", "64.12.55.8"]  # docs/formats.md §2
    for n, img in enumerate(i for i in embedded_images(repo_build["so"]) if i.triple == "spir64_gen"):
        path = tmp_path / f"fat{n}.ar"
        path.write_bytes(img.image)
        members = ar_members(path)
        # pad_N members (as many as the members' sizes need: zebins have any size) align each member's data
        assert [m for m in members if not m.startswith("pad_")] == expected
        assert [m for m in members if m.startswith("pad_")] == [f"pad_{i}" for i in range(len(members) - len(expected))]
        assert members[0] == "pad_0"


def test_native_images_are_real_device_code(repo_build, tmp_path):
    require("iga64")
    fats = [i for i in embedded_images(repo_build["so"]) if i.triple == "spir64_gen"]
    for source, img in zip(SOURCES, fats):
        kernels = _kernels_in(source, tmp_path)
        fat = tmp_path / f"{source.stem}.ar"
        fat.write_bytes(img.image)
        for device, platform in IGA.items():
            member = tmp_path / f"{source.stem}.{device}.bin"
            ar_extract(fat, f"64.{ocloc_ip(device)}", member)
            isa = disassemble(member, device, platform, tmp_path)
            assert sorted(isa) == sorted(kernels)
            for text in isa.values():
                assert re.search(r"^\s*(\(W\)\s+)?send", text, re.M), "no send instruction in the ISA"


def test_spirv_images_equal_an_independent_compile(repo_build, tmp_path):
    spirvs = [i.image for i in embedded_images(repo_build["so"]) if i.triple == "spir64"]
    refs = [compile_spirv(s, tmp_path / (s.stem + ".spv")) for s in SOURCES]
    assert spirvs == refs
    assert all(s[:4] == bytes.fromhex("03022307") for s in spirvs)


def test_tgtsym_names_every_kernel_per_triple(repo_build, tmp_path):
    kernels = [k for s in SOURCES for k in _kernels_in(s, tmp_path)]
    assert tgtsym_names(repo_build["so"]) == [f"sycl-spir64_gen-unknown-unknown.{k}" for k in kernels] + [
        f"sycl-spir64-unknown-unknown.{k}" for k in kernels]


def test_extension_module_returns_the_embedded_images(repo_build):
    code = (
        "import json, sys, _kernels as k\n"
        "json.dump({'images': [[t, s, b.hex()] for t, s, b in k.images()], 'names': k.kernel_names(),\n"
        "           'fat0': k.fatbinary().hex(), 'spv1': k.spirv(1).hex()}, sys.stdout)\n"
    )
    out = json.loads(run([sys.executable, "-c", code], cwd=repo_build["so"].parent).stdout)
    images = embedded_images(repo_build["so"])
    assert [(t, bytes.fromhex(b)) for t, _, b in out["images"]] == [(i.triple, i.data) for i in images]
    assert [s for _, s, _ in out["images"]] == [s.name for s in SOURCES] * 2
    assert bytes.fromhex(out["fat0"]) == images[0].data
    assert bytes.fromhex(out["spv1"]) == images[len(SOURCES) + 1].data
    assert out["names"] == [n.split(".", 1)[1] for n in tgtsym_names(repo_build["so"])][: len(out["names"])]
    bad = subprocess.run([sys.executable, "-c", "import _kernels as k; k.fatbinary(99)"], cwd=repo_build["so"].parent,
                         capture_output=True, text=True)
    assert "LookupError" in bad.stderr


def test_manifest_reports_devlist_toolchain_and_sizes(repo_build, tmp_path):
    m = json.loads(repo_build["manifest"].read_text())
    assert [(t["name"], t["ip"]) for t in m["devlist"]["targets"]] == [("pvc", ocloc_ip("pvc")), ("acm-g10", ocloc_ip("ats-m150"))]
    assert m["devlist"]["jit_fallback"] is True
    clang_v = re.search(r"version (\d+\.\d+\.\d+)", run([CLANG, "--version"]).stdout).group(1)
    assert m["toolchain"]["clang_version"] == clang_v
    run(["ocloc", "query", "OCL_DRIVER_VERSION"], cwd=tmp_path)  # writes ./OCL_DRIVER_VERSION
    assert m["toolchain"]["ocloc_version"] == (tmp_path / "OCL_DRIVER_VERSION").read_text().strip(" \0\n")
    images = embedded_images(repo_build["so"])
    # size/sha256: the image's own; compression: the frame embedded (COMPRESS ON, the default)
    assert [(i["triple"], i["size"]) for i in m["images"]] == [(i.triple, len(i.image)) for i in images]
    assert [i["compression"]["size"] for i in m["images"]] == [len(i.data) for i in images]


def test_no_op_rebuild_does_nothing(repo_build):
    out = run(["ninja", "-C", str(repo_build["root"] / "b1"), "-n", "-d", "explain"], env=repo_build["env"])
    assert "no work to do" in out.stdout


# ---- a downstream project: three lines of CMake --------------------------------------------------

DOWNSTREAM = """
cmake_minimum_required(VERSION 3.21)
project(downstream LANGUAGES C)
add_library(myext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
aotwheel_add_device_code(myext SOURCES {sources} DEVLIST DEVS NAME dk)
"""
EXT_C = '#include "dk_aot.h"\nunsigned long count(void) { return aotwheel_dk_image_count; }\n'


def _downstream(root: Path, sources: list[Path]) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(DOWNSTREAM.format(sources=" ".join(str(s) for s in sources)))
    (src / "ext.c").write_text(EXT_C)
    return src


def _ocloc_edges(build: Path) -> list[tuple[int, int, list[str]]]:
    """The ocloc edges the plans list (``plan.json``: each edge's native images), with the start and
    end .ninja_log gives their outputs. (Merging .ninja_log rows by start and end instead merged two
    edges of one source that ran side by side and ended in the same millisecond, seen on sid.)"""
    edge_of: dict[str, str] = {}
    for plan in build.rglob("plan.json"):
        for e in json.loads(plan.read_text())["edges"]:
            if e["step"] == "ocloc":
                edge_of.update({Path(n["output"]).name: f"{plan}:{e['id']}" for n in e["data"]["natives"]})
    edges: dict[str, tuple[int, int, list[str]]] = {}
    for start, end, name in _ninja_log(build):
        if name in edge_of:
            row = edges.setdefault(edge_of[name], (start, end, []))
            assert (row[0], row[1]) == (start, end), f"{name}: its edge ran at {row[:2]}, this output at {(start, end)}"
            row[2].append(name)
    return sorted(edges.values())


def _ninja_log(build: Path) -> list[tuple[int, int, str]]:
    rows = []
    for line in (build / ".ninja_log").read_text().splitlines():
        if line.startswith("#"):
            continue
        start, end, _mtime, output = line.split("\t")[:4]
        rows.append((int(start), int(end), Path(output).name))
    # CMake gives ninja both a relative and an absolute name for one custom-command output.
    return sorted(set(rows))


def test_downstream_four_devices_run_two_ocloc_jobs_at_once_with_j2(tmp_path):
    require(*TOOLS)
    src = _downstream(tmp_path, SOURCES[:2])
    # Two groups of two devices per source, whatever the core count of this machine.
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc,acm-g10,acm-g11,tgllp", AOTWHEEL_OCLOC_GROUPS="2")
    _configure_build(src, tmp_path / "b", env, f"-Daotwheel_DIR={REPO / 'cmake'}", jobs=2)
    ocloc_edges = _ocloc_edges(tmp_path / "b")
    assert len(ocloc_edges) == 2 * 2 and all(len(names) == 2 for _, _, names in ocloc_edges)
    assert sorted(n for _, _, names in ocloc_edges for n in names) == sorted(
        f"{s.stem}.{d}.bin" for s in SOURCES[:2] for d in ("pvc", "acm-g10", "acm-g11", "tgllp"))
    overlaps = [(a, b) for i, a in enumerate(ocloc_edges) for b in ocloc_edges[i + 1 :] if a[0] < b[1] and b[0] < a[1]]
    assert overlaps, f"no two ocloc edges overlapped: {ocloc_edges}"
    # Never more than two at once with -j2.
    for t in {s for s, _, _ in ocloc_edges}:
        assert sum(s <= t < e for s, e, _ in ocloc_edges) <= 2
    images = embedded_images(next((tmp_path / "b").glob("libmyext*.so")))
    fat = tmp_path / "fat.ar"
    fat.write_bytes(images[0].image)
    ips = [ocloc_ip(d) for d in ("pvc", "acm-g10", "acm-g11", "tgllp")]
    assert [m for m in ar_members(fat) if not m.startswith("pad_")] == [f"64.{ip}" for ip in ips] + ["generic_ir"]


def test_downstream_devlist_none_embeds_spirv_only(tmp_path):
    require(*TOOLS)
    src = _downstream(tmp_path, SOURCES[:1])
    wrapper, log = ocloc_logger(tmp_path / "bin")
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="none", AOTWHEEL_OCLOC=str(wrapper))
    _configure_build(src, tmp_path / "b", env, f"-Daotwheel_DIR={REPO / 'cmake'}")
    assert not log.exists()  # no ocloc at all, not even a version query
    so = next((tmp_path / "b").glob("libmyext*.so"))
    assert [i.triple for i in embedded_images(so)] == ["spir64"]
    assert "sycl-spir64_gen" not in run(["readelf", "-S", "-W", str(so)]).stdout


@pytest.mark.parametrize("how", ["env", "argument"])
def test_downstream_jit_fallback_off_has_no_spirv(tmp_path, how):
    require(*TOOLS)
    src = _downstream(tmp_path, SOURCES[:1])
    if how == "argument":  # JIT_FALLBACK OFF on the call overrides the resolved devlist
        cml = src / "CMakeLists.txt"
        cml.write_text(cml.read_text().replace("DEVLIST DEVS", "DEVLIST DEVS JIT_FALLBACK OFF"))
    extra = {"USE_AOT_JIT_FALLBACK": "OFF"} if how == "env" else {}
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc", **extra)
    _configure_build(src, tmp_path / "b", env, f"-Daotwheel_DIR={REPO / 'cmake'}")
    manifest = json.loads((tmp_path / "b" / "aotwheel" / "dk" / "_aot_manifest.json").read_text())
    assert manifest["devlist"]["jit_fallback"] is False
    images = embedded_images(next((tmp_path / "b").glob("libmyext*.so")))
    assert [i.triple for i in images] == ["spir64_gen"]
    fat = tmp_path / "fat.ar"
    fat.write_bytes(images[0].image)
    assert ar_members(fat) == ["pad_0", f"64.{ocloc_ip('pvc')}"]


def _elf_kind(image: bytes) -> str:
    """zebin (e_machine 205) or legacy (e_type 0xFF04), from the ELF header (docs/formats.md §3)."""
    e_type, e_machine = int.from_bytes(image[16:18], "little"), int.from_bytes(image[18:20], "little")
    return "zebin" if e_machine == 205 else "legacy" if e_type == 0xFF04 else f"e_type {e_type:#x}"


@pytest.mark.parametrize("how", ["default", "env", "cmake"])
def test_downstream_images_are_zebin_unless_legacy_is_asked_for(tmp_path, how):
    require(*TOOLS)
    src = _downstream(tmp_path, SOURCES[:1])
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc", **({"USE_AOT_IMAGE_FORMAT": "legacy"} if how == "env" else {}))
    defs = [f"-Daotwheel_DIR={REPO / 'cmake'}"] + (["-DUSE_AOT_IMAGE_FORMAT=legacy"] if how == "cmake" else [])
    if how != "default" and "patchtokens" not in ocloc_formats():  # ocloc 26.x: configure stops with one message
        proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"), f"-DPython_EXECUTABLE={sys.executable}", *defs],
                              env=env, capture_output=True, text=True)
        assert proc.returncode != 0
        m = re.search(r"CMake Error at .*?:\n\s+(.*?)\n\n", proc.stderr, re.S)
        assert m, proc.stderr
        message = " ".join(m.group(1).split())
        assert "writes zebin images only" in message and "USE_AOT_IMAGE_FORMAT" in message, message
        return
    _configure_build(src, tmp_path / "b", env, *defs)
    (fat_image, *_) = embedded_images(next((tmp_path / "b").glob("libmyext*.so")))
    fat = tmp_path / "fat.ar"
    fat.write_bytes(fat_image.image)
    member = ar_extract(fat, f"64.{ocloc_ip('pvc')}", tmp_path / "pvc.bin")
    assert _elf_kind(member) == ("zebin" if how == "default" else "legacy")


def _configure_fails(tmp_path: Path, **env_extra: str) -> str:
    src = _downstream(tmp_path, SOURCES[:1])
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc", **env_extra)
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"),
                           f"-Daotwheel_DIR={REPO / 'cmake'}", f"-DPython_EXECUTABLE={sys.executable}"],
                          env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    m = re.search(r"CMake Error at .*?:\n\s+(.*?)\n\n", proc.stderr, re.S)
    assert m, proc.stderr
    return " ".join(m.group(1).split())


def test_missing_ocloc_stops_configure_naming_the_package(tmp_path):
    require("cmake", "ninja", "cc")
    msg = _configure_fails(tmp_path, AOTWHEEL_OCLOC=str(tmp_path / "nowhere" / "ocloc"))
    assert msg.startswith("aotwheel_add_device_code:") and "ocloc" in msg and "apt-get install intel-opencl-icd" in msg


def test_missing_clang_stops_configure_naming_the_package(tmp_path):
    require("cmake", "ninja", "cc")
    msg = _configure_fails(tmp_path, AOTWHEEL_CLANG=str(tmp_path / "nowhere" / CLANG))
    assert msg.startswith("aotwheel_add_device_code:") and "clang" in msg and "apt-get install clang-15" in msg


def test_unsupported_device_for_this_ocloc_stops_configure(tmp_path):
    require("cmake", "ninja", "cc", "ocloc")
    if subprocess.run(["ocloc", "ids", "bmg-g21"], capture_output=True).returncode == 0:
        pytest.skip("this ocloc knows bmg-g21")
    src = _downstream(tmp_path, SOURCES[:1])
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc,bmg-g21")
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"),
                           f"-Daotwheel_DIR={REPO / 'cmake'}", f"-DPython_EXECUTABLE={sys.executable}"],
                          env=env, capture_output=True, text=True)
    msg = " ".join(proc.stderr.split())
    # docs/formats.md §10: Battlemage needs ocloc 24.31; leaving it out keeps the device on SPIR-V JIT.
    assert proc.returncode != 0 and "cannot build bmg-g21 (20.1.0; first built by ocloc 24.31)" in msg
    assert "intel-opencl-icd is 22.43" in msg and "JIT-compiled from the embedded SPIR-V" in msg and "pvc" not in msg.split("cannot build")[1]


def test_discover_names_the_missing_tool_from_path(tmp_path, monkeypatch):
    from aotwheel.backends.intel.buildsteps.toolchain import discover
    from aotwheel.buildsteps.cache import DeviceCodeCache
    from aotwheel.errors import ToolchainError

    require(CLANG, LLVM_SPIRV, "ocloc")
    only_clang = tmp_path / "a"
    only_clang.mkdir()
    for t in (CLANG, LLVM_SPIRV):
        (only_clang / t).symlink_to(shutil.which(t))
    monkeypatch.delenv("AOTWHEEL_OCLOC", raising=False)
    monkeypatch.delenv("AOTWHEEL_CLANG", raising=False)
    monkeypatch.delenv("AOTWHEEL_LLVM_SPIRV", raising=False)
    monkeypatch.setenv("PATH", str(only_clang))
    cache = DeviceCodeCache(tmp_path / "cache")
    assert discover([], cache).ocloc is None  # SPIR-V only needs no ocloc
    with pytest.raises(ToolchainError, match=r"^Missing ocloc .*apt-get install intel-opencl-icd"):
        discover(["pvc"], cache)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / CLANG).symlink_to(shutil.which(CLANG))
    monkeypatch.setenv("PATH", str(tmp_path / "b"))
    with pytest.raises(ToolchainError, match=rf"^Missing {LLVM_SPIRV} .*apt-get install {LLVM_SPIRV}"):
        discover([], cache)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(ToolchainError, match=r"^Missing clang .*apt-get install clang-15"):
        discover([], cache)



def test_clang_and_llvm_spirv_versions_are_asked_once_per_binary(tmp_path, monkeypatch):
    # Configure asks `--version` once per binary (path, size, mtime), as it does ocloc's facts.
    import os

    from aotwheel.backends.intel.buildsteps.toolchain import discover
    from aotwheel.buildsteps.cache import DeviceCodeCache

    log = tmp_path / "runs.log"

    def tool(name: str, version: str, mtime: int) -> Path:
        path = tmp_path / "bin" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"#!/bin/sh\necho {name} >> '{log}'\necho '{name} version {version}'\n")
        path.chmod(0o755)
        os.utime(path, (mtime, mtime))
        return path

    def runs() -> list[str]:
        return log.read_text().split() if log.exists() else []

    both = [CLANG, LLVM_SPIRV]  # asked at the same time: in either order

    monkeypatch.setenv("AOTWHEEL_CLANG", str(tool(CLANG, "15.0.7", 1_000_000)))
    monkeypatch.setenv("AOTWHEEL_LLVM_SPIRV", str(tool(LLVM_SPIRV, "15.0.0", 1_000_000)))
    cache = DeviceCodeCache(tmp_path / "cache")
    assert discover([], cache).spirv.clang_version == "15.0.7"
    assert sorted(runs()) == both
    spirv = discover([], cache).spirv
    assert (spirv.clang_version, spirv.llvm_spirv_version) == ("15.0.7", "15.0.0")
    assert sorted(runs()) == both  # both answers from the cache
    tool(CLANG, "15.0.8", 1_000_000)  # same size and mtime: taken for the same binary
    assert discover([], cache).spirv.clang_version == "15.0.7" and len(runs()) == 2
    tool(CLANG, "15.0.8", 1_000_001)  # a changed binary (mtime): asked again, llvm-spirv not
    assert discover([], cache).spirv.clang_version == "15.0.8"
    tool(CLANG, "15.0.10", 1_000_001)  # ... (size)
    assert discover([], cache).spirv.clang_version == "15.0.10"
    assert sorted(runs()[:2]) == both and runs()[2:] == [CLANG, CLANG]
    discover([], DeviceCodeCache(None))  # no cache: asked every time
    assert sorted(runs()[4:]) == both


def test_downstream_header_dependency_clang_options_and_cpp_for_opencl(tmp_path):
    require(*TOOLS)
    src = tmp_path / "src"
    (src / "inc").mkdir(parents=True)
    (src / "inc" / "scale.h").write_text("#define SCALE 2.0f\n")
    (src / "k.clcpp").write_text(
        '#include "scale.h"\ntemplate <typename T> T scaled(T x) { return x * SCALE; }\n'
        "__kernel void scale_cpp(__global float *x) { x[get_global_id(0)] = scaled(x[get_global_id(0)]); }\n")
    (src / "ext.c").write_text(EXT_C)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(ds LANGUAGES C)\nadd_library(myext MODULE ext.c)\n"
        "find_package(aotwheel CONFIG REQUIRED)\n"
        "aotwheel_add_device_code(myext SOURCES k.clcpp DEVICES pvc NAME dk CLANG_OPTIONS -I${CMAKE_CURRENT_SOURCE_DIR}/inc)\n")
    env = build_env(tmp_path / "cache")
    _configure_build(src, tmp_path / "b", env, f"-Daotwheel_DIR={REPO / 'cmake'}")
    so = next((tmp_path / "b").glob("libmyext*.so"))
    assert tgtsym_names(so) == ["sycl-spir64_gen-unknown-unknown.scale_cpp", "sycl-spir64-unknown-unknown.scale_cpp"]
    assert "no work to do" in run(["ninja", "-C", str(tmp_path / "b"), "-n"], env=env).stdout
    (src / "inc" / "scale.h").write_text("#define SCALE 3.0f\n")
    plan = run(["ninja", "-C", str(tmp_path / "b"), "-n"], env=env).stdout
    assert "k.clcpp -> SPIR-V" in plan  # the header is tracked through clang's depfile


def test_downstream_cxx_only_project_reads_its_images_through_the_generated_table(tmp_path):
    import ctypes

    require(*TOOLS, "c++")
    src = tmp_path / "src"
    src.mkdir()
    (src / "ext.cpp").write_text(
        '#include "dk_aot.h"\n'
        'extern "C" unsigned long count() { return aotwheel_dk_image_count; }\n'
        'extern "C" const unsigned char *image(unsigned long i, unsigned long *n) {\n'
        "  *n = (unsigned long)(aotwheel_dk_images[i].end - aotwheel_dk_images[i].begin);\n"
        "  return aotwheel_dk_images[i].begin;\n}\n")
    (src / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION 3.21)\nproject(ds LANGUAGES CXX)\nadd_library(myext MODULE ext.cpp)\n"
        "find_package(aotwheel CONFIG REQUIRED)\n"
        f"aotwheel_add_device_code(myext SOURCES {SOURCES[0]} {SOURCES[1]} DEVICES tgllp NAME dk)\n")
    env = build_env(tmp_path / "cache")
    _configure_build(src, tmp_path / "b", env, f"-Daotwheel_DIR={REPO / 'cmake'}")
    so = next((tmp_path / "b").glob("libmyext*.so"))
    lib = ctypes.CDLL(str(so))
    lib.count.restype = ctypes.c_ulong
    lib.image.restype = ctypes.POINTER(ctypes.c_ubyte)
    lib.image.argtypes = [ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong)]
    expected = embedded_images(so)
    assert lib.count() == len(expected) == 4
    for i, img in enumerate(expected):
        n = ctypes.c_ulong()
        ptr = lib.image(i, ctypes.byref(n))
        assert ctypes.string_at(ptr, n.value) == img.data


def test_duplicate_source_names_stop_configure(tmp_path):
    require("cmake", "ninja", "cc")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "k.cl").write_text("__kernel void a(void) {}\n")
    (tmp_path / "k.cl").write_text("__kernel void b(void) {}\n")
    src = _downstream(tmp_path / "p", [tmp_path / "k.cl", tmp_path / "a" / "k.cl"])
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"),
                           f"-Daotwheel_DIR={REPO / 'cmake'}", f"-DPython_EXECUTABLE={sys.executable}"],
                          env=build_env(tmp_path / "cache", USE_AOT_DEVLIST="none"), capture_output=True, text=True)
    assert proc.returncode != 0 and "share the name 'k'" in " ".join(proc.stderr.split())


def test_ocloc_job_pool_limits_concurrent_ocloc_edges(tmp_path):
    require(*TOOLS)
    src = _downstream(tmp_path, SOURCES[:2])
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc,acm-g10,acm-g11", AOTWHEEL_OCLOC_JOBS="1")
    _configure_build(src, tmp_path / "b", env, f"-Daotwheel_DIR={REPO / 'cmake'}", jobs=2)
    assert "pool aotwheel_ocloc\n  depth = 1" in (tmp_path / "b" / "CMakeFiles" / "rules.ninja").read_text()
    edges = _ocloc_edges(tmp_path / "b")
    planned = planned_ocloc_edges(tmp_path / "b" / "aotwheel" / "dk")
    assert len(edges) == len(planned) >= 2  # default: the configure-time plan, at least one edge per source
    assert sorted(n for _, _, names in edges for n in names) == sorted(
        f"{s.stem}.{d}.bin" for s in SOURCES[:2] for d in ("pvc", "acm-g10", "acm-g11"))
    assert all(not (a[0] < b[1] and b[0] < a[1]) for i, a in enumerate(edges) for b in edges[i + 1 :])
