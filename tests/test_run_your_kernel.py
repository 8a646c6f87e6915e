"""A user's own kernel, end to end (issue 41 item 1): each example (examples/downstream,
examples/setuptools) is built into a wheel against an installed aotwheel, and its kernel runs on
Intel's CPU OpenCL runtime through ``aotwheel.opencl.build_program`` / ``load_program``, given the
extension module, its import name and the path of its ``.so``, and through a module that returns
the older ``(triple, bytes)`` form; the results are checked against NumPy's ``a * x + y``.

The run-time dependency story: a fresh venv that holds only the downstream wheel and what it
declares (``aotwheel[opencl]``, numpy; aotwheel from a folder, as the README says) runs the kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from _aotdemo_util import REPO, copy_example, unpack

pytestmark = pytest.mark.usefixtures("builds")

# One process of a user's package: the kernel through the loader, by each form images can take.
CHILD = r"""
import json, sys, types
import numpy as np, pyopencl as cl
import aotdemo, aotdemo._demo
from aotwheel.opencl import load_program

dev = next(d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.CPU)
ctx = cl.Context([dev]); queue = cl.CommandQueue(ctx)
legacy = types.ModuleType("legacy_demo")  # an extension written like the examples before (triple, bytes)
legacy.images = lambda: [(t, b) for t, _, b in aotdemo._demo.images()]
rng = np.random.default_rng(41)
x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
want = 3.0 * x.astype(np.float64) + y

def run(program):
    mf = cl.mem_flags
    bx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    by = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=y)
    program.saxpy(queue, (x.size,), None, np.float32(3.0), bx, by)
    out = np.empty_like(y); cl.enqueue_copy(queue, out, by); queue.finish()
    return float(np.max(np.abs(out - want)))

found = {}
for label, images in (("module", aotdemo._demo), ("name", "aotdemo._demo"), ("path", aotdemo._demo.__file__), ("legacy", legacy)):
    loaded = load_program(ctx, dev, images)
    found[label] = {"source": loaded.source, "error": run(loaded.program)}
found["package"] = {"error": float(np.max(np.abs(aotdemo.saxpy(3.0, x, y, device=dev) - want)))}
print(json.dumps(found))
"""


def _cpu_env() -> dict[str, str]:
    """This environment with Intel's CPU OpenCL runtime visible (.venv/opencl-cpu.env, what
    activation exports); skips only when neither is there (ci/test.sh installs it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_")) and k != "PYTHONPATH"}
    if "OCL_ICD_VENDORS" not in env:
        sourced = REPO / ".venv" / "opencl-cpu.env"
        if not sourced.is_file():
            pytest.skip("no CPU OpenCL runtime: source .venv/opencl-cpu.env (ci/test.sh installs it)")
        for line in sourced.read_text().splitlines():
            if line.startswith("export ") and "=" in line:
                key, value = line[len("export "):].split("=", 1)
                env[key] = value.strip("'\"")
    env["AOTWHEEL_JIT_CACHE_DIR"] = "off"  # every form compiles: no form is served another's build
    return env


def _wheel(project: Path, site: Path, out: Path) -> Path:
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_") and k != "TORCH_XPU_ARCH_LIST"}
    env.update(PYTHONPATH=str(site), USE_AOT_DEVLIST="pvc,ats-m150")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "--no-build-isolation", "--no-cache-dir",
                           "-w", str(out)], capture_output=True, text=True, env=env, timeout=900, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    (wheel,) = out.glob("aotdemo*.whl")
    return wheel


@pytest.mark.parametrize("example", ["downstream", "setuptools"])
def test_example_kernel_runs_through_the_loader_by_module_name_and_path(example: str, installed_aotwheel: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    env = _cpu_env()
    project = tmp_path / example
    if example == "downstream":
        copy_example(project)
    else:
        import shutil

        shutil.copytree(REPO / "examples" / example, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "dist"))
    unpacked = unpack(_wheel(project, installed_aotwheel, tmp_path / "wheels"), tmp_path / "unpacked")
    env["PYTHONPATH"] = os.pathsep.join([str(unpacked), str(installed_aotwheel)])
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(found) == {"module", "name", "path", "legacy", "package"}, found
    for label, run in found.items():
        assert run["error"] < 1e-5, (label, run)  # float32 a*x+y against float64
    # The fat binary holds pvc and acm-g10 only: the CPU gets the SPIR-V, compiled now (cache off).
    assert {run["source"] for label, run in found.items() if label != "package"} == {"jit"}, found

    # `aotwheel selftest` of the user's module (by name and by path): the program loads and its one
    # kernel is created on the CPU; no NumPy reference is asked for (aotwheel's saxpy takes 4 arguments).
    so = next((unpacked / "aotdemo").glob("_demo*.so"))
    for source in ("aotdemo._demo", str(so)):
        proc = subprocess.run([sys.executable, "-m", "aotwheel", "selftest", source], capture_output=True, text=True, env=env,
                              timeout=600, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "MISMATCH" not in proc.stdout and "Traceback" not in proc.stderr, proc.stdout
        assert any(line.split()[:3] == ["saxpy", "ok", "-"] and "created" in line for line in proc.stdout.splitlines()), proc.stdout


def test_downstream_wheel_runs_in_a_venv_of_only_it_and_its_dependencies(installed_aotwheel: Path, aotwheel_wheel: Path,
                                                                          tmp_path: Path) -> None:
    """As the README says: `pip install --find-links <aotwheel's dist/> aotdemo-*.whl` into a venv
    with nothing else; its declared dependencies (aotwheel[opencl], numpy) come with it."""
    env = _cpu_env()
    wheel = _wheel(copy_example(tmp_path / "downstream"), installed_aotwheel, tmp_path / "wheels")
    clean = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(clean)
    python = clean / "bin" / "python"
    env.pop("VIRTUAL_ENV", None)
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--find-links", str(aotwheel_wheel.parent), str(wheel)],
                               capture_output=True, text=True, env=env, timeout=900, check=False)
    assert installed.returncode == 0, (installed.stdout + installed.stderr)[-4000:]
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True, env=env, check=True)
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert {"aotdemo", "aotwheel", "pyopencl", "numpy"} <= names, names
    code = "import aotdemo, numpy as np; print(aotdemo.saxpy(2.0, np.arange(4), np.ones(4)).tolist())"
    ran = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, check=False)
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert ran.stdout.strip() == "[1.0, 3.0, 5.0, 7.0]"
