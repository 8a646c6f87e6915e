"""`aotwheel selftest`: our kernels (csrc/kernels/*.cl) JIT-compiled by Intel's real CPU OpenCL
runtime and compared with NumPy. Kernel names are read from the sources with a regex."""

from __future__ import annotations

import json

import pytest

from _check_util import KERNELS, child_env, kernel_names_in_sources, opencl_cpu_env, run_cli, run_python, spirv


@pytest.fixture(scope="module")
def kernel_spirv():
    sources = sorted(KERNELS.glob("*.cl"))
    if not sources:
        pytest.skip("csrc/kernels/*.cl not present")
    return [str(spirv(cl, f"csrc_{cl.stem}")) for cl in sources]


def test_every_kernel_in_csrc_has_a_reference():
    from aotwheel.selftest import REFERENCES

    names = kernel_names_in_sources()
    assert names, "no __kernel found in csrc/kernels"
    assert sorted(names) == sorted(REFERENCES)


def test_selftest_runs_every_kernel_on_cpu_runtime_and_matches_numpy(kernel_spirv):
    env = opencl_cpu_env()
    proc = run_cli(["selftest", "--json", *kernel_spirv], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout)["results"]
    cpus = [r for r in results if r["kind"] == "cpu"]
    assert cpus, "the CPU runtime should be listed"
    for r in cpus:
        assert r["verdict"] == "jit" and r["ok"] and r["build_ms"] > 0
        ran = {k["name"]: k for k in r["kernels"]}
        assert sorted(ran) == sorted(kernel_names_in_sources())
        assert all(k["ok"] and k["max_error"] is not None and k["max_error"] <= k["tolerance"] for k in ran.values())


def test_selftest_text_output_names_verdict_build_time_and_error(kernel_spirv):
    env = opencl_cpu_env()
    proc = run_cli(["selftest", kernel_spirv[0]], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "(cpu): jit, program build" in first and first.endswith("OK")
    assert "max error" in proc.stdout


def test_selftest_detects_a_wrong_result(kernel_spirv):
    # Same run with vector_add's reference replaced by a - b: the comparison must fail.
    env = opencl_cpu_env()
    code = ("import sys\nfrom aotwheel import selftest as s\n"
            "run, tol = s.REFERENCES['vector_add']\n"
            "def wrong(cl, ctx, q, k, rng):\n    got, ref = run(cl, ctx, q, k, rng)\n    return got, ref - 1.0\n"
            "s.REFERENCES['vector_add'] = (wrong, tol)\n"
            "from aotwheel.cli import main\nsys.exit(main(['selftest', '--json', *sys.argv[1:]]))")
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code, *kernel_spirv], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, proc.stderr
    (cpu,) = [r for r in json.loads(proc.stdout)["results"] if r["kind"] == "cpu"]
    bad = [k["name"] for k in cpu["kernels"] if not k["ok"]]
    assert bad == ["vector_add"] and not cpu["ok"]


def test_selftest_without_opencl_device_fails_with_one_line(tmp_path, kernel_spirv):
    pytest.importorskip("pyopencl")
    env = child_env(OCL_ICD_VENDORS=str(tmp_path))  # set: the CLI does not wire the CPU runtime
    proc = run_cli(["selftest", kernel_spirv[0]], env)
    assert proc.returncode == 2
    assert proc.stderr.startswith("aotwheel: error: no OpenCL device") and proc.stderr.count("\n") == 1


def test_selftest_default_uses_built_kernels_extension():
    env = opencl_cpu_env()
    probe = run_python("import aotwheel._kernels", env)
    if probe.returncode != 0:
        pytest.skip("aotwheel._kernels is not built in this environment (pip install . builds it)")
    proc = run_cli(["selftest", "--json"], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (cpu,) = [r for r in json.loads(proc.stdout)["results"] if r["kind"] == "cpu"]
    assert sorted(k["name"] for k in cpu["kernels"]) == sorted(kernel_names_in_sources())
    assert cpu["ok"] and cpu["verdict"] == "jit"


def test_selftest_second_run_creates_programs_from_the_jit_cache(kernel_spirv, tmp_path):
    env = {**opencl_cpu_env(), "AOTWHEEL_JIT_CACHE_DIR": str(tmp_path / "jit")}
    runs = []
    for _ in range(2):
        proc = run_cli(["selftest", "--json", *kernel_spirv], env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (cpu,) = [r for r in json.loads(proc.stdout)["results"] if r["kind"] == "cpu"]
        assert cpu["ok"] and cpu["verdict"] == "jit"
        runs.append(cpu)
    assert runs[0]["program_from"] == "jit" and runs[1]["program_from"] == "jit-cache"
    assert len(list((tmp_path / "jit").rglob("*.bin"))) == len(kernel_spirv)
    text = run_cli(["selftest", *kernel_spirv], env)
    assert "(cpu): jit (cached native build), program build" in text.stdout.splitlines()[0]


def test_selftest_without_numpy_is_one_line_not_a_traceback_numpy_blocked():
    # A machine without NumPy, as Python sees one: `import numpy` fails (sys.modules["numpy"] = None
    # stands in for the missing package). An NVIDIA-only build (tests/data/cuda-h100): its CUDA part
    # must not import NumPy to load modules, and the OpenCL part says what is missing in one line.
    from _check_util import REPO

    code = ("import sys; sys.modules['numpy'] = None\nfrom aotwheel.cli import main\n"
            f"sys.exit(main(['selftest', {str(REPO / 'tests' / 'data' / 'cuda-h100' / 'libkern_sm_90.so')!r}]))")
    proc = run_python(code, child_env())
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 2) and (proc.returncode == 0 or len(proc.stderr.strip().splitlines()) == 1), proc.stderr
