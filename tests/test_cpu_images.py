"""Intel CPU images, for real on Intel's CPU OpenCL runtime (intel-opencl-rt from PyPI):

- a CPU AOT image (``spir64_x86_64``): the runtime's own program binary, from
  ``clGetProgramInfo(CL_PROGRAM_BINARIES)`` after building clang-15/llvm-spirv-15 SPIR-V (the same
  bytes ``opencl-aot`` and the SYCL runtime's persistent cache store; icpx is not obtainable);
- build options carried in a real image (bitsandbytes 0.50.2's spir64 images): each GPU-only one
  is refused by the CPU compiler, and the image's SPIR-V builds without them.
Builds run in child processes: a failed build must not take the test process down.
"""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from aotwheel.inspector import image_bytes, inspect

from _check_util import opencl_cpu_env
from _inspect_util import fetch, require, run, spirv

_BUILD = """
import json, sys
import pyopencl as cl
dev = [d for p in cl.get_platforms() for d in p.get_devices(cl.device_type.CPU)][0]
ctx = cl.Context([dev])
spv = open(sys.argv[1], "rb").read()
try:
    prg = cl.Program(ctx, spv).build(options=sys.argv[2])
except cl.Error as exc:
    print(json.dumps({"ok": False, "code": exc.code, "text": str(exc)}))
else:
    print(json.dumps({"ok": True, "kernels": prg.kernel_names}))
"""

_AOT = """
import json, sys
import pyopencl as cl
dev = [d for p in cl.get_platforms() for d in p.get_devices(cl.device_type.CPU)][0]
ctx = cl.Context([dev])
prg = cl.Program(ctx, open(sys.argv[1], "rb").read()).build()
open(sys.argv[2], "wb").write(prg.get_info(cl.program_info.BINARIES)[0])
again = cl.Program(ctx, [dev], [open(sys.argv[2], "rb").read()]).build()  # loads as a native binary
print(json.dumps({"kernels": sorted(again.kernel_names.split(";"))}))
"""


def _child(code: str, env, *args: str) -> dict:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cpu_env():
    return opencl_cpu_env()


@pytest.fixture(scope="module")
def cpu_aot(cpu_env, tmp_path_factory):
    work = tmp_path_factory.mktemp("cpuaot")
    spv = spirv(work)
    out = work / "k_cpu.bin"
    loaded = _child(_AOT, cpu_env, str(spv), str(out))
    return out, loaded["kernels"]


def test_cpu_aot_image_from_the_runtime_is_recognised(cpu_aot):
    path, kernels = cpu_aot
    require("readelf")
    header = run(["readelf", "-hSW", str(path)]).stdout
    # Independent reading: GNU readelf's view of the runtime's binary.
    assert re.search(r"Type:\s+Processor Specific: \(ff04\)", header)
    assert re.search(r"Machine:\s+Advanced Micro Devices X86-64", header)
    assert {".ocl.ir", ".ocl.meta", ".ocl.obj", ".ocl.ver"} <= set(re.findall(r"\]\s+(\.ocl\.\w+)", header))
    (fr,) = inspect(path).files
    assert fr.kind == "cpu-aot" and fr.warnings == [] and fr.ir == []
    (t,) = fr.native_targets
    assert (t.name, t.format, t.vendor, t.arch) == ("spir64_x86_64", "cpu-aot", "intel", "x86_64")
    assert t.rebuildable  # .ocl.ir holds LLVM bitcode (readelf: section present; magic checked by the reader)
    assert kernels == ["add", "mul", "neg"]  # the runtime loaded the binary back natively


def test_cpu_aot_image_inside_a_shared_object(cpu_aot, tmp_path):
    """The image embedded as icpx does (``__CLANG_OFFLOAD_BUNDLE__sycl-spir64_x86_64`` + .tgtimg)."""
    from _inspect_util import build_so

    path, _ = cpu_aot
    so = build_so(tmp_path, [("spir64_x86_64", path)], {"spir64_x86_64": ["add", "mul", "neg"]})
    (fr,) = inspect(so).files
    (img,) = fr.images
    assert (img.kind, img.triple) == ("cpu-aot", "spir64_x86_64")
    assert [(t.name, t.image) for t in fr.native_targets] == [("spir64_x86_64", 0)]


