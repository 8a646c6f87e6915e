"""Triton-XPU kernels as Triton leaves them: ``<name>.spv`` beside its metadata ``<name>.json``, in
a ``<hash>/`` folder of Triton's cache (``TRITON_CACHE_DIR``, default ``~/.triton/cache``).

Triton's Intel backend writes into the metadata what the kernel is built with and for:
``build_flags`` (the ocloc ``-options`` its launcher passes: ``-cl-intel-256-GRF-per-thread`` for
``grf_mode="large"``, ``-cl-intel-128-GRF-per-thread`` for ``"small"``, ``-cl-intel-enable-auto-large-GRF-mode``
for ``"auto"``, empty by default), ``grf_mode``, ``threads_per_warp``, and ``target``: the GPU the
SPIR-V was specialised for (``arch`` is ``torch.xpu.get_device_capability()``; its ``architecture``
is SYCL's ``ext_oneapi_architecture`` value, whose middle 32 bits are the GPU's IP version, e.g.
``0x030f000700`` for pvc 12.60.7). Triton-XPU 3.3's SPIR-V uses that device's sub-group size, DPAS
and 2D block loads where it has them, so it is specialised code, not portable SPIR-V.

Standard library only; no Triton import: the metadata JSON is all it reads.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aotwheel.errors import AotwheelError, DevlistError

if TYPE_CHECKING:
    from aotwheel.backends.intel.buildsteps.compile import CompileResult, Resolver
    from aotwheel.buildsteps.cache import DeviceCodeCache

_MAX_METADATA = 4 << 20  # a Triton metadata JSON is a few KiB; anything larger is not one
_MAX_KERNELS = 100_000
_IP = re.compile(r"^\d+\.\d+\.\d+$")


class TargetMismatchWarning(UserWarning):
    """A listed device is not the GPU a Triton kernel's SPIR-V was specialised for."""


@dataclass(frozen=True)
class TritonKernel:
    """One Triton-XPU kernel: its SPIR-V file and what its metadata says."""

    name: str
    spv: Path
    metadata: Path
    key: str  # the cache entry's folder name (Triton's hash), or the file stem outside a cache
    build_flags: str
    grf_mode: str  # "small" | "large" | "auto" | "default" (Triton's tuple default)
    threads_per_warp: int | None
    target_ip: str | None  # "12.60.7": the GPU the SPIR-V was specialised for
    target_name: str  # the metadata's device name ("Intel(R) Data Center GPU Max 1550"), or ""

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "key": self.key, "spv": str(self.spv), "metadata": str(self.metadata),
                "build_flags": self.build_flags, "grf_mode": self.grf_mode, "threads_per_warp": self.threads_per_warp,
                "target_ip": self.target_ip, "target_name": self.target_name}


def target_ip(arch: object) -> str | None:
    """The IP version in Triton's ``target.arch`` (``architecture``, else ``version``), or None."""
    if not isinstance(arch, dict):
        return None
    value = arch.get("architecture")
    # SYCL's layout 0xAA BBBB CCCCCCCC DD: AA 00 is an Intel GPU, CCCCCCCC its GMDID (IP version)
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 48:
        ip = (value >> 8) & 0xFFFFFFFF
        if ip:
            return f"{ip >> 22}.{(ip >> 14) & 0xFF}.{ip & 0x3F}"
    version = arch.get("version")
    return version if isinstance(version, str) and _IP.match(version) else None


