"""Issue 26: build like IPEX and torch-xpu-ops by default, with real ocloc 22.43.

- The field's ocloc options (IPEX cmake/gpu/SYCL.cmake, torch-xpu-ops cmake/BuildFlags.cmake;
  docs/formats.md quotes the lines) are passed by `aotwheel compile` and by CMake's ocloc edges,
  so a kernel using ``double`` builds for ``pvc,ats-m150``: poisoned on acm-g10 (no fp64), the
  other kernels intact. Turned off, the fp64 failure names the option to add.
- The catalog's devices without fp64 are what ocloc itself refuses a ``double`` for.
- ``TORCH_XPU_ARCH_LIST`` is read after ``USE_AOT_DEVLIST``; an empty value counts as unset in
  every path (resolver CLI, CMake, aotwheel compile); configure says which variable it used.
- Every default list upstream ships resolves.

Expected values are written from ocloc's own runs and upstream's sources, never from aotwheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import PYTHONPATH, REPO, ar_extract, ar_members, build_env, compile_spirv, embedded_images, require, run
from conftest import CLANG, LLVM_SPIRV, ocloc_zebin_args

pytestmark = pytest.mark.usefixtures("builds")

# IPEX's one -options string (cmake/gpu/SYCL.cmake lines 154, 158, 161 at d0f992ff, in that order).
FIELD = "-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels -cl-intel-greater-than-4GB-buffer-required"
POISON = "-cl-poison-unsupported-fp64-kernels"
PVC_IP, ACM_G10_IP = "12.60.7", "12.55.8"  # `ocloc ids pvc`, `ocloc ids acm-g10` (docs/formats.md §2)

FP64_KERNEL = """
__kernel void add_double(__global double *a, __global const double *b) { size_t i = get_global_id(0); a[i] += b[i]; }
__kernel void add_float(__global float *a, __global const float *b) { size_t i = get_global_id(0); a[i] += b[i]; }
"""


@pytest.fixture(scope="module")
def fp64_spv(tmp_path_factory) -> Path:
    require(CLANG, LLVM_SPIRV, "ocloc")
    d = tmp_path_factory.mktemp("fp64")
    (d / "fp64.cl").write_text(FP64_KERNEL)
    compile_spirv(d / "fp64.cl", d / "fp64.spv")
    return d / "fp64.spv"


def _ocloc(spv: Path, device: str, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    out.mkdir(parents=True, exist_ok=True)
    extra = ["-options", " ".join(options)] if options else []
    return subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", "x",
                           "-out_dir", str(out), "-output_no_suffix", "-exclude_ir", *ocloc_zebin_args(), *extra],
                          capture_output=True, text=True)  # zebin, as aotwheel writes wherever ocloc offers it


def _written(out: Path) -> bytes:
    """The binary a single-device run wrote (ocloc 26 appends .bin despite -output_no_suffix)."""
    return next(p for p in (out / "x", out / "x.bin") if p.is_file()).read_bytes()


def _aotwheel(*args: str, cwd: Path, cache: Path, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = build_env(cache, PYTHONPATH=PYTHONPATH, **env_extra)
    for name in ("USE_AOT_DEVLIST", "TORCH_XPU_ARCH_LIST", "USE_AOT_FIELD_DEFAULTS"):
        if name not in env_extra:
            env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], cwd=cwd, env=env, capture_output=True, text=True)


# --- the catalog's fp64 fact, against ocloc ------------------------------------------------------


def test_catalog_no_fp64_is_what_ocloc_refuses_a_double_for(fp64_spv, tmp_path):
    from aotwheel.backends.intel.catalog import load_catalog
    from aotwheel.backends.intel.ocloc import find_ocloc

    cat, ocloc = load_catalog(), find_ocloc(None)
    known = [d for d in cat.devices if ocloc.supports((d.name, *d.aliases)) and d.shipping]
    assert len(known) >= 9  # 22.43 knows Gen12LP, DG1, DG2 and PVC
    for dev in known:
        proc = _ocloc(fp64_spv, dev.name, tmp_path / dev.name)
        refused = proc.returncode != 0 and "Double type is not supported" in proc.stdout + proc.stderr
        assert refused == (not cat.has_fp64(dev)), (dev.name, proc.returncode)
    assert {"acm-g10", "acm-g11", "acm-g12"} <= cat.no_fp64 and cat.has_fp64("pvc")
    assert cat.fp64_conv_emulation == {"acm-g10", "acm-g11", "acm-g12"}


def test_resolve_says_which_devices_lack_fp64(tmp_path):
    proc = _aotwheel("resolve", "pvc,ats-m150", cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    assert f"no fp64 (double): acm-g10: kernels using double are poisoned there ({POISON})" in proc.stdout
    data = json.loads(_aotwheel("resolve", "pvc,dg2", "--json", cwd=tmp_path, cache=tmp_path / "c").stdout)
    assert data["no_fp64"] == ["acm-g10"]  # dg2 = acm-g10, as ocloc builds it
    every = json.loads(_aotwheel("resolve", "pvc,xe-hpg", "--json", cwd=tmp_path, cache=tmp_path / "c").stdout)
    assert every["no_fp64"] == ["acm-g10", "acm-g11", "acm-g12"]
    assert data["field_defaults"]["ocloc_options"] == FIELD.split()
    assert data["field_defaults"]["sycl_compile_options"] == ["-fsycl-fp64-conv-emu"]
    off = _aotwheel("resolve", "ats-m150", "--no-field-defaults", cwd=tmp_path, cache=tmp_path / "c")
    assert f"a kernel using double fails to build for them; add {POISON}" in off.stdout


# --- aotwheel compile ------------------------------------------------------------------------------


def test_compile_fp64_kernel_for_ats_m150_poisons_it_there(fp64_spv, tmp_path):
    # ocloc alone: the plain build fails, the field's options build it and say what they removed.
    plain = _ocloc(fp64_spv, "acm-g10", tmp_path / "plain")
    assert plain.returncode != 0 and "Double type is not supported" in plain.stdout + plain.stderr
    ref = _ocloc(fp64_spv, "acm-g10", tmp_path / "ref", FIELD)
    assert ref.returncode == 0 and "Removing unsupported FP64 function: 'add_double'" in ref.stdout + ref.stderr

    out = tmp_path / "k.ar"
    proc = _aotwheel("compile", str(fp64_spv), "-d", "ats-m150", "-o", str(out), "--json", cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["options"] == FIELD
    members = [m for m in ar_members(out) if not m.startswith("pad_")]
    assert members == [f"64.{ACM_G10_IP}", "generic_ir"]
    assert ar_extract(out, f"64.{ACM_G10_IP}", tmp_path / "m") == _written(tmp_path / "ref")


def test_compile_fp64_kernel_for_the_default_list_and_user_options_add(fp64_spv, tmp_path):
    out = tmp_path / "k.ar"
    proc = _aotwheel("compile", str(fp64_spv), "-d", "pvc,ats-m150", "--options=-cl-mad-enable", "-o", str(out), "--json",
                     cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["options"] == f"{FIELD} -cl-mad-enable"
    for device, ip in (("pvc", PVC_IP), ("acm-g10", ACM_G10_IP)):
        ref = _ocloc(fp64_spv, device, tmp_path / f"ref-{device}", FIELD, "-cl-mad-enable")
        assert ref.returncode == 0, ref.stdout
        assert ar_extract(out, f"64.{ip}", tmp_path / device) == _written(tmp_path / f"ref-{device}")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_defaults_off_the_fp64_error_names_the_option(fp64_spv, tmp_path, how):
    out = tmp_path / "k.ar"
    args = ["--no-field-defaults"] if how == "flag" else []
    env = {"USE_AOT_FIELD_DEFAULTS": "OFF"} if how == "env" else {}
    proc = _aotwheel("compile", str(fp64_spv), "-d", "pvc,ats-m150", *args, "-o", str(out), cwd=tmp_path, cache=tmp_path / "c", **env)
    assert proc.returncode == 2 and not out.exists()
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("aotwheel: error: ocloc failed for -device acm-g10")
    assert f"the kernel uses double (fp64), which acm-g10 lacks: add {POISON} to the ocloc options" in line


# The fat binary at run time, by the rules: a CPU is not an Intel GPU, so the loader JITs the
# generic_ir (the SPIR-V, fp64 kernel intact) and both kernels compute the right numbers.
RUN_CHILD = r"""
import json, sys
import numpy as np, pyopencl as cl
from aotwheel.opencl import load_program
dev = next(d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU)
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
loaded = load_program(ctx, dev, sys.argv[1])
out = {"source": loaded.source}
for name, dtype in (("add_float", np.float32), ("add_double", np.float64)):
    a = np.arange(64, dtype=dtype); b = np.full(64, 0.5, dtype=dtype); want = a + b
    mf = cl.mem_flags
    da = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a); db = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    getattr(loaded.program, name)(q, (64,), None, da, db); cl.enqueue_copy(q, a, da); q.finish()
    out[name] = bool(np.array_equal(a, want))
