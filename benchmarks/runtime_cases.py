"""Run-time measurements: P4 inspect, P5 import/check/probe overhead, and the JIT context row.

Probes, imports and JIT builds run in fresh interpreters (``python -c``) so that no state of
this process (imported modules, warm caches) leaks into what is measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.project import REPO
from benchmarks.timing import Samples

# The P4 subject: Intel's oneMKL SYCL library from PyPI (650 MB, ~14k SYCL images, 2023.2.0 is
# the last release that ships it as one file). Never committed; downloaded on demand.
SYCL_WHEEL = "mkl-dpcpp==2023.2.0"
SYCL_MEMBER = "mkl_dpcpp-2023.2.0.data/data/lib/libmkl_sycl.so.3"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python")
    env.update(extra)
    return env


def opencl_cpu_env() -> dict[str, str]:
    """``OCL_ICD_VENDORS`` from ci/install-opencl-cpu.sh's env file, when it was run."""
    env_file = Path(sys.prefix) / "opencl-cpu.env"
    out: dict[str, str] = {}
    if env_file.is_file():
        for line in env_file.read_text().splitlines():
            if line.startswith("export ") and "=" in line:
                key, _, value = line[len("export "):].partition("=")
                out[key] = value.strip("'\"")
    return out


def fetch_sycl_binary(cache: Path, log: Callable[[str], None]) -> Path | None:
    """The ≥300 MB third-party SYCL library (downloaded once with pip into ``cache``)."""
    return fetch_wheel_member(cache, SYCL_WHEEL, "mkl_dpcpp-2023.2.0-*.whl", SYCL_MEMBER, "P4", log)


