"""The run-time check for NVIDIA GPUs: native / JIT / unsupported for a binary's ``.nv_fatbin``.

The same contract as :func:`aotwheel.runtime.check` for Intel devices -- one
:class:`aotwheel.verdict.Verdict` per (NVIDIA GPU, file with CUDA images), the same
``AOTWHEEL_JIT`` policy (``warn`` -> :class:`aotwheel.runtime.JITWarning` once per device and
binary per process, ``error`` -> :class:`aotwheel.runtime.JITError`, ``ignore``) -- with NVIDIA's
rules from :func:`aotwheel.cuda_targets.cuda_verdict`. ``CUDA_FORCE_PTX_JIT=1`` is honoured
because the driver honours it.

    python -m aotwheel.cuda_check BINARY [--json] [--device sm_90,...]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aotwheel.cuda_targets import DEVICE_ARCHS, CudaTarget, cuda_verdict, parse_cuda_target
from aotwheel.verdict import JIT, Verdict

_MAX_MEMBER = 4 << 30  # a wheel member larger than this is not read


@dataclass(frozen=True)
class CudaFile:
    """One file (or wheel member) with CUDA images."""

    path: str
    targets: tuple[CudaTarget, ...]
    ptx_compressed: bool


@dataclass(frozen=True)
class NvidiaDevice:
    """A GPU to judge against: from the probe, or assumed (``--device sm_90``)."""

    name: str
    cc: tuple[int, int]
    key: str

    @property
    def label(self) -> str:
        return self.name


def cuda_files(path: str | os.PathLike[str]) -> list[CudaFile]:
    """Every file with a fat binary in ``path``: the file itself, or the ``.so`` members of a wheel."""
    from aotwheel.formats.cuda import read_fatbin

    text = os.fspath(path)
    if zipfile.is_zipfile(text):
        return _wheel_files(text)
    fat = read_fatbin(text)
    if fat is None or not fat.entries:
        return []
    return [_as_file(text, fat)]


def _as_file(name: str, fat) -> CudaFile:  # type: ignore[no-untyped-def]
    targets = tuple(sorted({CudaTarget(e.arch, e.kind if e.kind in ("cubin", "ptx") else "cubin", e.arch_specific, e.family_specific) for e in fat.entries if e.kind in ("cubin", "ptx")}))
    return CudaFile(name, targets, any(e.kind == "ptx" and e.compressed for e in fat.entries))


def _wheel_files(wheel: str) -> list[CudaFile]:
    from aotwheel.formats.cuda import read_fatbin

    out: list[CudaFile] = []
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory(prefix="aotwheel-cuda-") as tmp:
        for info in zf.infolist():
            base = info.filename.rsplit("/", 1)[-1]
            if not (base.endswith(".so") or ".so." in base) or info.file_size > _MAX_MEMBER:
                continue
            dest = Path(tmp, f"{len(out)}_{base}")
            with zf.open(info) as src, open(dest, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            fat = read_fatbin(dest)
            if fat is not None and fat.entries:
                out.append(_as_file(f"{wheel}!{info.filename}", fat))
            dest.unlink()
    return out


def nvidia_devices(devices: Any = None) -> list[NvidiaDevice]:
    """The NVIDIA GPUs to judge: ``devices`` (``"sm_90,sm_80"``, CudaDevice objects, or probed
    devices whose ``catalog`` is ``sm_XY``), else the CUDA driver probe."""
    if devices is None:
        from aotwheel.probe.cuda import probe_cuda

        return [NvidiaDevice(f"{d.name} (cuda:{d.index})", d.cc, f"cuda:{d.index}:{d.arch}") for d in probe_cuda().devices]
    if isinstance(devices, str):
        devices = [t for t in devices.replace(";", ",").split(",") if t.strip()]
    out: list[NvidiaDevice] = []
    for dev in devices:
        if isinstance(dev, str):
            t = parse_cuda_target(dev.strip(), supported=DEVICE_ARCHS)
            out.append(NvidiaDevice(f"assumed {t.name}", t.cc, f"assumed:{t.arch}"))
        elif hasattr(dev, "cc"):
            out.append(NvidiaDevice(str(getattr(dev, "name", "GPU")), tuple(dev.cc), f"cuda:{getattr(dev, 'index', 0)}:{dev.cc}"))  # type: ignore[arg-type]
        elif str(getattr(dev, "vendor", "")).lower() == "nvidia" and str(getattr(dev, "catalog", "")).startswith("sm_"):
            t = parse_cuda_target(dev.catalog, supported=DEVICE_ARCHS)
            out.append(NvidiaDevice(str(getattr(dev, "label", dev.name)), t.cc, str(getattr(dev, "key", dev.catalog))))
    return out


def decide_cuda(file: CudaFile, device: NvidiaDevice, *, force_ptx_jit: bool | None = None) -> Verdict:
    """One :class:`Verdict` in the same shape the Intel rules give (``ip`` holds ``cc X.Y``)."""
    if force_ptx_jit is None:
        force_ptx_jit = os.environ.get("CUDA_FORCE_PTX_JIT", "") not in ("", "0")
    v = cuda_verdict(file.targets, device.cc, force_ptx_jit=force_ptx_jit)
    return Verdict(
        device=device.label,
        ip="cc %d.%d" % device.cc,
        verdict=v.verdict,
        image=v.image.name if v.image else None,
        reason=v.reason,
        rule=v.rule,
        binary=file.path,
        kind="gpu",
        targets=tuple(t.name for t in file.targets),
    )


def jit_message(verdict: Verdict, policy: str = "warn") -> str:
    """One line a user can act on (the NVIDIA wording of :func:`aotwheel.runtime.jit_message`)."""
    binary = os.path.basename((verdict.binary or "").split("!")[-1]) or "the binary"
    cubins = ", ".join(t for t in verdict.targets if t.startswith("sm_")) or "none (PTX only)"
    line = f"{binary}: {verdict.device} ({verdict.ip}) will JIT-compile its kernels from {verdict.image} PTX at first use (embedded cubins: {cubins})"
    cc = (verdict.ip or "").removeprefix("cc ").split(".")
    if len(cc) == 2 and all(p.isdigit() for p in cc):
        names = [t for t in verdict.targets if t.startswith("sm_")] + [f"sm_{cc[0]}{cc[1]}", "ptx"]
        line += f"; rebuild with USE_AOT_DEVLIST={','.join(dict.fromkeys(names))} to ship native code for it"
    from aotwheel.runtime import policy_hint

    return line + policy_hint(policy)


@functools.lru_cache(maxsize=1)
def _memo() -> set[tuple[str, str]]:
    return set()


def apply_policy(verdicts: Iterable[Verdict], keys: Sequence[str], policy: str) -> None:
    """``AOTWHEEL_JIT`` for CUDA verdicts: warn once per (device, binary), or raise, or nothing."""
    from aotwheel.runtime import JITError, JITWarning

    if policy == "ignore":
        return
    for verdict, key in zip(verdicts, keys):
        if verdict.verdict != JIT:
            continue
        message = jit_message(verdict, policy)
        if policy == "error":
            raise JITError(message)
        ident = (key, verdict.binary or "")
        if ident not in _memo():
            _memo().add(ident)
            warnings.warn(message, JITWarning, stacklevel=3)


def check_cuda(module_or_path: Any, devices: Any = None, *, policy: str | None = None) -> list[Verdict]:
    """Verdicts for every (NVIDIA GPU, file with CUDA images) pair, applying the JIT policy.

    ``devices``: ``None`` (probe the CUDA driver), ``"sm_90,sm_80"`` (assume these), or device
    objects. Never raises for an unsupported GPU; raises ``JITError`` under policy ``error``.
    """
    from aotwheel.runtime import jit_policy, resolve_binary

    mode = jit_policy(policy)
    path = resolve_binary(module_or_path)
    files = cuda_files(path)
    gpus = nvidia_devices(devices)
    verdicts = [decide_cuda(f, d) for d in gpus for f in files]
    apply_policy(verdicts, [d.key for d in gpus for _ in files], mode)
    return verdicts


def main(argv: list[str] | None = None) -> int:
    from aotwheel.errors import AotwheelError

    ap = argparse.ArgumentParser(prog="python -m aotwheel.cuda_check", description="native, JIT or unsupported on this machine's NVIDIA GPUs")
    ap.add_argument("binary")
    ap.add_argument("--device", help="assume these GPUs instead of probing: sm_90,sm_80")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--jit", choices=("warn", "error", "ignore"))
    args = ap.parse_args(argv)
    try:
        verdicts = check_cuda(args.binary, args.device, policy=args.jit)
    except AotwheelError as exc:
        print(f"aotwheel: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"binary": args.binary, "verdicts": [v.to_dict() for v in verdicts]}, indent=2))
    else:
        if not verdicts:
            print(f"{args.binary}: no NVIDIA GPU found, or no CUDA images in the binary")
        for v in verdicts:
            print(f"{v.device} ({v.ip}): {v.verdict} {v.image or ''} [rule {v.rule}] - {v.reason}")
    return 1 if any(v.verdict == "unsupported" for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
