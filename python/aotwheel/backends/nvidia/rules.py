"""The run-time check for NVIDIA GPUs: native / JIT / unsupported for a binary's ``.nv_fatbin``.

The same contract as :func:`aotwheel.runtime.check` for Intel devices -- one
:class:`aotwheel.results.Verdict` per (NVIDIA GPU, file with CUDA images), the same
``AOTWHEEL_JIT`` policy (``warn`` -> :class:`aotwheel.runtime.JITWarning` once per device and
binary per process, ``error`` -> :class:`aotwheel.runtime.JITError`, ``ignore``) -- with NVIDIA's
rules from :func:`aotwheel.backends.nvidia.targets.cuda_verdict`, called by the backend from
:func:`aotwheel.runtime.check`, the one loop for every vendor (``check(..., vendor="nvidia")`` is
the NVIDIA-only view; ``aotwheel check --device sm_90`` the command). ``CUDA_FORCE_PTX_JIT=1`` is
honoured because the driver honours it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from aotwheel.backends.nvidia import NVIDIA
from aotwheel.backends.nvidia.targets import DEVICE_ARCHS, CudaTarget, cuda_verdict, parse_cuda_target, target_from_name
from aotwheel.results import Verdict

TYPE_CHECKING = False  # not typing's
if TYPE_CHECKING:
    from typing import Any

    from aotwheel.report import FileReport

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
    import zipfile  # here, where a path is read: the verdicts on an inspected file read none

    from aotwheel.backends.nvidia.fatbin import read_fatbin

    text = os.fspath(path)
    if zipfile.is_zipfile(text):
        return _wheel_files(text)
    fat = read_fatbin(text)
    if fat is None or not fat.entries:
        return []
    return [_as_file(text, fat)]


def _as_file(name: str, fat) -> CudaFile:  # type: ignore[no-untyped-def]
    targets = tuple(
        sorted(
            {
                CudaTarget(e.arch, e.kind if e.kind in ("cubin", "ptx") else "cubin", e.arch_specific, e.family_specific)
                for e in fat.entries
                if e.kind in ("cubin", "ptx")
            }
        )
    )
    return CudaFile(name, targets, any(e.kind == "ptx" and e.compressed for e in fat.entries))


def _wheel_files(wheel: str) -> list[CudaFile]:
    import tempfile
    import zipfile
    from pathlib import Path

    from aotwheel.backends.nvidia.fatbin import read_fatbin

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
        from aotwheel.backends.nvidia.probe import probe_cuda

        return [NvidiaDevice(f"{d.name} (cuda:{d.index})", d.cc, f"cuda:{d.index}:{d.arch}") for d in probe_cuda().devices]
    if isinstance(devices, NvidiaDevice):
        return [devices]
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
            label = dev.name if getattr(dev, "backend", "") == "cuda" else str(getattr(dev, "label", dev.name))
            out.append(NvidiaDevice(label, t.cc, f"{getattr(dev, 'backend', 'cuda')}:{getattr(dev, 'index', 0)}:{dev.catalog}"))
    return out


def decide_cuda(file: CudaFile, device: NvidiaDevice, *, force_ptx_jit: bool | None = None) -> Verdict:
    """One :class:`Verdict` in the same shape the Intel rules give (``ip`` holds ``cc X.Y``, ``version``
    the compute capability itself)."""
    if force_ptx_jit is None:
        force_ptx_jit = os.environ.get("CUDA_FORCE_PTX_JIT", "") not in ("", "0")
    v = cuda_verdict(file.targets, device.cc, force_ptx_jit=force_ptx_jit)
    return Verdict(
        device=device.label,
        ip="cc %d.%d" % device.cc,
        version=device.cc,
        verdict=v.verdict,
        image=v.image.name if v.image else None,
        reason=v.reason,
        rule=v.rule,
        binary=file.path,
        kind="gpu",
        targets=tuple(t.name for t in file.targets),
        vendor=NVIDIA,
    )


def file_of(file: FileReport, binary: str) -> CudaFile:
    """The CUDA view of an inspected binary: its cubins (``native_targets`` of vendor nvidia)
    and PTX (``ir`` forms ``ptx compute_XY``)."""
    names = [t.name for t in file.native_targets if t.vendor == NVIDIA and t.name]
    names += [k.removeprefix("ptx ") for k in file.ir if k.startswith("ptx ")]
    targets = tuple(sorted({t for n in names if (t := target_from_name(n)) is not None}))
    return CudaFile(binary, targets, False)


def device_of(device: Any) -> NvidiaDevice:
    """An :class:`NvidiaDevice` for a probed device (``catalog`` ``sm_XY``) or a CUDA probe's device."""
    if isinstance(device, NvidiaDevice):
        return device
    [gpu] = nvidia_devices([device])
    return gpu
