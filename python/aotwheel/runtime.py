"""Run-time check: for each device here, will a binary's device code run native, JIT or not at all?

:func:`check` inspects the binary (``aotwheel.inspector``), asks the device probes (or takes
``devices``), applies :mod:`aotwheel.verdict` and, when a device will JIT-compile, acts on the
``AOTWHEEL_JIT`` policy once per (device, binary) per process:

- ``warn`` (default): a :class:`JITWarning` (a ``RuntimeWarning``; filter it with
  ``warnings.filterwarnings("ignore", category=aotwheel.JITWarning)``);
- ``error``: :class:`JITError`;
- ``ignore``: nothing.

An unsupported device never raises from :func:`check`; :func:`ensure` raises
:class:`UnsupportedDeviceError` when the device that is about to be used cannot run the code.
When no device is found (no GPU, no driver, a broken loader, a driver that returns errors),
:func:`check` returns one ``unknown`` verdict per binary whose reason quotes every probe's answer.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import types
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from aotwheel.errors import AotwheelError
from aotwheel.verdict import JIT, NATIVE, UNKNOWN, UNSUPPORTED, Verdict, decide, target_names

POLICY_ENV = "AOTWHEEL_JIT"
POLICIES = ("warn", "error", "ignore")


class JITWarning(RuntimeWarning):
    """A device will compile this package's kernels from SPIR-V at first use (slow first call)."""


class JITError(AotwheelError, RuntimeError):
    """``AOTWHEEL_JIT=error`` and a device would JIT-compile the kernels."""


class UnsupportedDeviceError(AotwheelError, RuntimeError):
    """The device being used has neither a native image nor SPIR-V it can compile."""


def jit_policy(value: str | None = None) -> str:
    """The JIT policy: ``value``, else ``$AOTWHEEL_JIT``, else ``warn``."""
    text = (value if value is not None else os.environ.get(POLICY_ENV, "")).strip().lower() or "warn"
    if text not in POLICIES:
        raise AotwheelError(f"{POLICY_ENV}={text!r} is not a policy; use one of warn, error, ignore")
    return text


@functools.lru_cache(maxsize=1)
def _memo() -> set[tuple[str, str]]:
    """(device key, binary path) pairs already reported in this process (created on first use)."""
    return set()


def reset_memo() -> None:
    """Forget which JIT warnings were given (for tests and long-lived processes that reload)."""
    _memo().clear()


def resolve_binary(module_or_path: Any) -> str:
    """A file path for a module object, a module name (found, not imported) or a path."""
    if isinstance(module_or_path, types.ModuleType):
        path = getattr(module_or_path, "__file__", None)
        if not path:
            raise AotwheelError(f"module {module_or_path.__name__} has no file; pass the path of its extension instead")
        return path
    text = os.fspath(module_or_path)
    if os.path.exists(text):
        return text
    if all(part.isidentifier() for part in text.split(".")):
        try:
            spec = importlib.util.find_spec(text)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and os.path.exists(spec.origin):
            return spec.origin
    raise AotwheelError(f"{text}: no such file or importable module; pass a path to a .so, wheel or fat binary")


def _devices(devices: Any) -> list[Any]:
    from aotwheel.probe import detect_devices
    from aotwheel.probe.override import parse

    if devices is None:
        return detect_devices()
    if isinstance(devices, str):
        return parse(devices, source="devices")
    out: list[Any] = []
    for dev in devices:
        out.extend(parse(dev, source="devices") if isinstance(dev, str) else [dev])
    return out


def _no_device_reason(devices: Any) -> str:
    """Why no device was found: each probe's reason, or that the caller passed none."""
    if devices is not None:
        return "no devices were given"
    from aotwheel.probe import probe_all

    reasons = [f"{r.backend}: {r.reason}" for r in probe_all() if r.reason]
    return "; ".join(reasons) or "no runtime reported a device"


def _no_device_verdicts(files: list[Any], path: str, devices: Any) -> list[Verdict]:
    """One ``unknown`` verdict per file with device code (or for ``path``), saying why."""
    reason = f"no device found, so whether the code runs native or JIT is unknown ({_no_device_reason(devices)})"
    return [Verdict("no device", None, UNKNOWN, None, reason, "no-device", f.path or path, "none",
                    target_names(f.native_targets)) for f in files] or [
        Verdict("no device", None, UNKNOWN, None, reason, "no-device", path, "none")]


def _device_code(report: Any) -> list[Any]:
    """The inspected files that carry device code."""
    return [f for f in report.files if f.native_targets or f.ir]


@functools.lru_cache(maxsize=32)
def _inspected(path: str, size: int, mtime_ns: int) -> tuple[Any, ...]:
    """The files with device code in ``path``. Keyed by size and mtime so a rebuilt or replaced
    binary is read again, while repeated check() calls cost a stat, not an ELF parse."""
    from aotwheel.inspector import inspect

    return tuple(_device_code(inspect(path)))


def _device_code_of(path: str) -> list[Any]:
    st = os.stat(path)
    return list(_inspected(path, st.st_size, st.st_mtime_ns))


def covering_devlist(verdict: Verdict) -> str | None:
    """``USE_AOT_DEVLIST`` value that adds the verdict's device to the binary's targets."""
    from aotwheel.catalog import load_catalog

    dev = load_catalog().by_ip(verdict.ip) if verdict.ip else None
    if dev is None:
        return None
    names = [n for n in verdict.targets if n]
    if dev.name not in names:
        names.append(dev.name)
    return ",".join(names)


