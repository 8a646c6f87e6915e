"""``aotwheel selftest``: run this package's own kernels on every OpenCL device and compare with NumPy.

Device code comes from ``aotwheel._kernels`` (one fat binary + one SPIR-V module per kernel
source) or from files given by the caller (``.spv``, or anything the inspector reads). An Intel
GPU whose verdict is native gets the fat binary (the driver picks the member); every other
device gets the SPIR-V, which its OpenCL compiler builds: a real JIT. Programs are made by
:func:`aotwheel.opencl.load_program`, so a second run creates them from the JIT cache's native
builds and says "(cached native build)". The build time printed is that program creation. Needs the optional extra ``aotwheel[selftest]`` (numpy, pyopencl).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aotwheel.errors import AotwheelError
from aotwheel.results import DeviceResult, KernelResult  # defined with the results (backends return them); still importable here

DEFAULT_MODULE = "aotwheel._kernels"
SEED = 20240601


@dataclass
class Module:
    """One unit of device code: a SPIR-V module and, when built with AOT, its fat binary."""

    source: str
    spirv: bytes | None
    fatbinary: bytes | None = None


# --- reference table: kernel name -> (runner, tolerance) --------------------------------------
# A runner gets (cl, ctx, queue, kernel, rng) and returns (device result, float64 reference).

Runner = Callable[[Any, Any, Any, Any, Any], tuple[Any, Any]]


def _buffers(cl, ctx, *arrays):
    mf = cl.mem_flags
    return [cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a) for a in arrays]


def _read(cl, queue, buf, like):
    import numpy as np

    out = np.empty_like(like)
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return out


def _vector_add(cl, ctx, queue, kernel, rng):
    import numpy as np

    n = 1000  # not a multiple of any work-group size: exercises the bounds check
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c = np.zeros(n, np.float32)
    ba, bb, bc = _buffers(cl, ctx, a, b, c)
    kernel(queue, (n,), None, ba, bb, bc, np.uint32(n))
    return _read(cl, queue, bc, c), a.astype(np.float64) + b


def _saxpy(cl, ctx, queue, kernel, rng):
    import numpy as np

    n, alpha = 1000, np.float32(2.5)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    bx, by = _buffers(cl, ctx, x, y)
    kernel(queue, (n,), None, alpha, bx, by, np.uint32(n))
    return _read(cl, queue, by, y), float(alpha) * x.astype(np.float64) + y


def _gemm_tiled(cl, ctx, queue, kernel, rng):
    import numpy as np

    m, n, k, tile = 37, 45, 29, 16  # ragged sizes: exercises the tile edges
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    ba, bb, bc = _buffers(cl, ctx, a, b, c)
    up = lambda v: (v + tile - 1) // tile * tile  # noqa: E731
    kernel(queue, (up(n), up(m)), (tile, tile), ba, bb, bc, np.uint32(m), np.uint32(n), np.uint32(k))
    return _read(cl, queue, bc, c), a.astype(np.float64) @ b.astype(np.float64)


def _reduce_sum(cl, ctx, queue, kernel, rng):
    import numpy as np

    n, local, groups = 10_000, 64, 8
    x = rng.standard_normal(n).astype(np.float32)
    partial = np.zeros(groups, np.float32)
    bx, bp = _buffers(cl, ctx, x, partial)
    kernel(queue, (local * groups,), (local,), bx, bp, cl.LocalMemory(4 * local), np.uint32(n))
    got = _read(cl, queue, bp, partial)
    return np.array([got.astype(np.float64).sum()]), np.array([x.astype(np.float64).sum()])


def _softmax_rows(cl, ctx, queue, kernel, rng):
    import numpy as np

    rows, cols = 33, 70
    x = (rng.standard_normal((rows, cols)) * 10).astype(np.float32)  # large values: needs the max shift
    y = np.zeros_like(x)
    bx, by = _buffers(cl, ctx, x, y)
    kernel(queue, (rows,), None, bx, by, np.uint32(rows), np.uint32(cols))
    ref = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return _read(cl, queue, by, y), ref / ref.sum(axis=1, keepdims=True)


# Tolerances are relative to max |reference|: float32 rounding grows with the reduction length.
REFERENCES: dict[str, tuple[Runner, float]] = {
    "vector_add": (_vector_add, 1e-6),
    "saxpy": (_saxpy, 1e-6),
    "gemm_tiled": (_gemm_tiled, 1e-5),
    "reduce_sum": (_reduce_sum, 1e-4),
    "softmax_rows": (_softmax_rows, 1e-5),
}


# --- where the device code comes from ---------------------------------------------------------

def modules_from_extension(name: str = DEFAULT_MODULE) -> list[Module]:
    """Pair each kernel source's SPIR-V and fat binary from an extension built by aotwheel."""
    import importlib

    try:
        ext = importlib.import_module(name)
    except ImportError as exc:
        raise AotwheelError(f"cannot import {name} ({exc}); build aotwheel with its kernels (pip install .) or pass .spv files") from None
    from aotwheel import backends
    from aotwheel.opencl import inflate  # images embedded with COMPRESS ON are zstd frames

    kinds = backends.for_opencl().opencl_images  # which triples are SPIR-V and which the fat binary
    by_source: dict[str, Module] = {}
    for triple, source, data in ext.images():
        mod = by_source.setdefault(source, Module(source, None))
        if triple == kinds.ir:
            mod.spirv = inflate(bytes(data), f"{name}:{source} ({triple})")
        elif triple == kinds.native:
            mod.fatbinary = inflate(bytes(data), f"{name}:{source} ({triple})")
    return list(by_source.values())