def fetch_wheel_member(cache: Path, spec: str, wheel_glob: str, member: str, case: str,
                       log: Callable[[str], None]) -> Path | None:
    """``member`` of the wheel ``spec`` from PyPI, downloaded once with pip into ``cache``."""
    target = cache / Path(member).name
    if target.is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    log(f"{case}: pip download {spec} into {cache}")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--only-binary=:all:", "-d", str(cache), spec],
                          capture_output=True, text=True)
    wheels = list(cache.glob(wheel_glob))
    if proc.returncode != 0 or not wheels:
        log(f"{case} skipped: pip download failed: {proc.stderr.strip()[-300:]}")
        return None
    import shutil
    import zipfile

    with zipfile.ZipFile(wheels[0]) as z, z.open(member) as src, open(f"{target}.part", "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    os.replace(f"{target}.part", target)
    return target


def p4_inspect(path: Path, runs: int, log: Callable[[str], None]) -> dict:
    """P4: ``aotwheel.inspect(path)`` vs ``cat path > /dev/null``, page cache warm for both."""
    sys.path.insert(0, str(REPO / "python"))
    import aotwheel

    def cat() -> float:
        t0 = time.perf_counter()
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t0

    cat()
    report = aotwheel.inspect(path)  # warm-up: page cache and imports
    cats, insp, ratio = Samples(), Samples(), Samples()
    for r in range(runs):
        c = cat()
        t0 = time.perf_counter()
        aotwheel.inspect(path)
        i = time.perf_counter() - t0
        cats.add(c)
        insp.add(i)
        ratio.add(i / c)
        log(f"P4 run {r + 1}: inspect {i * 1e3:.1f} ms, cat {c * 1e3:.1f} ms")
    from benchmarks import inspect_floor

    floor, floor_nokernels = Samples(), Samples()
    for _ in range(runs):
        t0 = time.perf_counter()
        inspect_floor.read(str(path))
        floor.add(time.perf_counter() - t0)
        t0 = time.perf_counter()
        inspect_floor.read(str(path), count_kernels=False)
        floor_nokernels.add(time.perf_counter() - t0)
    f = report.files[0]
    return {
        "floor_header_only_ms": floor.to_dict(1e3), "floor_header_only_no_kernel_count_ms": floor_nokernels.to_dict(1e3),
        "file": path.name, "source": f"PyPI {SYCL_WHEEL}", "bytes": path.stat().st_size,
        "images": len(f.images), "kernels": f.kernels, "ir": f.ir, "native_targets": len(f.native_targets),
        "inspect_ms": insp.to_dict(1e3), "cat_ms": cats.to_dict(1e3), "ratio": ratio.to_dict(),
        "target": "median <= 50 ms and <= 0.05 x cat",
        "met": insp.median <= 0.050 and ratio.median <= 0.05,
    }


def _py(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"python -c failed: {proc.stderr[-2000:]}")
    return proc.stdout


def p5_import(runs: int) -> dict:
    """P5a: ``python -c "import aotwheel"`` vs ``python -c pass``, alternating, plus -X importtime."""
    env = _env()
    base, imp, diff = Samples(), Samples(), Samples()
    for _ in range(runs * 4):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        t1 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import aotwheel"], env=env, check=True)
        t2 = time.perf_counter()
        base.add(t1 - t0)
        imp.add(t2 - t1)
        diff.add((t2 - t1) - (t1 - t0))
    cumulative_us = _importtime_us("aotwheel", env, runs)
    hook_us = _hook_importtime_us(env, runs)
    return {"pass_ms": base.to_dict(1e3), "import_ms": imp.to_dict(1e3), "difference_ms": diff.to_dict(1e3),
            "importtime_cumulative_us": cumulative_us, "hook_importtime_cumulative_us": hook_us,
            "target": "difference <= 20 ms; -X importtime cumulative <= 5 ms (aotwheel and a generated _aot.py)",
            "met": diff.median <= 0.020 and cumulative_us is not None and cumulative_us <= 5000
                   and (hook_us is None or hook_us <= 5000)}


def _importtime_us(module: str, env: dict[str, str], runs: int) -> int | None:
    """Median ``-X importtime`` cumulative µs of ``import module`` (bytecode cached first, as
    installed packages have it; this machine sets PYTHONDONTWRITEBYTECODE, so unset it here)."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    values = []
    for i in range(runs + 1):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], env=env,
                              capture_output=True, text=True, check=True)
        own = [line for line in proc.stderr.splitlines() if line.split("|")[-1].strip() == module]
        if own and i:  # the first run writes the bytecode
            values.append(int(own[-1].split("|")[1]))
    return sorted(values)[len(values) // 2] if values else None


def _hook_importtime_us(env: dict[str, str], runs: int) -> int | None:
    """The same for the ``_aot.py`` a built package ships (rendered into a scratch package)."""
    import tempfile

    from aotwheel import hook

    with tempfile.TemporaryDirectory(prefix="aotwheel-bench-hook-") as tmp:
        pkg = Path(tmp, "benchpkg")
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "_aot.py").write_text(hook.render("_kernels", "benchpkg"))
        path_env = dict(env, PYTHONPATH=os.pathsep.join([tmp, env.get("PYTHONPATH", "")]))
        return _importtime_us("benchpkg._aot", path_env, runs)


_CHECK = r"""
import json, sys, time, timeit, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import aotwheel
from aotwheel.runtime import check
t1 = time.perf_counter()
check(sys.argv[1])          # probes run here, once per process
t2 = time.perf_counter()
n = 200
per = [t / n for t in timeit.repeat(lambda: check(sys.argv[1]), number=n, repeat=5)]
from aotwheel.probe import probe_all
print(json.dumps({"import_s": t1 - t0, "first_check_s": t2 - t1, "cached_check_s": per,
                  "devices": [d.label for r in probe_all() for d in r.devices]}))
"""

_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
from aotwheel.probe import run_backend
r = run_backend(sys.argv[1])
print(json.dumps({"s": time.perf_counter() - t0, "devices": len(r.devices), "reason": r.reason}))
"""


def p5_check(binary: Path | None, runs: int) -> dict:
    """P5b: ``check()`` with probes cached (timeit) and the first probe of each backend."""
    from aotwheel.probe import probe_names  # listing only; probes run in children

    env = _env(**opencl_cpu_env())
    out: dict = {}
    if binary is not None:
        proc = subprocess.run([sys.executable, "-c", _CHECK, str(binary)], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        data = json.loads(proc.stdout)
        cached = Samples(data["cached_check_s"])
        out["check"] = {"binary": binary.name, "devices": data["devices"], "first_check_ms": data["first_check_s"] * 1e3,
                        "cached_check_ms": cached.to_dict(1e3), "target": "cached check() <= 1 ms",
                        "met": cached.median <= 0.001}
    probes: dict = {}
    for name in probe_names():
        s = Samples()
        last: dict = {}
        for _ in range(runs):
            proc = subprocess.run([sys.executable, "-c", _PROBE, name], capture_output=True, text=True, env=env)
            last = json.loads(proc.stdout) if proc.returncode == 0 else {"s": float("nan"), "reason": proc.stderr[-300:]}
            s.add(last["s"])
        probes[name] = {"first_probe_ms": s.to_dict(1e3), "devices": last.get("devices", 0), "reason": last.get("reason", "")}
    out["probes"] = probes
    return out


_JIT = r"""
import json, os, sys, time
import pyopencl as cl
warnings = __import__("warnings"); warnings.simplefilter("ignore")
dev = next(d for p in cl.get_platforms() for d in p.get_devices() if "Intel" in p.name and d.type & cl.device_type.CPU)
ctx = cl.Context([dev])
out = {"device": dev.name, "driver": dev.driver_version, "files": {}}
for path in sys.argv[1:]:
    il = open(path, "rb").read()
    t0 = time.perf_counter(); prg = cl.Program(ctx, il).build(); t1 = time.perf_counter()
    binary = prg.get_info(cl.program_info.BINARIES)[0]
    t2 = time.perf_counter(); cl.Program(ctx, [dev], [binary]).build(); t3 = time.perf_counter()
    out["files"][os.path.basename(path)] = {"jit_s": t1 - t0, "binary_s": t3 - t2, "kernels": len(prg.all_kernels()),
                                            "binary_bytes": len(binary)}
print(json.dumps(out))
"""


def jit_context(spvs: list[Path], runs: int, log: Callable[[str], None]) -> dict:
    """First-call JIT (SPIR-V build) on Intel's CPU OpenCL runtime vs loading the cached binary."""
    env = _env(**opencl_cpu_env(), PYOPENCL_NO_CACHE="1")
    jit, load, ratio = Samples(), Samples(), Samples()
    last: dict = {}
    for r in range(runs):
        proc = subprocess.run([sys.executable, "-c", _JIT, *map(str, spvs)], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            return {"skipped": f"Intel CPU OpenCL runtime unavailable: {proc.stderr.strip().splitlines()[-1:]}"}
        last = json.loads(proc.stdout)
        j = sum(f["jit_s"] for f in last["files"].values())
        b = sum(f["binary_s"] for f in last["files"].values())
        jit.add(j)
        load.add(b)
        ratio.add(j / b)
        log(f"JIT run {r + 1}: SPIR-V build {j:.2f}s, binary load {b * 1e3:.1f} ms")
    return {"device": last["device"], "driver": last["driver"], "kernels": sum(f["kernels"] for f in last["files"].values()),
            "jit_s": jit.to_dict(), "binary_load_ms": load.to_dict(1e3), "jit_over_load": ratio.to_dict(),
            "per_file_last_run": last["files"]}
