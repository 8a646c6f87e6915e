"""`aotwheel check` against the real SYCL runtime on Intel's CPU OpenCL runtime (issue 30, item 1).

dpnp and dpctl from PyPI (ci/setup.sh installs them) carry spir64 SPIR-V images whose descriptor
holds `-ftarget-register-alloc-mode=pvc:-ze-intel-enable-auto-large-GRF-mode`. OpenCL given that
option refuses the build; the SYCL runtime drops it on a CPU and the kernel runs. The verdict must
follow the loader: these tests run dpnp's kernels (dpnp.hamming), read the options the runtime
really passed from its own trace (SYCL_UR_TRACE=2), and rewrite the descriptor's option string in
a copy of the library to see which options the runtime keeps (and the build then fails) and
which it drops. Expected outcomes come from running the kernel, never from aotwheel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _check_util import opencl_cpu_env, run_cli

ORIGINAL = "-ftarget-register-alloc-mode=pvc:-ze-intel-enable-auto-large-GRF-mode"
WINDOW = "dpnp.backend.extensions.window._window_impl"

# Runs dpnp.hamming(5) with (optionally) a rewritten copy of dpnp's window extension loaded in
# place of the installed one; prints the result and the options of every urProgramBuild.
_KERNEL = r"""
import importlib.util, json, sys
if len(sys.argv) > 1:  # the copy answers for the module's name when dpnp imports it
    class Copy:
        @staticmethod
        def find_spec(name, path=None, target=None):
            return importlib.util.spec_from_file_location(name, sys.argv[1]) if name == sys.argv[2] else None
    sys.meta_path.insert(0, Copy)
import dpnp
try:
    out = [round(float(v), 2) for v in dpnp.asnumpy(dpnp.hamming(5))]
except Exception as exc:
    print("KERNEL " + json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}))
else:
    print("KERNEL " + json.dumps({"ok": True, "values": out}))
