"""Run-time check: for each device here, will a binary's device code run native, JIT or not at all?

:func:`check` inspects the binary (``aotwheel.inspector``), asks the device probes (or takes
``devices``), applies :mod:`aotwheel.model` and, when a device will JIT-compile, acts on the
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
import os
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aotwheel.errors import AotwheelError
from aotwheel.results import JIT, NATIVE, UNKNOWN, UNSUPPORTED, Verdict
from aotwheel.variables import JIT as JIT_VARIABLE

POLICY_ENV = JIT_VARIABLE.name
POLICIES = ("warn", "error", "ignore")


class JITWarning(RuntimeWarning):
    """A device will compile this package's kernels from SPIR-V at first use (slow first call)."""


class JITCacheNotice(UserWarning):
    """A device's verdict is ``jit``, but this process creates its programs from the native builds
    an earlier JIT left in aotwheel's JIT cache (:mod:`aotwheel.opencl`): no compile happens. Said
    once per (device, binary) instead of a :class:`JITWarning`."""


class JITError(AotwheelError, RuntimeError):
    """``AOTWHEEL_JIT=error`` and a device would JIT-compile the kernels."""


class UnsupportedDeviceError(AotwheelError, RuntimeError):
    """The device being used has neither a native image nor SPIR-V it can compile."""