def read_kernel(metadata: Path, spv: Path | None = None) -> TritonKernel:
    """The kernel whose metadata JSON is ``metadata``; its SPIR-V is ``spv``, else ``<name>.spv``
    beside it (Triton's layout), else ``<stem>.spv``."""
    try:
        with metadata.open("rb") as f:
            raw = f.read(_MAX_METADATA + 1)
    except OSError as exc:
        raise AotwheelError(f"cannot read {metadata}: {exc.strerror or exc}") from None
    if len(raw) > _MAX_METADATA:
        raise AotwheelError(f"{metadata} is larger than {_MAX_METADATA >> 20} MiB: not Triton kernel metadata")
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):
        raise AotwheelError(f"{metadata} is not JSON: pass Triton's metadata <name>.json (or the .spv beside it)") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or "build_flags" not in meta:
        raise AotwheelError(f"{metadata} is not Triton-XPU kernel metadata (no name and build_flags); pass the .json "
                            "Triton wrote beside the kernel's .spv")
    target = meta["target"] if isinstance(meta.get("target"), dict) else {}
    backend = target.get("backend")
    if backend not in (None, "xpu"):
        raise AotwheelError(f"{metadata}: kernel {meta['name']!r} was compiled by Triton for {backend!r}, not xpu; "
                            "only Triton-XPU's SPIR-V kernels compile here")
    flags = meta["build_flags"]
    if not isinstance(flags, str) or "\0" in flags:
        raise AotwheelError(f"{metadata}: build_flags is not option text")
    if spv is None:
        spv = metadata.with_name(f"{meta['name']}.spv")
        spv = spv if spv.is_file() else metadata.with_suffix(".spv")
    if not spv.is_file():
        raise AotwheelError(f"{metadata}: its SPIR-V {spv.name} is not beside it; pass the whole Triton cache entry")
    grf = meta.get("grf_mode")
    tpw = meta.get("threads_per_warp")
    arch = target.get("arch")
    name = arch.get("name") if isinstance(arch, dict) else None
    key = metadata.parent.name if metadata.stem == meta["name"] and metadata.parent.name != "" else metadata.stem
    return TritonKernel(meta["name"], spv, metadata, key, flags, grf if isinstance(grf, str) else "default",
                        tpw if isinstance(tpw, int) and not isinstance(tpw, bool) else None, target_ip(arch),
                        name if isinstance(name, str) else "")


def is_triton_input(path: Path) -> bool:
    """Whether ``path`` is a Triton kernel or folder of them rather than a bare SPIR-V module:
    a folder, a ``.json``, or a ``.spv`` with its ``<stem>.json`` beside it."""
    return path.is_dir() or path.suffix == ".json" or (path.suffix == ".spv" and path.with_suffix(".json").is_file())


def find_kernels(path: Path) -> list[TritonKernel]:
    """The Triton kernels at ``path``: a ``.spv`` (its ``.json`` beside it), a metadata ``.json``,
    one cache entry, or a folder of them at any depth (a cache, a package's kernel folder), in
    path order. A folder without any is an error."""
    if not path.is_dir():
        return [read_kernel(path.with_suffix(".json"), path) if path.suffix == ".spv" else read_kernel(path)]
    found: list[TritonKernel] = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".json") and f"{name[:-5]}.spv" in files:
                found.append(read_kernel(Path(root) / name))
                if len(found) > _MAX_KERNELS:
                    raise AotwheelError(f"{path} holds more than {_MAX_KERNELS} kernels; pass a smaller folder")
    if not found:
        raise AotwheelError(f"{path} holds no Triton kernel (<name>.spv beside <name>.json); pass Triton's cache folder "
                            "($TRITON_CACHE_DIR, default ~/.triton/cache) or a kernel's .spv")
    return found


@dataclass(frozen=True)
class TritonBuild:
    """One kernel's fat binary and how it was built; ``mismatched``: listed devices other than
    the kernel's target."""

    kernel: TritonKernel
    result: CompileResult
    mismatched: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        return {**self.kernel.to_dict(), "mismatched_devices": list(self.mismatched), **self.result.to_dict()}


def mismatch_message(kernel: TritonKernel, devices: Sequence[str]) -> str:
    """The one line that says a kernel is built for devices its SPIR-V was not specialised for."""
    target = f"{kernel.target_ip} ({kernel.target_name})" if kernel.target_name else str(kernel.target_ip)
    return (f"Triton kernel {kernel.name} ({kernel.key}) was specialised for {target}, not for {', '.join(devices)}: "
            f"its SPIR-V (sub-group size {kernel.threads_per_warp}, that GPU's DPAS and block loads) may fail to build or "
            "run slower or wrongly there; compile the kernel with Triton for each GPU (--strict-target refuses)")


