"""The selftest on NVIDIA GPUs: this package's own kernels from a library's ``.nv_fatbin``, loaded
with ``cuModuleLoadData`` through the CUDA driver (ctypes), run on fresh random data and compared
with NumPy in float64. Outputs are poisoned with NaN first, so an element nobody wrote fails.

Results use :class:`aotwheel.outcomes.DeviceResult` (``build_ms`` = the time of
``cuModuleLoadData`` for all modules: near zero for native cubins, the JIT for PTX). Needs NumPy;
no CUDA toolkit, CuPy or PyTorch. ``reduce_sum`` runs as one work-group, as
``csrc/aotwheel_portable.h`` requires for kernels with a ``__local`` pointer parameter.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aotwheel.outcomes import DeviceResult, KernelResult

LIBRARY = "libcuda.so.1"
KERNELS = ("vector_add", "saxpy", "reduce_sum", "softmax_rows", "gemm_tiled")
TOLERANCE = 1e-4  # max |got - ref| / max |ref|; float32 arithmetic lands far below
CREATED = "created (no reference to run it against: not one of aotwheel's own kernels)"


class CudaError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the error."""


class Driver:
    """The few CUDA driver API calls the selftest needs; every return code is checked."""

    def __init__(self, ordinal: int = 0, library: str = LIBRARY) -> None:
        self.lib = ctypes.CDLL(library)
        self.ctx = ctypes.c_void_p()
        self.dev = ctypes.c_int()
        self.allocations: list[ctypes.c_uint64] = []
        self.call("cuInit", 0)
        self.call("cuDeviceGet", ctypes.byref(self.dev), ordinal)
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(self.ctx), self.dev)
        self.call("cuCtxSetCurrent", self.ctx)

    def call(self, fn: str, *args: Any) -> None:
        rc = getattr(self.lib, fn)(*args)
        if rc != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(name))
            raise CudaError(f"{fn} failed: {name.value.decode() if name.value else rc}")

    def load(self, image: bytes) -> ctypes.c_void_p:
        """``cuModuleLoadData`` of one fat binary, cubin or NUL-terminated PTX."""
        mod = ctypes.c_void_p()
        self.call("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(image))
        return mod

    def functions(self, mod: ctypes.c_void_p) -> dict[str, ctypes.c_void_p] | None:
        """Every kernel of a loaded module by name (``cuModuleEnumerateFunctions``, CUDA 12.4+);
        ``None`` where the driver has no such call."""
        if not all(hasattr(self.lib, f) for f in ("cuModuleGetFunctionCount", "cuModuleEnumerateFunctions", "cuFuncGetName")):
            return None
        count = ctypes.c_uint()
        self.call("cuModuleGetFunctionCount", ctypes.byref(count), mod)
        handles = (ctypes.c_void_p * count.value)()
        if count.value:
            self.call("cuModuleEnumerateFunctions", handles, count, mod)
        out = {}
        for fn in handles:
            name = ctypes.c_char_p()
            self.call("cuFuncGetName", ctypes.byref(name), ctypes.c_void_p(fn))
            out[(name.value or b"").decode(errors="replace")] = ctypes.c_void_p(fn)
        return out

    def function(self, mod: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        fn = ctypes.c_void_p()
        self.call("cuModuleGetFunction", ctypes.byref(fn), mod, name.encode())
        return fn

    def alloc(self, nbytes: int) -> ctypes.c_uint64:
        ptr = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(nbytes))
        self.allocations.append(ptr)
        return ptr

    def put(self, array: Any) -> ctypes.c_uint64:
        ptr = self.alloc(array.nbytes)
        self.call("cuMemcpyHtoD_v2", ptr, array.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(array.nbytes))
        return ptr

    def get(self, ptr: ctypes.c_uint64, like: Any) -> Any:
        import numpy as np

        out = np.empty_like(like)
        self.call("cuMemcpyDtoH_v2", out.ctypes.data_as(ctypes.c_void_p), ptr, ctypes.c_size_t(out.nbytes))
        return out

    def launch(self, fn: ctypes.c_void_p, grid: tuple[int, int], block: tuple[int, int], *args: Any) -> None:
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        self.call("cuLaunchKernel", fn, grid[0], grid[1], 1, block[0], block[1], 1, 0, None, params, None)
        self.call("cuCtxSynchronize")

    def free_all(self) -> None:
        for ptr in self.allocations:
            self.lib.cuMemFree_v2(ptr)
        self.allocations.clear()


def fatbinaries(path: str | os.PathLike[str]) -> list[bytes]:
    """Each loadable fat binary (one container of ``.nv_fatbin``) of ``path``, as bytes."""
    from aotwheel.backends.nvidia.fatbin import read_fatbin

    fat = read_fatbin(path)
    if fat is None:
        return []
    out = []
    with open(path, "rb") as f:
        for c in fat.containers:
            if c.relocatable:
                continue
            f.seek(c.offset)
            out.append(f.read(16 + c.size))
    return out


# ---- kernels: (driver, functions, rng) -> (got, float64 reference) ---------------------------

def _vector_add(d: Driver, fn: Any, rng: Any) -> tuple[Any, Any]:
    import numpy as np

    n = 1 << 20
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c = d.put(np.full(n, np.nan, np.float32))
    d.launch(fn, ((n + 255) // 256, 1), (256, 1), d.put(a), d.put(b), c, ctypes.c_uint32(n))
    return d.get(c, a), a.astype(np.float64) + b


def _saxpy(d: Driver, fn: Any, rng: Any) -> tuple[Any, Any]:
    import numpy as np

    n = (1 << 20) + 3
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    alpha = np.float32(rng.standard_normal())
    dy = d.put(y)
    d.launch(fn, ((n + 255) // 256, 1), (256, 1), ctypes.c_float(float(alpha)), d.put(x), dy, ctypes.c_uint32(n))
    return d.get(dy, y), float(alpha) * x.astype(np.float64) + y


def _reduce_sum(d: Driver, fn: Any, rng: Any) -> tuple[Any, Any]:
    import numpy as np

    n = 1 << 20
    x = rng.random(n).astype(np.float32)  # positive: the float32 sum is not dominated by cancellation
    partial = d.put(np.full(1, np.nan, np.float32))
    scratch = d.put(np.full(256, np.nan, np.float32))
    d.launch(fn, (1, 1), (256, 1), d.put(x), partial, scratch, ctypes.c_uint32(n))
    return d.get(partial, np.zeros(1, np.float32)), np.array([x.astype(np.float64).sum()])


def _softmax_rows(d: Driver, fn: Any, rng: Any) -> tuple[Any, Any]:
    import numpy as np

    rows, cols = 4096, 333
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    y = d.put(np.full_like(x, np.nan))
    d.launch(fn, ((rows + 255) // 256, 1), (256, 1), d.put(x), y, ctypes.c_uint32(rows), ctypes.c_uint32(cols))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return d.get(y, x), e / e.sum(axis=1, keepdims=True)


def _gemm_tiled(d: Driver, fn: Any, rng: Any) -> tuple[Any, Any]:
    import numpy as np

    m, k, n = 509, 385, 271  # not multiples of the 16x16 tile: the edges are exercised
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    c = d.put(np.full((m, n), np.nan, np.float32))
    d.launch(fn, ((n + 15) // 16, (m + 15) // 16), (16, 16), d.put(a), d.put(b), c, ctypes.c_uint32(m), ctypes.c_uint32(n), ctypes.c_uint32(k))
    return d.get(c, np.zeros((m, n), np.float32)), a.astype(np.float64) @ b


RUNNERS: dict[str, Callable[[Driver, Any, Any], tuple[Any, Any]]] = {
    "vector_add": _vector_add, "saxpy": _saxpy, "reduce_sum": _reduce_sum, "softmax_rows": _softmax_rows, "gemm_tiled": _gemm_tiled,
}


def max_error(got: Any, ref: Any) -> float:
    """max |got - ref| / max |ref|; infinite when any element is NaN (never written)."""
    import numpy as np

    if not np.all(np.isfinite(got)):
        return float("inf")
    return float(np.max(np.abs(got.astype(np.float64) - ref)) / max(float(np.max(np.abs(ref))), 1e-30))


def run_cuda(path: str | os.PathLike[str], *, library: str = LIBRARY, seed: int | None = None) -> tuple[list[DeviceResult], str]:
    """Run every kernel found in ``path``'s fat binaries on every CUDA GPU.

    Returns the results and, when there are none, why (no driver, no GPU, no CUDA images).
    Never raises for a missing driver or a failing device: the error is in the result.
    """
    try:
        import numpy as np
    except ImportError:  # every module still loads and every kernel is created; none is run
        np = None  # type: ignore[assignment]
    from aotwheel.backends.nvidia.probe import probe_cuda
    from aotwheel.backends.nvidia.rules import cuda_files, decide_cuda, nvidia_devices
    from aotwheel.errors import InspectError

    try:
        images = fatbinaries(path)
    except InspectError as exc:
        return [], str(exc)
    if not images:
        return [], f"{Path(path).name} has no loadable CUDA fat binary (.nv_fatbin)"
    found = probe_cuda(library)
    if not found.devices:
        return [], found.reason
    files = cuda_files(path)
    results = []
    for dev, gpu in zip(found.devices, nvidia_devices(found.devices)):
        verdict = decide_cuda(files[0], gpu)
        res = DeviceResult(f"{dev.name} (cuda:{dev.index})", "gpu", verdict.verdict, verdict.reason)
        driver = None
        try:
            driver = Driver(dev.index, library)
            t0 = time.perf_counter()
            modules = [driver.load(img) for img in images]
            res.build_ms = (time.perf_counter() - t0) * 1e3
            funcs: dict[str, Any] = {}
            for mod in modules:
                listed = driver.functions(mod)
                if listed is None:  # an older driver: look aotwheel's own kernels up by name
                    listed = {}
                    for name in KERNELS:
                        try:
                            listed[name] = driver.function(mod, name)
                        except CudaError:
                            pass
                funcs.update(listed)
            ours = set(funcs) <= set(KERNELS)  # aotwheel's kernels module (a user's same-named kernel is not run with our reference)
            rng = np.random.default_rng(seed) if np is not None else None
            for name in funcs:
                if rng is None or not ours or name not in RUNNERS:
                    why = "NumPy is missing: created, not run (pip install numpy)" if rng is None and ours and name in RUNNERS else CREATED
                    res.kernels.append(KernelResult(name, None, 0.0, True, why))
                    continue
                got, ref = RUNNERS[name](driver, funcs[name], rng)
                err = max_error(got, ref)
                res.kernels.append(KernelResult(name, err, TOLERANCE, err <= TOLERANCE))
            if not res.kernels:
                res.error = f"the {len(modules)} module(s) loaded, but they hold no kernel" if listed is not None else \
                    f"none of {', '.join(KERNELS)} is in the fat binaries"
        except (CudaError, OSError) as exc:
            res.error = str(exc)
        finally:
            if driver is not None:
                driver.free_all()
        results.append(res)
    return results, ""