def jit_policy(value: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The JIT policy: ``value``, else ``AOTWHEEL_JIT`` from ``env`` (default: this process's
    environment), else ``warn``."""
    from aotwheel.variables import jit_policy as policy  # not aotwheel.config: no build settings here

    if value is not None:
        return policy(value)
    return policy(JIT_VARIABLE.given(env))


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
        import importlib.util  # a module name: a path (the CLI's usual argument) needs no finder

        try:
            spec = importlib.util.find_spec(text)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:  # a package: every binary in it
            for location in spec.submodule_search_locations:
                if os.path.isdir(location):
                    return str(location)
        if spec is not None and spec.origin and os.path.exists(spec.origin):
            return spec.origin
    raise AotwheelError(f"{text}: no such file or importable module; pass a path to a .so, wheel or fat binary")


def _given_devices(devices: Any) -> list[Any] | None:
    """The devices named by ``devices`` (or by ``AOTWHEEL_DEVICE`` when it is ``None``), parsed
    before anything reads the binary; ``None`` when the probes must say."""
    from aotwheel.probe.override import from_environment, parse

    if devices is None:
        return from_environment()
    if isinstance(devices, str):
        return parse(devices, source="devices")
    out: list[Any] = []
    for dev in devices:
        out.extend(parse(dev, source="devices") if isinstance(dev, str) else [dev])
    return out


def _probed_devices() -> list[Any]:
    from aotwheel.probe import detect_devices

    return detect_devices(use_override=False)


def _no_device_reason(devices: Any) -> str:
    """Why no device was found: each probe's reason, or that the caller passed none."""
    if devices is not None:
        return "no devices were given"
    from aotwheel.probe import probe_all

    reasons = [f"{r.backend}: {r.reason}" for r in probe_all() if r.reason]
    return "; ".join(reasons) or "no runtime reported a device"


def summarize(verdicts: Sequence[Verdict]) -> str:
    """The package-level answer over every device: ``native on: pvc; JIT on: cpu; unsupported on:
    acm-g11``. A device counts as native when every binary with code for it runs native there;
    binaries for another vendor (rule ``other-vendor``) do not count against it."""
    order: dict[str, int] = {NATIVE: 0, JIT: 1, UNKNOWN: 2, UNSUPPORTED: 3}
    per: dict[str, str] = {}
    for v in verdicts:
        if v.rule in ("unreadable", "no-device"):
            continue
        if v.rule == "other-vendor":
            per.setdefault(v.device, "")
            continue
        now = per.get(v.device) or NATIVE
        per[v.device] = v.verdict if order.get(v.verdict, 2) > order[now] else now
    groups: dict[str, list[str]] = {}
    for dev, verdict in per.items():
        groups.setdefault(verdict or UNSUPPORTED, []).append(dev)
    words = ((NATIVE, "native on"), (JIT, "JIT on"), (UNKNOWN, "unknown on"), (UNSUPPORTED, "unsupported on"))
    return "; ".join(f"{label}: {', '.join(groups[k])}" for k, label in words if groups.get(k)) or "no device checked"


def _no_device_verdicts(files: list[Any], path: str, devices: Any) -> list[Verdict]:
    """One ``unknown`` verdict per file with device code (or for ``path``), saying why."""
    reason = f"no device found, so whether the code runs native or JIT is unknown ({_no_device_reason(devices)})"
    if not files:  # say which: neither devices nor device code, not "one or the other"
        reason = f"no device code in the binary, and no device found ({_no_device_reason(devices)})"
    return [Verdict("no device", None, UNKNOWN, None, reason, "no-device", f.path or path, "none",
                    tuple(f.target_names())) for f in files] or [
        Verdict("no device", None, UNKNOWN, None, reason, "no-device", path, "none")]


def _device_code(report: Any) -> list[Any]:
    """The inspected files that carry device code, those that could not be read, and those with a
    damaged image slot (its only image may be the damaged one: check names it, never "no code")."""
    return [f for f in report.files if f.native_targets or f.ir or f.error or any(" is damaged: " in w for w in f.warnings)]


@functools.lru_cache(maxsize=32)
def _inspected(path: str, size: int, mtime_ns: int) -> tuple[Any, ...]:
    """The files with device code in ``path``. Keyed by size and mtime so a rebuilt or replaced
    binary is read again, while repeated check() calls cost a stat, not an ELF parse."""
    from aotwheel.inspector import inspect

    return tuple(_device_code(inspect(path)))


def _device_code_of(path: str) -> list[Any]:
    st = os.stat(path)
    return list(_inspected(path, st.st_size, st.st_mtime_ns))


def jit_message(verdict: Verdict, kernels: int | None = None, policy: str = "warn", given: str | None = None) -> str:
    """One line a user can act on, in the words of the vendor that owns the device; ``given``:
    how the policy was chosen when not by ``AOTWHEEL_JIT`` (``--jit error``, ``policy='error'``)."""
    from aotwheel import backends

    backend = backends.get(verdict.vendor) if verdict.vendor in backends.names() else backends.get(backends.names()[0])
    return backend.jit_message(verdict, kernels) + sycl_advice(verdict) + policy_hint(policy, given)


def sycl_advice(verdict: Verdict) -> str:
    """``"; <advice>"`` when the binary is loaded by the SYCL runtime (it links libsycl), whose
    persistent cache decides whether the JIT result outlives the process; else ``""``."""
    from aotwheel import syclcache

    path = (verdict.binary or "").split("!")[0]
    if verdict.verdict != JIT or not path or not syclcache.links_sycl(path):
        return ""
    return "; " + syclcache.state().advice()


def policy_hint(policy: str, given: str | None = None) -> str:
    """The tail of a JIT message: how to change the policy that is in force (never the same one),
    where it was set: ``given`` (an option or argument), else ``AOTWHEEL_JIT``."""
    if policy == "error" and given:
        return f"; {given} was given: drop it (or give warn or ignore) to allow the JIT"
    if policy == "error":
        return f"; {POLICY_ENV}=error is set: set {POLICY_ENV}=warn (or ignore) to allow the JIT"
    return f"; set {POLICY_ENV}=ignore to silence or {POLICY_ENV}=error to fail"


def _apply_policy(verdicts: Sequence[Verdict], keys: Sequence[str], kernels: Sequence[int | None], policy: str,
                  given: str | None = None, cached: Callable[[], Mapping[int, Mapping[str, int]]] | None = None) -> None:
    """Warn of (``warn``) or refuse (``error``) each JIT verdict; ``cached()``: per verdict index,
    how many of its binary's modules the JIT cache holds native builds of (asked only when a
    warning is due): a binary served wholly from the cache gets a :class:`JITCacheNotice` instead."""
    if policy == "ignore":
        return
    memo = _memo()
    served: Mapping[int, Mapping[str, int]] | None = None
    for i, (verdict, key, count) in enumerate(zip(verdicts, keys, kernels)):
        if verdict.verdict != JIT and not verdict.jit_kernels:
            continue
        if policy == "error":
            raise JITError(jit_message(verdict, count, policy, given))  # every time: an error policy must keep failing
        ident = (key, os.path.realpath((verdict.binary or "").split("!")[0]) + _member(verdict.binary))
        if ident in memo:
            continue  # warned already: no message to build (it reads the binary's ELF for SYCL advice)
        memo.add(ident)
        if served is None:
            served = cached() if cached is not None else {}
        entry = served.get(i)
        if entry and entry["cached"] == entry["modules"]:
            name = os.path.basename((verdict.binary or "").split("!")[0]) + _member(verdict.binary)
            warnings.warn(f"{name}: {verdict.device} loads it from the JIT cache: the native builds an earlier process made of "
                          f"its {entry['modules']} SPIR-V module(s); nothing is compiled now", JITCacheNotice, stacklevel=3)
            continue
        warnings.warn(jit_message(verdict, count, policy, given), JITWarning, stacklevel=3)  # points at check()'s caller


def _member(binary: str | None) -> str:
    """``!member`` of a wheel member path, else ``""``."""
    _, sep, member = (binary or "").partition("!")
    return sep + member


def _code_by_backend(file: Any) -> dict[str, tuple[list[str], list[str]]]:
    """Each backend's native targets and IR forms in ``file`` (backends with none left out), asked
    once per file: every device's verdict on the file reads this map."""
    from aotwheel import backends

    return {b.name: code for b in backends.all_backends() for code in [b.code_in(file)] if any(code)}


def _cross_vendor(backend: Any, file: Any, code: Mapping[str, tuple[list[str], list[str]]], device: Any, binary: str,
                  compatibility: bool) -> Verdict | None:
    """``unsupported`` (rule ``other-vendor``) when ``file`` carries code only for other vendors
    than ``device``'s (``code``: :func:`_code_by_backend` of ``file``); the device's backend still
    fills in the device's identity and remedy."""
    from aotwheel import backends

    if backend.name in code or not code:
        return None
    from aotwheel.report import ir_name

    have = "; ".join(f"{backends.get(name).title}: {', '.join([*native, *map(ir_name, ir)])}" for name, (native, ir) in code.items())
    own = backend.decide(file, device, binary=binary, compatibility=compatibility)
    reason = f"unsupported: the binary carries only {have}, none of which {own.device} can load"
    # targets: everything the binary carries, so the remedy keeps the other vendors' targets
    v = replace(own, verdict=UNSUPPORTED, image=None, reason=reason, rule="other-vendor", targets=tuple(file.target_names()), remedy="")
    return replace(v, remedy=backend.remedy(v))


def _with_carried(v: Verdict, backend: Any, file: Any, device: Any, binary: str, compatibility: bool) -> Verdict:
    """``v`` with the verdict on the images ``file`` keeps as data and loads itself
    (``FileReport.carried``), decided as for any file; ``v`` itself when it keeps none."""
    carried = getattr(file, "carried", None)
    if carried is None or not carried.images:
        return v
    own = (_cross_vendor(backend, carried, _code_by_backend(carried), device, binary, compatibility)
           or backend.decide(carried, device, binary=binary, compatibility=compatibility))
    return replace(v, carried=own.verdict.value, carried_image=own.image)


def served_elsewhere(verdicts: Sequence[Verdict]) -> frozenset[int]:
    """Indexes of ``other-vendor`` verdicts for a device that another binary of the same package
    serves (its vendor's code is there): "not for this device", not a failure. A package loads
    the library for the device's backend only (bitsandbytes: CUDA, ROCm and XPU builds side by
    side), so its exit status follows the libraries that serve the device."""
    served = {v.device for v in verdicts if v.rule not in ("other-vendor", "unreadable", "no-device")}
    return frozenset(i for i, v in enumerate(verdicts) if v.rule == "other-vendor" and v.device in served)


@dataclass(frozen=True)
class Checked:
    """One :func:`evaluate`: the verdicts and what they were decided from, so that a caller's
    notes (the CLI's JIT-cache state) reuse the inspected files and the devices instead of reading
    the binary or probing again."""

    path: str  # the binary, wheel or directory that was inspected
    verdicts: list[Verdict]
    files: tuple[Any, ...]  # FileReport of every file with device code (or an error), read once
    devices: tuple[Any, ...]  # the devices judged: parsed, or probed once
    elsewhere: frozenset[int]  # :func:`served_elsewhere` of ``verdicts``

    def files_by_binary(self) -> dict[str, Any]:
        """The inspected files by the ``binary`` their verdicts name."""
        return {f.path or self.path: f for f in self.files}


# check(path, devices) and ensure(path) are called by _aot.py files of wheels already published
# (written before aotwheel.aot): keep those positional forms.
def check(module_or_path: Any, devices: Any = None, *, policy: str | None = None,
          compatibility: bool = True, vendor: str | None = None) -> list[Verdict]:
    """Verdicts for every (device, file with device code) pair, applying the JIT policy.

    ``module_or_path``: a module, a module name (``"pkg._kernels"``), or a path to a .so, wheel,
    fat binary, zebin or .spv. ``devices``: ``None`` (probe, or ``AOTWHEEL_DEVICE``), a string in
    ``AOTWHEEL_DEVICE`` syntax (``"pvc,cpu"``, ``"sm_90"``), or probed devices. ``policy`` overrides
    ``AOTWHEEL_JIT``. Every device of every vendor goes through the same loop: the backend that owns
    the device decides, with its driver's rules; a binary that carries only another vendor's code
    is ``unsupported`` (rule ``other-vendor``). Raises :class:`JITError` under policy ``error``;
    never raises for an unsupported device (see :func:`ensure`). With no device at all (no GPU, no
    driver, a broken runtime) it returns ``unknown`` verdicts (rule ``no-device``) whose reason
    names each probe's problem. A malformed ``devices`` string fails before the binary is read.

    ``vendor`` (``"nvidia"``, ``"intel"``) narrows the check to that backend: its devices only
    (with ``devices=None``, those the probes report) and the files that carry its code; pairs
    with no such device or file give no verdict.
    """
    return evaluate(module_or_path, devices, policy=policy, compatibility=compatibility, vendor=vendor).verdicts


def evaluate(module_or_path: Any, devices: Any = None, *, policy: str | None = None,
             compatibility: bool = True, vendor: str | None = None, policy_given: str | None = None) -> Checked:
    """:func:`check`, returning the verdicts with the inspected files and the devices (:class:`Checked`).
    ``policy_given``: how ``policy`` was chosen, for the JIT error's advice (``--jit error``).

    Order: the policy and ``devices`` (or ``AOTWHEEL_DEVICE``) are parsed first, so that a typo
    fails before anything reads the binary; then the binary is inspected, once; the probes run
    last, and only when no devices were named."""
    from aotwheel import backends

    mode = jit_policy(policy)
    given = _given_devices(devices)
    path = resolve_binary(module_or_path)
    files = _device_code_of(path)
    found = given if given is not None else _probed_devices()  # probed after the cheap failures
    inspected = tuple(files)
    code = {id(f): _code_by_backend(f) for f in files if not f.error}  # each file's code per backend, asked once
    if vendor is not None:
        owner = backends.get(vendor)
        files = [f for f in files if vendor in code.get(id(f), {})]
        found = [d for d in found if owner.owns_device(d)]
        if not found or not files:
            return Checked(path, [], inspected, tuple(found), frozenset())
    if not found:
        return Checked(path, _no_device_verdicts(files, path, devices), inspected, (), frozenset())
    verdicts: list[Verdict] = []
    keys: list[str] = []
    counts: list[int | None] = []
    for f in files:
        if f.error:  # said once, not per device: no verdict can be given for it
            verdicts.append(Verdict("no device", None, UNKNOWN, None, f"unreadable: {f.error}", "unreadable", f.path, "none"))
    readable = [f for f in files if not f.error]
    for dev in found:
        backend = backends.for_device(dev)
        for f in readable:
            binary = f.path or path
            verdicts.append(_with_carried(_cross_vendor(backend, f, code[id(f)], dev, binary, compatibility)
                                          or backend.decide(f, dev, binary=binary, compatibility=compatibility), backend, f, dev, binary, compatibility))
            keys.append(_device_key(dev, verdicts[-1]))
            counts.append(f.kernels)
    def cached() -> Mapping[int, Mapping[str, int]]:  # only OpenCL-probed devices have entries (aotwheel.opencl's cache)
        from aotwheel.opencl import cached_native_builds

        return cached_native_builds(verdicts, found, {f.path or path: f for f in inspected})

    _apply_policy(verdicts, keys, counts, mode, policy_given or (None if policy is None else f"policy={policy!r}"), cached)
    return Checked(path, verdicts, inspected, tuple(found), served_elsewhere(verdicts))


def _device_key(device: Any, verdict: Verdict) -> str:
    """Identity to warn once per device: the verdict's backend's (``capabilities.device_key``), else
    the probe's key."""
    from aotwheel import backends

    key = backends.get(verdict.vendor).capabilities.device_key if verdict.vendor in backends.names() else None
    own = key(device) if key is not None else None
    return str(own if own is not None else getattr(device, "key", None) or verdict.device)


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
        raise UnsupportedDeviceError(
            f"device {device!r} is not among the devices checked ({', '.join(sorted({v.device for v in verdicts})) or 'none found'}); "
            "pass devices= or set AOTWHEEL_DEVICE"
        )
    bad = [v for v in chosen if v.verdict == UNSUPPORTED]
    runnable = [v for v in chosen if v.verdict in (NATIVE, JIT)]
    if bad and (device is not None or not runnable):
        v = bad[0]
        fix = v.remedy or "rebuild with JIT fallback on (SPIR-V kept)"
        embedded = ", ".join(v.targets) or "none"
        raise UnsupportedDeviceError(
            f"{os.path.basename((v.binary or '').split('!')[-1])}: {v.device} cannot run this device code (embedded: {embedded}; {v.reason}); {fix}"
        )
    return verdicts