def modules_from_path(path: str) -> list[Module]:
    """A ``.spv`` file as-is; anything else through the inspector (SPIR-V and ar images)."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head in (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03"):
        with open(path, "rb") as fh:
            return [Module(os.path.basename(path), fh.read())]
    from aotwheel.inspector import image_bytes, inspect

    mods: list[Module] = []
    for f in inspect(path).files:
        spirv = [i for i in f.images if "spirv" in (i.kind, i.content)]
        fats = [i for i in f.images if "ar" in (i.kind, i.content)]
        for n, img in enumerate(spirv):
            fat = image_bytes(f.path, fats[n]) if len(fats) == len(spirv) else None
            mods.append(Module(f"{os.path.basename(f.path)}#{img.index}", image_bytes(f.path, img), fat))
    if not mods:
        raise AotwheelError(f"{path}: no SPIR-V found; build it with JIT fallback on (SPIR-V kept) to self-test it")
    return mods


# --- running -----------------------------------------------------------------------------------

def _max_error(got, ref) -> float:
    import numpy as np

    got = np.asarray(got, np.float64)
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    return float(np.max(np.abs(got - ref))) / scale


def _run_program(cl, ctx, queue, program, rng) -> list[KernelResult]:
    names = [n for n in program.get_info(cl.program_info.KERNEL_NAMES).split(";") if n]
    results = []
    for name in names:
        if name not in REFERENCES:
            results.append(KernelResult(name, None, 0.0, False, "no NumPy reference in aotwheel.selftest.REFERENCES"))
            continue
        runner, tol = REFERENCES[name]
        try:
            got, ref = runner(cl, ctx, queue, getattr(program, name), rng)
            err = _max_error(got, ref)
            results.append(KernelResult(name, err, tol, err <= tol))
        except Exception as exc:  # one failing kernel must not hide the others
            results.append(KernelResult(name, None, tol, False, f"{type(exc).__name__}: {exc}"))
    return results


def _fat_targets(fatbinary: bytes | None) -> list[Any]:
    """Native targets of a fat binary, through the inspector (empty if it cannot tell)."""
    if not fatbinary:
        return []
    import tempfile

    try:
        from aotwheel.inspector import inspect

        with tempfile.TemporaryDirectory(prefix="aotwheel-selftest-") as tmp:
            path = os.path.join(tmp, "kernels.ar")
            with open(path, "wb") as fh:
                fh.write(fatbinary)
            return [t for f in inspect(path).files for t in f.native_targets]
    except Exception:
        return []


def _opencl_devices(cl) -> list[tuple[Any, Any]]:
    pairs: list[tuple[Any, Any]] = []
    for platform in cl.get_platforms():
        try:
            pairs.extend((platform, d) for d in platform.get_devices())
        except Exception:
            continue  # a platform without devices
    return pairs


def run(modules: list[Module]) -> list[DeviceResult]:
    """Build every module on every OpenCL device and check each kernel against NumPy."""
    try:
        import numpy as np
        import pyopencl as cl
    except ImportError as exc:
        raise AotwheelError(f"selftest needs numpy and pyopencl ({exc.name} missing); pip install 'aotwheel[selftest]'") from None
    from aotwheel import backends
    from aotwheel.opencl import DeviceCode, load_program

    vendor = backends.for_opencl()  # names each OpenCL device and gives the verdicts

    try:
        pairs = _opencl_devices(cl)
    except Exception as exc:
        pairs, why = [], str(exc)
    else:
        why = "platforms without devices"
    if not pairs:
        raise AotwheelError(f"no OpenCL device ({why}); {vendor.opencl_runtime}")
    targets = {m.source: _fat_targets(m.fatbinary) for m in modules}
    results: list[DeviceResult] = []
    for index, (platform, cdev) in enumerate(pairs):
        pdev = vendor.opencl_device(cl, platform, cdev, index)
        res = DeviceResult(pdev.label, pdev.kind, "", "")
        results.append(res)
        try:
            ctx = cl.Context([cdev])
            queue = cl.CommandQueue(ctx)
        except Exception as exc:
            res.error = f"cannot create a context: {exc}"
            continue
        rng = np.random.default_rng(SEED)
        verdicts = []
        sources: list[str] = []
        for mod in modules:
            verdict = vendor.opencl_verdict(targets[mod.source], bool(mod.spirv), pdev)
            verdicts.append(verdict)
            start = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", cl.CompilerWarning)  # pyopencl's warning for any build log
                    # The loader: native image by the driver's rules, else the JIT cache, else SPIR-V.
                    loaded = load_program(ctx, cdev, DeviceCode(mod.source, mod.spirv, mod.fatbinary))
                    program = loaded.program
                    sources.append(loaded.source)
            except AotwheelError as exc:
                res.error = str(exc)
                continue
            except Exception as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                res.error = f"{mod.source}: program build failed: {first}"
                continue
            res.build_ms += (time.perf_counter() - start) * 1000.0
            res.kernels.extend(_run_program(cl, ctx, queue, program, rng))
        kinds = sorted({v.verdict for v in verdicts})
        res.verdict = "/".join(kinds)
        res.program_from = "/".join(sorted(set(sources)))
        res.reason = verdicts[0].reason if verdicts else ""
    return results


def format_results(results: list[DeviceResult]) -> str:
    """Human-readable report: per device the verdict, build time and each kernel's max error."""
    lines = []
    for r in results:
        status = "OK" if r.ok else "FAIL"
        cached = " (cached native build)" if r.program_from == "jit-cache" else ""
        lines.append(f"{r.device} ({r.kind}): {r.verdict}{cached}, program build {r.build_ms:.1f} ms, {status}")
        if r.error:
            lines.append(f"  error: {r.error}")
        if r.program_from == "simulated":  # a backend's simulated device: what its driver and aotwheel said per module
            lines.append(f"  {r.reason}")
        for k in r.kernels:
            err = "n/a" if k.max_error is None else f"{k.max_error:.2e}"
            lines.append(f"  {k.name:<14} max error {err} (tolerance {k.tolerance:.0e}) {'ok' if k.ok else 'MISMATCH'}"
                         + (f" - {k.note}" if k.note else ""))
    return "\n".join(lines)
