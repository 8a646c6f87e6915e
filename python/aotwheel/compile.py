"""SPIR-V -> native device code for a device list, outside CMake (Triton / Inductor kernels):
:func:`compile_spirv` (``aotwheel.compile_spirv``) and the core's half of ``aotwheel compile``.

The backend that compiles SPIR-V ahead of time (:func:`aotwheel.backends.spirv_compiler`) builds;
the device list is resolved here, by the core's resolver, which that backend is handed
(:func:`resolve_devlist`) and calls once the input checked out: the resolver sits above the
backends, so no backend imports it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from aotwheel.buildsteps.cache import DeviceCodeCache
    from aotwheel.devlist import DevList

DevlistLike = Union[str, "DevList"]


def resolve_devlist(devlist: DevlistLike, jit_fallback: bool = True) -> DevList:
    """``devlist`` resolved (a :class:`~aotwheel.devlist.DevList` as it is): an empty text means
    unset, as everywhere (the settings' device list); each backend's toolchain table is asked as
    ``aotwheel resolve`` asks it (its ``capabilities.toolchain.table``)."""
    from aotwheel.devlist import DevList, resolve

    if isinstance(devlist, DevList):
        return devlist
    if isinstance(devlist, str) and not devlist.strip():
        from aotwheel.config import read

        devlist = read().devlist
    tables: dict[str, object] = {}
    if isinstance(devlist, str):  # anything else: the resolver's own one-line error
        from aotwheel import backends

        tables = {name: t for name, tc in backends.toolchains() if (t := tc.table(devlist, {})) is not None}
    return resolve(devlist, jit_fallback=jit_fallback, tables=tables)


def compile_spirv(spirv: bytes, devlist: DevlistLike, *, options: Sequence[str] | str = (), jit_fallback: bool = True,
                  grf: str = "default", jobs: int | None = None, cache: DeviceCodeCache | None = None,
                  field_defaults: bool = True) -> bytes:
    """Compile a SPIR-V module for every device of ``devlist`` and return an ocloc fat binary.

    The result is what ``ocloc compile -file k.spv -spirv_input -device a,b,… -options …`` writes:
    one ``64.<ip>`` member per device, in devlist order, plus ``generic_ir`` (the SPIR-V, for JIT on
    other devices) unless ``jit_fallback`` is off or the devlist says ``no-jit``. ``options`` are
    ocloc ``-options`` (a string or a sequence joined with spaces), added after the options IPEX
    and torch-xpu-ops pass (``-cl-intel-enable-auto-large-GRF-mode
    -cl-poison-unsupported-fp64-kernels -cl-intel-greater-than-4GB-buffer-required``) unless
    ``field_defaults`` is off: a kernel using double then builds for a device without fp64, with
    its fp64 kernels poisoned there. ``grf`` is ``"default"`` (the
    options as given), ``"small"`` (``-cl-intel-128-GRF-per-thread``), ``"large"``
    (``-cl-intel-256-GRF-per-thread``) or ``"auto"`` (large only where the default build spilled
    and more registers are possible). Builds run one ocloc per device, ``jobs`` at a time
    (default: CPU count), through the device-code cache (``AOTWHEEL_CACHE_DIR``).

    Raises :class:`~aotwheel.errors.AotwheelError` (one line) for bad SPIR-V, an unknown device,
    a device this ocloc cannot build, or a failed build.
    """
    return compile_spirv_report(spirv, devlist, options=options, jit_fallback=jit_fallback, grf=grf,
                                jobs=jobs, cache=cache, field_defaults=field_defaults).fatbinary


def compile_spirv_report(spirv: bytes, devlist: DevlistLike, **options: Any) -> Any:
    """:func:`compile_spirv` with the backend's per-device report (and binaries): its
    ``CompileResult`` (``fatbinary``, ``natives``, ``to_dict()``)."""
    from aotwheel import backends

    module = importlib.import_module(backends.spirv_compiler())
    return module.compile_spirv_report(spirv, devlist, resolve=resolve_devlist, **options)


def compile_triton(kernels: Any, devlist: DevlistLike | None = None, *, options: Sequence[str] | str = (), grf: str = "auto",
                   jit_fallback: bool = True, jobs: int | None = None, cache: DeviceCodeCache | None = None,
                   strict_target: bool = False, output: str | None = None) -> list[Any]:
    """Compile Triton kernels as Triton leaves them, for a packaging script.

    ``kernels``: a path (a kernel's ``.spv`` with its metadata ``.json`` beside it, a cache entry,
    or a folder of them such as ``$TRITON_CACHE_DIR``) or a list of such paths. Each kernel is
    built with its own ``build_flags`` (then ``options``; no field defaults) for ``devlist``, or
    for the GPU it was specialised for when ``devlist`` is None; a listed device other than that
    GPU warns, or raises with ``strict_target``. Returns one build per kernel (``kernel``,
    ``result.fatbinary``, ``to_dict()``); with ``output``, also writes ``output/<hash>/<name>.ar``
    per kernel and ``output/aotwheel-triton.json`` (the manifest), all or nothing.
    """
    from pathlib import Path

    from aotwheel import backends

    module = importlib.import_module(backends.spirv_compiler())
    return list(module.compile_triton(kernels if isinstance(kernels, (list, tuple)) else [kernels], devlist,
                                      resolve=resolve_devlist, options=options if isinstance(options, str) else " ".join(options),
                                      grf=grf, jit_fallback=jit_fallback, jobs=jobs, cache=cache, strict_target=strict_target,
                                      output=None if output is None else str(Path(output))))
