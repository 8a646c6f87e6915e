"""``aotwheel selftest``: load device code on every device found and run what can be checked.

Device code comes from ``aotwheel._kernels`` (one fat binary + one SPIR-V module per kernel
source) or from files given by the caller (``.spv``, or anything the inspector reads: a user's
extension too). On every device each module's program is created (an Intel GPU whose verdict is
native gets the fat binary, the driver picking the member; every other device gets the SPIR-V,
which its OpenCL compiler builds: a real JIT) and every kernel in it is created; aotwheel's own
kernels (by name and argument count) are also run and compared with NumPy. A user's kernel passes
when it is created: the selftest has no reference for it. Programs are made by
:func:`aotwheel.opencl.load_program`, so a second run creates them from the JIT cache's native
builds and says "(cached native build)". The build time printed is that program creation.

Where devices come from is a list of sources (:data:`DEVICE_SOURCES`, each a function of pyopencl
giving ``(platform, device)`` pairs): the OpenCL platforms this process sees; another source (a
simulated device) is one more function. Needs pyopencl (and so NumPy): ``aotwheel[selftest]``.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from aotwheel.errors import AotwheelError
from aotwheel.outcomes import DeviceResult, KernelResult  # the backends' self-tests return them too

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
# Their argument counts (csrc/kernels): a user's kernel of the same name with other arguments is
# not run with aotwheel's reference, only created.
ARGUMENTS = {"vector_add": 4, "saxpy": 4, "gemm_tiled": 6, "reduce_sum": 4, "softmax_rows": 4}
CREATED = "created (no reference to run it against: not one of aotwheel's own kernels)"


# --- where the device code comes from ---------------------------------------------------------

def modules_from_extension(name: str = DEFAULT_MODULE) -> list[Module]:
    """Pair each kernel source's SPIR-V and fat binary from an extension built by aotwheel."""
    import importlib

    try:
        ext = importlib.import_module(name)
    except ImportError as exc:
        raise AotwheelError(f"cannot import {name} ({exc}); build aotwheel with its kernels (pip install .) or pass .spv files") from None
    from aotwheel import backends
    from aotwheel.opencl import by_source, inflate  # images embedded with COMPRESS ON are zstd frames

    kinds = backends.for_opencl().opencl_images  # which triples are SPIR-V and which the fat binary
    mods: list[Module] = []
    for source, images in by_source(ext.images(), name).items():
        code = {t: inflate(bytes(d), f"{name}:{source} ({t})") for t, d in images.items()}
        mods.append(Module(source, code.get(kinds.ir), code.get(kinds.native)))
    return mods


def modules_from_path(path: str) -> list[Module]:
    """A ``.spv`` file as-is; anything else through the inspector (SPIR-V and ar images); a module
    name (``aotdemo._demo``) is its extension's file."""
    if not os.path.exists(path):
        from aotwheel.runtime import resolve_binary

        path = resolve_binary(path)
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
    """Create every kernel of ``program``; run those aotwheel has a reference for."""
    names = [n for n in program.get_info(cl.program_info.KERNEL_NAMES).split(";") if n]
    results = []
    for name in names:
        try:
            kernel = cl.Kernel(program, name)
            args = kernel.get_info(cl.kernel_info.NUM_ARGS)
        except Exception as exc:  # a kernel the runtime cannot create: the program is broken for it
            results.append(KernelResult(name, None, 0.0, False, f"cannot create it: {_first_line(exc)}"))
            continue
        if name not in REFERENCES or ARGUMENTS.get(name) != args:
            results.append(KernelResult(name, None, 0.0, True, CREATED))
            continue
        runner, tol = REFERENCES[name]
        try:
            got, ref = runner(cl, ctx, queue, kernel, rng)
            err = _max_error(got, ref)
            results.append(KernelResult(name, err, tol, err <= tol))
        except Exception as exc:  # one failing kernel must not hide the others
            results.append(KernelResult(name, None, tol, False, f"{type(exc).__name__}: {exc}"))
    return results


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


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


def opencl_devices(cl) -> list[tuple[Any, Any]]:
    """Every device of every OpenCL platform this process sees (a platform without devices is skipped)."""
    pairs: list[tuple[Any, Any]] = []
    for platform in cl.get_platforms():
        try:
            pairs.extend((platform, d) for d in platform.get_devices())
        except Exception:
            continue  # a platform without devices
    return pairs


#: Where the selftest's devices come from, in order: functions of pyopencl returning
#: ``(platform, device)`` pairs. A new source of devices (a simulated GPU) is one more entry.
DeviceSource = Callable[[Any], list[tuple[Any, Any]]]
DEVICE_SOURCES: list[DeviceSource] = [opencl_devices]


def run(modules: list[Module], sources: Sequence[DeviceSource] | None = None) -> list[DeviceResult]:
    """Create every module's program and every kernel on every device of ``sources`` (default
    :data:`DEVICE_SOURCES`), and check aotwheel's own kernels against NumPy."""
    try:
        import numpy as np
        import pyopencl as cl
    except ImportError as exc:
        raise AotwheelError(f"selftest needs numpy and pyopencl ({exc.name} missing); pip install 'aotwheel[selftest]'") from None
    from aotwheel import backends
    from aotwheel.opencl import DeviceCode, load_program

    vendor = backends.for_opencl()  # names each OpenCL device and gives the verdicts

    pairs: list[tuple[Any, Any]] = []
    why = "platforms without devices"
    for source in DEVICE_SOURCES if sources is None else sources:
        try:
            pairs += source(cl)
        except Exception as exc:
            why = _first_line(exc)
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
        sources_used: list[str] = []
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
                    sources_used.append(loaded.source)
            except AotwheelError as exc:
                res.error = str(exc)
                continue
            except Exception as exc:
                res.error = f"{mod.source}: program build failed: {_first_line(exc)}"
                continue
            res.build_ms += (time.perf_counter() - start) * 1000.0
            res.kernels.extend(_run_program(cl, ctx, queue, program, rng))
        kinds = sorted({v.verdict for v in verdicts})
        res.verdict = "/".join(kinds)
        res.program_from = "/".join(sorted(set(sources_used)))
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
            if k.max_error is None and not k.tolerance:  # created only: no reference to compare with
                lines.append(f"  {k.name:<14} {'ok' if k.ok else 'FAIL'} - {k.note}")
                continue
            err = "n/a" if k.max_error is None else f"{k.max_error:.2e}"
            lines.append(f"  {k.name:<14} max error {err} (tolerance {k.tolerance:.0e}) {'ok' if k.ok else 'MISMATCH'}"
                         + (f" - {k.note}" if k.note else ""))
    return "\n".join(lines)