"""


def _need(*names: str) -> None:
    for name in names:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed: ci/setup.sh installs it (pip install dpnp dpctl, ~800 MB of wheels)")


@pytest.fixture(scope="module")
def env():
    _need("dpnp", "dpctl")
    return opencl_cpu_env()


def _run_kernel(env: dict[str, str], *args: str) -> tuple[dict, list[tuple[str, str]]]:
    proc = subprocess.run([sys.executable, "-c", _KERNEL, *args], capture_output=True, text=True,
                          env={**env, "SYCL_UR_TRACE": "2"}, timeout=300)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("KERNEL ")]
    assert line, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    # `<--- urProgramBuild(... .pOptions = 0x... (OPTIONS)) -> UR_RESULT_...;` from the runtime's own trace
    builds = re.findall(r"<--- urProgramBuild\(.*?\.pOptions = \S+ \((.*?)\)\) -> (\w+);", proc.stdout + proc.stderr)
    return json.loads(line[-1][len("KERNEL "):]), builds


def _window_so() -> Path:
    spec = importlib.util.find_spec(WINDOW)
    assert spec is not None and spec.origin
    return Path(spec.origin)


def test_dpnp_kernel_runs_and_check_says_jit(env):
    """dpnp.hamming runs on the CPU; the runtime built its image with no options; `aotwheel check
    dpnp` predicts jit for every library and exits 0."""
    result, builds = _run_kernel(env)
    assert result == {"ok": True, "values": [0.08, 0.54, 1.0, 0.54, 0.08]}, result
    assert builds and all(opts.strip() == "" and rc == "UR_RESULT_SUCCESS" for opts, rc in builds), builds
    for package in ("dpnp", "dpctl"):
        proc = run_cli(["check", package, "--json"], env)
        assert proc.returncode == 0, (package, proc.stdout[-2000:], proc.stderr[-2000:])
        verdicts = json.loads(proc.stdout)["verdicts"]
        cpu = [v for v in verdicts if v["kind"] == "cpu"]
        assert cpu, verdicts
        assert {(v["verdict"], v["rule"]) for v in cpu} == {("jit", "cpu-ir")}, [(v["binary"], v["reason"]) for v in cpu]


@pytest.mark.parametrize("options, runs", [
    (ORIGINAL, True),                                          # dropped by the runtime (measured: empty pOptions)
    ("-ftarget-register-alloc-mode=pvc:auto -cl-fast-relaxed-math", True),  # the mode dropped, the rest passed
    ("-cl-fast-relaxed-math", True),                           # passed, and the CPU compiler takes it
    ("-device pvc", False),                                    # passed as is: the CPU compiler refuses it
    ("-cl-intel-enable-auto-large-GRF-mode", False),           # passed as is: refused
])
def test_check_predicts_what_the_sycl_runtime_does_with_an_images_options(env, tmp_path, options, runs):
    """A copy of dpnp's window library whose descriptor string is rewritten (same length, padded
    with spaces): the kernel's outcome on the real runtime and the verdict of `check` agree."""
    from aotwheel.runtime import check

    src = _window_so()
    data = src.read_bytes()
    assert data.count(ORIGINAL.encode()) == 1
    new = options.encode().ljust(len(ORIGINAL), b" ")
    assert len(new) == len(ORIGINAL)
    copy = tmp_path / src.name  # same file name: Python finds PyInit__window_impl by it
    copy.write_bytes(data.replace(ORIGINAL.encode(), new))
    # The copy's RUNPATH ($ORIGIN/...) no longer reaches the venv's lib/ (libintlc, libsycl).
    lib = Path(sys.prefix) / "lib"
    result, builds = _run_kernel({**env, "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(lib), env.get("LD_LIBRARY_PATH")]))},
                                 str(copy), WINDOW)
    assert result["ok"] is runs, (result, builds)
    assert builds, result
    passed = {opts.strip() for opts, _ in builds}
    if "-ftarget-register-alloc-mode" in options:
        assert not any("-ftarget-register-alloc-mode" in p for p in passed), passed
    else:
        assert passed == {options}, passed
    verdicts = [v for v in check(str(copy), "cpu", policy="ignore") if v.kind == "cpu"]
    assert verdicts and {v.verdict for v in verdicts} == {"jit" if runs else "unsupported"}, [v.reason for v in verdicts]
    if not runs:
        assert all(v.rule == "cpu-options" and options.split()[0] in v.reason and "SYCL runtime" in v.reason for v in verdicts)


def test_a_loader_that_passes_the_options_keeps_the_opencl_verdict(env, tmp_path):
    """OpenCL itself (pyopencl on the same runtime) refuses the SPIR-V of dpnp's window image with
    the option the descriptor holds and builds it without; the "opencl" loader model says so."""
    from aotwheel.backends.intel.cpu_rules import decide_cpu
    from aotwheel.inspector import image_bytes, inspect

    so = _window_so()
    (fr,) = inspect(so).files
    images = [i for i in fr.images if "spirv" in (i.kind, i.content) and i.compile_options == ORIGINAL]
    assert images
    spv = tmp_path / "img.spv"
    spv.write_bytes(image_bytes(so, images[0]))
    build = ("import sys, pyopencl as cl\n"
             "dev = [d for p in cl.get_platforms() for d in p.get_devices(cl.device_type.CPU)][0]\n"
             "ctx = cl.Context([dev])\n"
             "try:\n    cl.Program(ctx, open(sys.argv[1], 'rb').read()).build(options=sys.argv[2])\n"
             "except cl.Error as exc:\n    print('CODE', exc.code)\nelse:\n    print('CODE 0')\n")
    codes = [subprocess.run([sys.executable, "-c", build, str(spv), opts], capture_output=True, text=True, env=env,
                            timeout=300).stdout.split()[-1] for opts in (ORIGINAL, "")]
    assert codes == ["-43", "0"]  # CL_INVALID_BUILD_OPTIONS with the option, built without it

    class Cpu:
        label, kind, spirv = "cpu", "cpu", True

    assert decide_cpu(fr, Cpu(), loader="opencl").verdict == "unsupported"
    assert decide_cpu(fr, Cpu(), loader="sycl").verdict == "jit"