def compile_kernels(kernels: Sequence[TritonKernel], devlist: Any, *, resolve: Resolver, options: str = "",
                    grf: str = "auto", jit_fallback: bool = True, jobs: int | None = None,
                    cache: DeviceCodeCache | None = None, strict_target: bool = False,
                    image_format: str | None = None, min_driver: str | None = None) -> list[TritonBuild]:
    """Build each kernel as Triton would: ocloc ``-options`` = its ``build_flags`` (then ``options``),
    no field defaults, and ``grf="auto"`` as Triton's own native path (``make_spv`` with
    ``TRITON_XPU_GEN_NATIVE_CODE``: a build that spills is rebuilt with 256 GRF). ``devlist``
    None: each kernel for its own target. A listed device other than the target warns
    (:class:`TargetMismatchWarning`), or with ``strict_target`` raises before anything is built."""
    import warnings

    from aotwheel.backends.intel.buildsteps.compile import compile_spirv_report

    plans = []
    for k in kernels:
        text = devlist if devlist is not None and (not isinstance(devlist, str) or devlist.strip()) else k.target_ip
        if text is None:
            raise DevlistError(f"{k.metadata}: its target names no Intel GPU IP version; name the devices (-d pvc)")
        dl = resolve(text, jit_fallback)
        from aotwheel.backends.intel.devlist import IntelPart

        other = tuple(d.name for d in dl.part_of(IntelPart).targets if k.target_ip is not None and d.ip != k.target_ip)
        if other and strict_target:
            raise DevlistError(mismatch_message(k, other).replace(" (--strict-target refuses)", "")
                               + "; or drop --strict-target to build anyway")
        plans.append((k, dl, other))
    for k, _dl, other in plans:
        if other:
            warnings.warn(mismatch_message(k, other), TargetMismatchWarning, stacklevel=2)

    def build(plan: tuple[TritonKernel, Any, tuple[str, ...]], inner: int) -> TritonBuild:
        k, dl, other = plan
        try:
            spirv = k.spv.read_bytes()
        except OSError as exc:
            raise AotwheelError(f"cannot read {k.spv}: {exc.strerror or exc}") from None
        opts = " ".join(w for w in (k.build_flags.strip(), options.strip()) if w)
        result = compile_spirv_report(spirv, dl, resolve=resolve, options=opts, jit_fallback=jit_fallback, grf=grf,
                                      jobs=inner, cache=cache, field_defaults=False, append_as_triton=True,
                                      image_format=image_format, format_source="--legacy-images", min_driver=min_driver)
        return TritonBuild(k, result, other)

    # kernels in parallel too: a cache of single-device kernels would otherwise run one ocloc at a time
    total = max(1, jobs or os.cpu_count() or 1)
    outer = max(1, min(len(plans), total))
    if outer == 1:
        return [build(p, total) for p in plans]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=outer, thread_name_prefix="aotwheel-triton") as pool:
        futures = [pool.submit(build, p, max(1, total // outer)) for p in plans]
        return [f.result() for f in futures]  # the first failure, in kernel order, raises

MANIFEST = "aotwheel-triton.json"


def write_kernels(builds: Sequence[TritonBuild], output: str) -> list[str]:
    """One ocloc fat binary per kernel, ``<output>/<key>/<name>.ar`` beside a copy of its metadata
    (Triton's cache layout), and ``<output>/aotwheel-triton.json`` listing them. Written into a
    staging folder and moved into place whole: a failure leaves nothing half-written. ``output``
    must be new, empty, or an earlier output of this function (which it replaces)."""
    import shutil
    import tempfile

    seen: set[tuple[str, str]] = set()
    for b in builds:
        if (b.kernel.key, b.kernel.name) in seen:
            raise AotwheelError(f"two kernels {b.kernel.name} in folders named {b.kernel.key}: their outputs would collide; "
                                "compile them into separate folders")
        seen.add((b.kernel.key, b.kernel.name))
    out = Path(output)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MANIFEST).is_file())):
        raise AotwheelError(f"{out} exists and is not an earlier aotwheel output for Triton kernels; name a new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=".aotwheel-triton-", dir=out.parent))
    try:
        entries = []
        for b in builds:
            folder = staged / b.kernel.key
            folder.mkdir(exist_ok=True)
            (folder / f"{b.kernel.name}.ar").write_bytes(b.result.fatbinary)
            shutil.copyfile(b.kernel.metadata, folder / f"{b.kernel.name}.json")
            entries.append({"fatbinary": f"{b.kernel.key}/{b.kernel.name}.ar", **b.to_dict()})
        (staged / MANIFEST).write_text(json.dumps({"kernels": entries}, indent=1) + "\n")
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=".aotwheel-triton-old-", dir=out.parent))
            os.replace(out, old / "out")
        os.replace(staged, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if staged.exists():
            shutil.rmtree(staged, ignore_errors=True)
    return [str(out / MANIFEST), *(str(out / b.kernel.key / f"{b.kernel.name}.ar") for b in builds)]