@pytest.fixture(scope="module")
def bnb_spirv(tmp_path_factory):
    whl = fetch("bitsandbytes", "0.50.2", "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
                "55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283")
    out = tmp_path_factory.mktemp("bnbspv")
    with zipfile.ZipFile(whl) as z:
        z.extract("bitsandbytes/libbitsandbytes_xpu2025.so", out)
    lib = out / "bitsandbytes" / "libbitsandbytes_xpu2025.so"
    (fr,) = inspect(lib).files
    images = [(img, image_bytes(lib, img)) for img in fr.images if img.content == "spirv"]
    assert images
    return lib, images, out


def test_image_options_are_read_from_the_descriptor(bnb_spirv):
    require("readelf")
    lib, images, _ = bnb_spirv
    import subprocess

    strings = subprocess.run(["readelf", "-p", ".rodata", str(lib)], capture_output=True, check=True).stdout.decode("latin-1")
    for img, _ in images:
        assert img.compile_options and img.compile_options in strings  # readelf's string dump holds the same string
        assert "-device pvc,xe-lpg,ats-m150" in img.compile_options


def test_gpu_only_options_fail_the_cpu_build_and_the_spirv_builds_without_them(bnb_spirv, cpu_env):
    from aotwheel.backends.intel.options import gpu_only_options, split_options

    _, images, work = bnb_spirv
    img, spv = min(images, key=lambda p: len(p[1]))  # the one that needs no SYCL device library
    path = work / "img.spv"
    path.write_bytes(spv)
    plain = _child(_BUILD, cpu_env, str(path), "")
    assert plain["ok"], plain
    flagged = gpu_only_options(img.compile_options)
    assert flagged and set(" ".join(flagged).split()) >= {"-device", "-options", "-cl-intel-enable-auto-large-GRF-mode"}
    whole = _child(_BUILD, cpu_env, str(path), img.compile_options)
    assert not whole["ok"] and whole["code"] == -43  # CL_INVALID_BUILD_OPTIONS
    for option in flagged:
        one = _child(_BUILD, cpu_env, str(path), option)
        assert not one["ok"] and one["code"] == -43 and "Unrecognized build options" in one["text"], option
    # What the classifier leaves alone, the CPU compiler takes.
    kept = [o for o in split_options(img.compile_options) if not any(o in f.split() for f in flagged)]
    kept_ok = _child(_BUILD, cpu_env, str(path), " ".join(kept + ["-cl-fast-relaxed-math"]))
    assert kept_ok["ok"], (kept, kept_ok)


def test_cpu_verdicts_follow_the_runtimes_image_selection(cpu_aot, bnb_spirv, tmp_path):
    """spir64_x86_64 -> native; spir64 SPIR-V -> JIT; GPU-only options -> unsupported with the
    options named (the refusal measured above); a GPU fat binary -> unsupported, never generic_ir."""
    from aotwheel.runtime import check

    from _check_util import fat_binary
    from _inspect_util import build_so

    path, _ = cpu_aot
    spv = spirv(tmp_path)
    both = build_so(tmp_path, [("spir64_x86_64", path), ("spir64", spv)], {"spir64_x86_64": ["add"], "spir64": ["add"]}, name="both.so")
    ((v,),) = [check(both, "cpu", policy="ignore")]
    assert (v.verdict, v.rule, v.kind) == ("native", "cpu-aot", "cpu")
    (v,) = check(spv, "cpu", policy="ignore")
    assert (v.verdict, v.rule, v.image) == ("jit", "cpu-ir", "spirv")
    lib, _, _ = bnb_spirv
    (v,) = check(lib, "cpu", policy="ignore")
    assert (v.verdict, v.rule) == ("unsupported", "cpu-options")
    assert "-device pvc,xe-lpg,ats-m150" in v.reason and "CL_INVALID_BUILD_OPTIONS" in v.reason
    (v,) = check(fat_binary("pvc,acm-g10"), "cpu", policy="ignore")
    assert (v.verdict, v.rule) == ("unsupported", "cpu-no-image") and "generic_ir" in v.reason
    # The CPU image never serves a GPU.
    (v,) = check(path, "pvc", policy="ignore")
    assert v.verdict == "unsupported"