print(json.dumps(out))
"""


def test_fp64_fat_binary_runs_both_kernels_on_the_cpu_runtime(fp64_spv, tmp_path):
    pytest.importorskip("pyopencl")
    pytest.importorskip("numpy")
    out = tmp_path / "k.ar"
    assert _aotwheel("compile", str(fp64_spv), "-d", "pvc,ats-m150", "-o", str(out), cwd=tmp_path, cache=tmp_path / "c").returncode == 0
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "AOTWHEEL_JIT_CACHE_DIR": "off"}
    proc = subprocess.run([sys.executable, "-c", RUN_CHILD, str(out)], capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0 and "no OpenCL" in proc.stderr + proc.stdout:
        pytest.skip("no OpenCL CPU runtime; source .venv/opencl-cpu.env")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == {"source": "jit", "add_float": True, "add_double": True}


# --- a CMake build of a package with an fp64 kernel ------------------------------------------------

PROJECT = """cmake_minimum_required(VERSION 3.21)
project(fp64pkg LANGUAGES C)
find_package(aotwheel CONFIG REQUIRED)
add_library(ext MODULE ext.c)
aotwheel_resolve_devlist(DEVS)
aotwheel_add_device_code(ext SOURCES {source} DEVLIST DEVS NAME fk {extra})
"""


def _cmake_project(root: Path, extra: str = "") -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    (src / "fp64.cl").write_text(FP64_KERNEL)
    (src / "CMakeLists.txt").write_text(PROJECT.format(source=src / "fp64.cl", extra=extra))
    (src / "ext.c").write_text('#include "fk_aot.h"\nunsigned long count(void) { return aotwheel_fk_image_count; }\n')
    return src


def _configure(src: Path, build: Path, env: dict[str, str], *defs: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(build), f"-DPython_EXECUTABLE={sys.executable}",
                           f"-Daotwheel_DIR={REPO / 'cmake'}", *defs], capture_output=True, text=True, env=env, timeout=300)


def test_cmake_build_of_an_fp64_kernel_for_pvc_ats_m150(fp64_spv, tmp_path):
    require("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV, "ar")
    src = _cmake_project(tmp_path)
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc,ats-m150")
    proc = _configure(src, tmp_path / "b", env)
    assert proc.returncode == 0, proc.stderr
    assert "aotwheel: device list 'pvc,ats-m150' from USE_AOT_DEVLIST (environment)" in proc.stdout
    run(["ninja", "-C", str(tmp_path / "b")], env=env)
    images = embedded_images(next((tmp_path / "b").glob("*ext*.so")))
    fat = tmp_path / "fat.ar"
    fat.write_bytes(next(i for i in images if i.triple == "spir64_gen").image)  # COMPRESS ON (default): via zstandard
    assert [m for m in ar_members(fat) if not m.startswith("pad_")] == [f"64.{PVC_IP}", f"64.{ACM_G10_IP}", "generic_ir"]
    # Each member is what ocloc writes with the field's options for that device (the SPIR-V is
    # the build's own, from clang-15 + llvm-spirv-15 like fp64_spv).
    spv = tmp_path / "b" / "aotwheel" / "fk" / "fp64.spv"
    for device, ip in (("pvc", PVC_IP), ("acm-g10", ACM_G10_IP)):
        ref = _ocloc(spv, device, tmp_path / f"ref-{device}", FIELD)
        assert ref.returncode == 0, ref.stdout
        assert ar_extract(fat, f"64.{ip}", tmp_path / f"m-{device}") == _written(tmp_path / f"ref-{device}")
    manifest = json.loads((tmp_path / "b" / "aotwheel" / "fk" / "_aot_manifest.json").read_text())
    assert manifest["ocloc_options"] == FIELD


def test_cmake_field_defaults_off_fails_on_acm_g10_naming_the_option(fp64_spv, tmp_path):
    require("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV, "ar")
    src = _cmake_project(tmp_path, "FIELD_DEFAULTS OFF OPTIONS -cl-mad-enable")
    env = build_env(tmp_path / "cache", USE_AOT_DEVLIST="pvc,ats-m150")
    assert _configure(src, tmp_path / "b", env).returncode == 0
    built = subprocess.run(["ninja", "-C", str(tmp_path / "b")], capture_output=True, text=True, env=env, timeout=300)
    assert built.returncode != 0
    assert f"which acm-g10 lacks: add {POISON} to the ocloc options" in built.stdout + built.stderr
    # The user's OPTIONS alone reached ocloc: the same through the variable, for every target.
    src2 = _cmake_project(tmp_path / "two")
    proc = _configure(src2, tmp_path / "b2", env, "-DUSE_AOT_FIELD_DEFAULTS=OFF")
    assert proc.returncode == 0, proc.stderr
    built = subprocess.run(["ninja", "-C", str(tmp_path / "b2")], capture_output=True, text=True, env=env, timeout=300)
    assert built.returncode != 0 and f"add {POISON}" in built.stdout + built.stderr


# --- TORCH_XPU_ARCH_LIST and the empty value --------------------------------------------------------


@pytest.mark.parametrize(("env", "names", "source"), [
    ({"TORCH_XPU_ARCH_LIST": "pvc,bmg"}, "pvc,bmg-g21", "TORCH_XPU_ARCH_LIST (environment)"),
    ({"USE_AOT_DEVLIST": "", "TORCH_XPU_ARCH_LIST": "pvc,bmg"}, "pvc,bmg-g21", "TORCH_XPU_ARCH_LIST (environment)"),
    ({"USE_AOT_DEVLIST": "acm-g11", "TORCH_XPU_ARCH_LIST": "pvc,bmg"}, "acm-g11", "USE_AOT_DEVLIST (environment)"),
    ({"USE_AOT_DEVLIST": " ", "TORCH_XPU_ARCH_LIST": ""}, "pvc,acm-g10", "the default"),
    ({"TORCH_XPU_ARCH_LIST": "none"}, "", "TORCH_XPU_ARCH_LIST (environment)"),
])
def test_resolve_reads_torch_xpu_arch_list_after_use_aot_devlist(tmp_path, env, names, source):
    proc = _aotwheel("resolve", "--json", cwd=tmp_path, cache=tmp_path / "c", **env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert ",".join(t["name"] for t in data["targets"]) == names and data["source"] == source
    # An empty command-line value is unset too, for resolve and for compile.
    empty = _aotwheel("resolve", "", "--format", "names", cwd=tmp_path, cache=tmp_path / "c", **env)
    assert empty.returncode == 0 and empty.stdout.strip() == names


def test_compile_empty_devlist_is_the_chain(fp64_spv, tmp_path):
    proc = _aotwheel("compile", str(fp64_spv), "-d", "", "--json", "-o", str(tmp_path / "k.ar"), cwd=tmp_path,
                     cache=tmp_path / "c", TORCH_XPU_ARCH_LIST="pvc")
    assert proc.returncode == 0, proc.stderr
    assert [d["device"] for d in json.loads(proc.stdout)["devices"]] == ["pvc"]


RESOLVE_PROJECT = """cmake_minimum_required(VERSION 3.21)
project(t LANGUAGES NONE)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
aotwheel_resolve_devlist(AGAIN)
file(WRITE "${CMAKE_BINARY_DIR}/devs.txt" "${DEVS}|${DEVS_NO_FP64}|${DEVS_FIELD_OCLOC_OPTIONS}")
"""


@pytest.mark.parametrize(("env", "defs", "devs", "line"), [
    ({"TORCH_XPU_ARCH_LIST": "pvc,bmg"}, (), "pvc;bmg-g21", "'pvc,bmg' from TORCH_XPU_ARCH_LIST (environment)"),
    ({"TORCH_XPU_ARCH_LIST": "pvc,bmg"}, ("-DUSE_AOT_DEVLIST=",), "pvc;bmg-g21", "from TORCH_XPU_ARCH_LIST (environment)"),
    ({}, ("-DUSE_AOT_DEVLIST=",), "pvc;acm-g10", "'pvc,ats-m150' from the default"),
    ({"USE_AOT_DEVLIST": "acm-g11"}, ("-DTORCH_XPU_ARCH_LIST=pvc",), "acm-g11", "from USE_AOT_DEVLIST (environment)"),
    ({}, ("-DTORCH_XPU_ARCH_LIST=pvc", "-DUSE_AOT_DEVLIST="), "pvc", "'pvc' from TORCH_XPU_ARCH_LIST (CMake variable)"),
    ({"TORCH_XPU_ARCH_LIST": "pvc"}, ("-DUSE_AOT_DEVLIST=ats-m150",), "acm-g10", "from USE_AOT_DEVLIST (CMake variable)"),
])
def test_cmake_devlist_precedence_and_one_line_naming_the_variable(tmp_path, env, defs, devs, line):
    require("cmake", "ninja")
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(RESOLVE_PROJECT)
    full = {k: v for k, v in os.environ.items() if k not in ("USE_AOT_DEVLIST", "TORCH_XPU_ARCH_LIST", "USE_AOT_FIELD_DEFAULTS")}
    full.update(env)
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(tmp_path / "b"), f"-DPython_EXECUTABLE={sys.executable}",
                           f"-Daotwheel_DIR={REPO / 'cmake'}", *defs], capture_output=True, text=True, env=full, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got, no_fp64, options = (tmp_path / "b" / "devs.txt").read_text().split("|")
    assert got == devs
    assert no_fp64 == ";".join(d for d in devs.split(";") if d.startswith("acm-"))
    assert options == FIELD.replace(" ", ";")
    notes = [l for l in proc.stdout.splitlines() if "aotwheel: device list" in l]
    assert len(notes) == 1 and line in notes[0], notes  # two resolves, one line


# --- every default list upstream ships resolves ------------------------------------------------------
# (list, where): torch-xpu-ops cmake/BuildFlags.cmake on its release branches (Windows / Linux
# AOT_TARGETS), its SYCL-TLA lists, and SyclExtension's (torch.xpu.get_arch_list() without dg2*,
# pytorch torch/utils/cpp_extension.py:287 at 0011ec5c) for the 2.10 Linux build.
UPSTREAM_LISTS = [
    ("ats-m150,lnl-m,mtl-u,mtl-h", "torch-xpu-ops release/2.5 7e3d00ac BuildFlags.cmake:120 (Windows)"),
    ("pvc,xe-lpg,ats-m150", "torch-xpu-ops release/2.5 7e3d00ac BuildFlags.cmake:122 (Linux)"),
    ("ats-m150,mtl-u,mtl-h,xe2-lpg,xe2-hpg", "torch-xpu-ops release/2.6 fe4ac6a6 BuildFlags.cmake:125 (Windows)"),
    ("pvc,xe-lpg,ats-m150", "torch-xpu-ops release/2.6 fe4ac6a6 BuildFlags.cmake:127 (Linux)"),
    ("mtl,mtl-h,bmg,dg2,arl-h,lnl-m", "torch-xpu-ops release/2.7 3ee2bd2f :126, 2.8 3a9419c8 :126, 2.9 789f59d8 :129 (Windows)"),
    ("pvc,bmg,dg2,arl-h,mtl-h,lnl-m", "torch-xpu-ops release/2.7 3ee2bd2f :128, 2.8 3a9419c8 :128, 2.9 789f59d8 :131 (Linux)"),
    ("mtl,mtl-h,bmg,dg2,arl-h,lnl-m,ptl", "torch-xpu-ops release/2.10 60bb67ca BuildFlags.cmake:152 (Windows)"),
    ("pvc,bmg,dg2,arl-h,mtl-h,lnl-m,ptl-h,ptl-u", "torch-xpu-ops release/2.10 60bb67ca BuildFlags.cmake:154 (Linux)"),
    ("pvc,bmg", "torch-xpu-ops SYCL-TLA, release/2.10 60bb67ca :149, main ab84f925 :210"),
    ("cri", "torch-xpu-ops SYCL-TLA for TORCH_XPU_ARCH_LIST=cri, main ab84f925 BuildFlags.cmake:208"),
    ("pvc,bmg,arl-h,mtl-h,lnl-m,ptl-h,ptl-u", "SyclExtension default for torch 2.10 on Linux (dg2 dropped)"),
]


@pytest.mark.parametrize(("text", "where"), UPSTREAM_LISTS, ids=[w for _, w in UPSTREAM_LISTS])
def test_every_upstream_default_list_resolves(text, where):
    from aotwheel.backends.intel.devlist import IntelPart
    from aotwheel.devlist import resolve

    dl = resolve(text)
    assert dl.part_of(IntelPart).targets, where
    # every family name became at least one device, every device name itself
    assert {t.lower() for t in text.split(",")} <= {e.token.lower() for e in dl.expansions}, where