def jit_message(verdict: Verdict, kernels: int | None = None, policy: str = "warn") -> str:
    """One line a user can act on: which device, what is embedded, what to rebuild with."""
    what = f"{kernels} kernel{'s' if kernels != 1 else ''}" if kernels else "its kernels"
    binary = os.path.basename(verdict.binary or "") or "the binary"
    embedded = ", ".join(verdict.targets) or "none (SPIR-V only)"
    line = f"{binary}: {verdict.device} will JIT-compile {what} from SPIR-V at first use (embedded native targets: {embedded})"
    devlist = covering_devlist(verdict)
    if devlist:
        from aotwheel.toolchain.ocloc import build_note

        line += f"; rebuild with USE_AOT_DEVLIST={devlist}{build_note(devlist.split(','))} to ship native code for it"
    elif verdict.kind == "cpu":
        line += "; CPU devices always compile SPIR-V, no USE_AOT_DEVLIST covers them"
    return line + policy_hint(policy)


def policy_hint(policy: str) -> str:
    """The tail of a JIT message: how to change the policy that is in force (never the same one)."""
    if policy == "error":
        return f"; {POLICY_ENV}=error is set: set {POLICY_ENV}=warn (or ignore) to allow the JIT"
    return f"; set {POLICY_ENV}=ignore to silence or {POLICY_ENV}=error to fail"


def _apply_policy(verdicts: Iterable[Verdict], keys: Sequence[str], kernels: Sequence[int | None], policy: str) -> None:
    if policy == "ignore":
        return
    memo = _memo()
    for verdict, key, count in zip(verdicts, keys, kernels):
        if verdict.verdict != JIT:
            continue
        ident = (key, os.path.realpath(verdict.binary or ""))
        message = jit_message(verdict, count, policy)
        if policy == "error":
            raise JITError(message)  # every time: an error policy must keep failing
        if ident in memo:
            continue
        memo.add(ident)
        warnings.warn(message, JITWarning, stacklevel=3)  # points at check()'s caller


def check(module_or_path: Any, devices: Any = None, *, policy: str | None = None,
          compatibility: bool = True) -> list[Verdict]:
    """Verdicts for every (device, file with device code) pair, applying the JIT policy.

    ``module_or_path``: a module, a module name (``"pkg._kernels"``), or a path to a .so, wheel,
    fat binary, zebin or .spv. ``devices``: ``None`` (probe, or ``AOTWHEEL_DEVICE``), a string in
    ``AOTWHEEL_DEVICE`` syntax (``"pvc,cpu"``), or probed devices. ``policy`` overrides
    ``AOTWHEEL_JIT``. Raises :class:`JITError` under policy ``error``; never raises for an
    unsupported device (see :func:`ensure`). With no device at all (no GPU, no driver, a broken
    runtime) it returns ``unknown`` verdicts (rule ``no-device``) whose reason names each probe's
    problem.
    """
    mode = jit_policy(policy)
    path = resolve_binary(module_or_path)
    files = _device_code_of(path)
    found = _devices(devices)
    if not found:
        return _no_device_verdicts(files, path, devices)
    verdicts: list[Verdict] = []
    keys: list[str] = []
    counts: list[int | None] = []
    # NVIDIA GPUs (CUDA probe or sm_XY override) follow NVIDIA's rules on the .nv_fatbin images.
    nvidia = [d for d in found if str(getattr(d, "catalog", "") or "").startswith("sm_") and str(getattr(d, "vendor", "")).lower() == "nvidia"]
    for dev in found:
        if dev in nvidia:
            continue
        for f in files:
            verdicts.append(decide(f.native_targets, f.ir, dev, binary=f.path or path, compatibility=compatibility))
            keys.append(getattr(dev, "key", None) or verdicts[-1].device)
            counts.append(getattr(f, "kernels", None))
    _apply_policy(verdicts, keys, counts, mode)
    if nvidia:
        from aotwheel.cuda_check import check_cuda

        verdicts += check_cuda(path, nvidia, policy=mode)
    return verdicts


def _matches(verdict: Verdict, device: Any) -> bool:
    if isinstance(device, str):
        low = device.lower()
        return low in (verdict.device.lower(), (verdict.ip or "").lower()) or verdict.device.lower().startswith(low + " ")
    return verdict.device == getattr(device, "label", None) and verdict.ip == getattr(device, "ip", None)


def ensure(module_or_path: Any, device: Any = None, *, devices: Any = None, policy: str | None = None) -> list[Verdict]:
    """:func:`check`, then raise :class:`UnsupportedDeviceError` if the code cannot run on
    ``device`` (a probed device, or its label/IP) or, with ``device=None``, on any device here."""
    verdicts = check(module_or_path, devices, policy=policy)
    chosen = [v for v in verdicts if _matches(v, device)] if device is not None else verdicts
    if device is not None and not chosen:
        raise UnsupportedDeviceError(f"device {device!r} is not among the devices checked ({', '.join(sorted({v.device for v in verdicts})) or 'none found'}); pass devices= or set AOTWHEEL_DEVICE")
    bad = [v for v in chosen if v.verdict == UNSUPPORTED]
    runnable = [v for v in chosen if v.verdict in (NATIVE, JIT)]
    if bad and (device is not None or not runnable):
        v = bad[0]
        devlist = covering_devlist(v)
        from aotwheel.toolchain.ocloc import build_note

        fix = f"rebuild with USE_AOT_DEVLIST={devlist}{build_note(devlist.split(','))} (or keep JIT fallback on)" if devlist else "rebuild with JIT fallback on (SPIR-V kept)"
        raise UnsupportedDeviceError(f"{os.path.basename(v.binary or '')}: {v.device} cannot run this device code (embedded: {', '.join(v.targets) or 'none'}, no SPIR-V); {fix}")
    return verdicts
