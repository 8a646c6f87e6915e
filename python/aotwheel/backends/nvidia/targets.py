"""NVIDIA targets in ``USE_AOT_DEVLIST``: the grammar, nvcc flags, and the driver's loading rules.

Tokens (case-insensitive), next to the Intel names in the same list::

    sm_XY         native cubin for compute capability X.Y         sm_90, sm_80, sm_120
    sm_XYa        arch-specific cubin: runs on exactly X.Y only     sm_90a, sm_100a
    sm_XYf        family-specific cubin (CUDA 12.9+)                sm_100f, sm_120f
    compute_XY    PTX only: JIT-compiled by the driver on CC >= X.Y  compute_80
    nvidia_gpu_sm_XY   SYCL's spelling of sm_XY (-fsycl-targets=nvidia_gpu_sm_90)
    ptx           also keep PTX for the newest cubin arch listed (PyTorch's "+PTX",
                  CMake's "<newest>" without "-real"): newer GPUs then JIT instead of failing

Why a separate ``ptx`` word rather than ``sm_90+ptx``: the list's character set is shared with
the Intel names and has no ``+`` (the resolver rejects it before any lookup), one word reads
the same in an environment variable, a CMake list and a shell, and "the newest" is what NVIDIA
recommends keeping as PTX, so the user never has to repeat the arch.

Pure functions only: no subprocess, no driver. The NVIDIA grammar of the resolver
(:mod:`aotwheel.backends.nvidia.devlist`) calls :func:`parse_cuda_target` per token and
:func:`plan` once per list; :func:`is_cuda_token` decides which tokens it owns.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from aotwheel.errors import DevlistError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from aotwheel.acceptable import Acceptable
    from aotwheel.results import VerdictKind

PTX_TOKEN = "ptx"

# Architectures nvcc 13.0 builds (`nvcc --list-gpu-code`, measured), with their product names.
NVCC13_ARCHS: dict[int, str] = {
    75: "Turing (T4, RTX 20xx)",
    80: "Ampere (A100, A30)",
    86: "Ampere (A10, A40, RTX 30xx)",
    87: "Ampere (Jetson Orin)",
    88: "Ampere (Jetson, CUDA 13)",
    89: "Ada (L4, L40, RTX 40xx)",
    90: "Hopper (H100, H200, GH200)",
    100: "Blackwell (B200, GB200)",
    103: "Blackwell (B300, GB300)",
    110: "Blackwell (Jetson Thor)",
    120: "Blackwell (RTX 50xx, RTX PRO 6000)",
    121: "Blackwell (DGX Spark GB10)",
}
# Real architectures newer toolkits build that nvcc 13.0 does not: accepted for devices (a GPU
# may be newer than the toolkit here), refused for builds with "needs a newer nvcc".
NEWER_ARCHS: dict[int, str] = {107: "seen in CUDA 13.2 libraries (libnvjpeg 13.2.3)"}
DEVICE_ARCHS = frozenset(NVCC13_ARCHS) | frozenset(NEWER_ARCHS)  # for --device / AOTWHEEL_DEVICE
ARCH_SPECIFIC = frozenset({90, 100, 103, 110, 120, 121})  # sm_XYa exists
FAMILY_SPECIFIC = frozenset({100, 103, 110, 120, 121})  # sm_XYf exists

# Real architectures older toolkits built, and the last CUDA release that could.
RETIRED: dict[int, str] = {
    10: "6.5", 11: "6.5", 12: "6.5", 13: "6.5",
    20: "8.0", 21: "8.0",
    30: "10.2", 32: "10.2",
    35: "11.8", 37: "11.8",
    50: "12.9", 52: "12.9", 53: "12.9", 60: "12.9", 61: "12.9", 62: "12.9", 70: "12.9", 72: "12.9",
}
RENAMED = {101: 110}  # CUDA 13.0 renamed Thor's sm_101 to sm_110

_TOKEN = re.compile(r"^(?:nvidia_gpu_)?(sm|compute)_(\d{2,3})([af]?)$")
_LOOSE = re.compile(r"^(?:nvidia[_-]?gpu[_-]?)?(sm|compute|cc)[_\-.]?(\d)[_\-.]?(\d{1,2})([af]?)$")
_CMAKE = re.compile(r"^(\d{2,3})([af]?)(?:-(real|virtual))?$")


@dataclass(frozen=True, order=True)
class CudaTarget:
    """One NVIDIA image to build or found in a binary."""

    arch: int  # 90 = compute capability 9.0
    kind: str  # "cubin" | "ptx"
    arch_specific: bool = False  # "a": exactly this arch
    family_specific: bool = False  # "f": this arch and later minors of its major

    @property
    def cc(self) -> tuple[int, int]:
        """Compute capability ``(major, minor)``."""
        return divmod(self.arch, 10)

    @property
    def suffix(self) -> str:
        return "a" if self.arch_specific else "f" if self.family_specific else ""

    @property
    def name(self) -> str:
        """``sm_90a`` / ``compute_80``: the spelling nvcc, cuobjdump and the grammar use."""
        return f"{'sm' if self.kind == 'cubin' else 'compute'}_{self.arch}{self.suffix}"

    @property
    def virtual(self) -> str:
        """The PTX target that compiles to this one (``compute_90a`` for ``sm_90a``)."""
        return f"compute_{self.arch}{self.suffix}"

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "arch": self.arch, "kind": self.kind, "arch_specific": self.arch_specific, "family_specific": self.family_specific}


def cc_to_arch(cc: tuple[int, int]) -> int:
    """``(9, 0)`` -> ``90``."""
    return cc[0] * 10 + cc[1]


def target_from_name(name: str) -> CudaTarget | None:
    """The target a fat binary entry names (``sm_90a``, ``compute_90``), unvalidated: a binary
    may carry archs this aotwheel's nvcc table does not list. ``None`` for another spelling."""
    m = _TOKEN.match(name.lower())
    if not m:
        return None
    prefix, digits, suffix = m.groups()
    return CudaTarget(int(digits), "cubin" if prefix == "sm" else "ptx", suffix == "a", suffix == "f")


def is_cuda_token(token: str) -> bool:
    """True for tokens the NVIDIA grammar owns (valid or not): the resolver sends them here
    instead of the Intel catalog, so that ``sm90`` gets an NVIDIA suggestion."""
    t = token.lower()
    return t == PTX_TOKEN or bool(_TOKEN.match(t) or _LOOSE.match(t)) or t.startswith(("sm_", "compute_", "nvidia_gpu_"))


def parse_cuda_target(token: str, *, supported: Collection[int] | None = None) -> CudaTarget:
    """Parse ``sm_XY[a|f]``, ``compute_XY[a|f]`` or ``nvidia_gpu_sm_XY[a|f]``.

    ``supported`` is the set of archs the nvcc in use builds (default: nvcc 13.0's). Raises
    :class:`DevlistError` with one line naming the fix: a retired arch names the last CUDA
    that built it, typos get the spelled-out target (``sm90`` -> ``sm_90``).
    """
    raw = token
    t = token.lower()
    archs = frozenset(NVCC13_ARCHS) if supported is None else frozenset(supported)
    m = _TOKEN.match(t)
    if not m:
        raise _shape_error(raw, t)
    prefix, digits, suffix = m.groups()
    arch = int(digits)
    kind = "cubin" if prefix == "sm" else "ptx"
    if arch in RENAMED:
        new = f"{prefix}_{RENAMED[arch]}{suffix}"
        raise DevlistError(f"USE_AOT_DEVLIST: '{raw}' was renamed {new} in CUDA 13.0; write {new}", raw, (new,))
    if arch not in archs:
        if arch in NEWER_ARCHS and arch not in NVCC13_ARCHS:
            raise DevlistError(
                f"USE_AOT_DEVLIST: '{raw}' needs a newer nvcc than CUDA 13.0 ({NEWER_ARCHS[arch]}); upgrade the CUDA Toolkit or drop it", raw, ()
            )
        if arch in RETIRED and arch not in NVCC13_ARCHS:
            raise DevlistError(
                f"USE_AOT_DEVLIST: '{raw}' is not built by this nvcc (CUDA {RETIRED[arch]} was the last to support {prefix}_{arch}); "
                f"drop it or build with CUDA {RETIRED[arch]}",
                raw,
                (),
            )
        near = _near_archs(arch, archs, prefix)
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        raise DevlistError(f"USE_AOT_DEVLIST: unknown NVIDIA architecture '{raw}'{hint} (valid: {_valid(archs)})", raw, tuple(near))
    for tag, allowed, what in (("a", ARCH_SPECIFIC, "arch-specific"), ("f", FAMILY_SPECIFIC, "family-specific")):
        if suffix == tag and arch not in allowed:
            plain = f"{prefix}_{arch}"
            listed = ", ".join(f"sm_{a}{tag}" for a in sorted(allowed))
            raise DevlistError(f"USE_AOT_DEVLIST: '{raw}' does not exist: {what} '{tag}' targets are {listed}; write {plain}",
                               raw, (plain,))
    return CudaTarget(arch, kind, suffix == "a", suffix == "f")


def _shape_error(raw: str, t: str) -> DevlistError:
    loose = _LOOSE.match(t)
    if loose:
        prefix, major, minor, suffix = loose.groups()
        prefix = "sm" if prefix == "cc" else prefix
        fixed = f"{prefix}_{major}{minor}{suffix}"
        return DevlistError(f"USE_AOT_DEVLIST: '{raw}' is not a valid NVIDIA target; did you mean {fixed}?", raw, (fixed,))
    cmake = _CMAKE.match(t)
    if cmake:
        digits, suffix, mode = cmake.groups()
        fixed = f"compute_{digits}{suffix}" if mode == "virtual" else f"sm_{digits}{suffix}"
        return DevlistError(f"USE_AOT_DEVLIST: '{raw}' is CMake CUDA_ARCHITECTURES syntax; write {fixed} (and 'ptx' to keep PTX)", raw, (fixed,))
    words = [f"sm_{a}" for a in NVCC13_ARCHS] + [f"compute_{a}" for a in NVCC13_ARCHS] + [PTX_TOKEN]
    import difflib  # an invalid target's suggestions only: a list that resolves never needs them

    near = tuple(difflib.get_close_matches(t, words, n=3, cutoff=0.6))
    hint = f"; did you mean {' or '.join(near)}?" if near else "; write sm_XY (cubin), sm_XYa, compute_XY (PTX) or ptx"
    return DevlistError(f"USE_AOT_DEVLIST: '{raw}' is not a valid NVIDIA target{hint}", raw, near)


def _near_archs(arch: int, archs: frozenset[int], prefix: str) -> list[str]:
    same_major = sorted((a for a in archs if a // 10 == arch // 10), key=lambda a: abs(a - arch))
    pool = same_major or sorted(archs, key=lambda a: abs(a - arch))
    return [f"{prefix}_{a}" for a in pool[:2]]


def _valid(archs: Iterable[int]) -> str:
    return ", ".join(f"sm_{a}" for a in sorted(archs))


@dataclass(frozen=True)
class CudaPlan:
    """The NVIDIA half of a resolved device list: what nvcc builds and what the fat binary holds."""

    targets: tuple[CudaTarget, ...]  # cubins and PTX, in list order, deduplicated

    @property
    def cubins(self) -> tuple[CudaTarget, ...]:
        return tuple(t for t in self.targets if t.kind == "cubin")

    @property
    def ptx(self) -> tuple[CudaTarget, ...]:
        return tuple(t for t in self.targets if t.kind == "ptx")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)

    def gencode_flags(self) -> list[str]:
        """nvcc ``-gencode`` arguments, one per image (``arch=compute_90,code=sm_90``)."""
        return [f"-gencode=arch={t.virtual},code={t.name}" for t in self.targets]

    def cmake_architectures(self) -> str:
        """The same set as CMake's ``CUDA_ARCHITECTURES`` (``80-real;90``)."""
        out: list[str] = []
        cubin_archs = {(t.arch, t.suffix) for t in self.cubins}
        ptx_archs = {(t.arch, t.suffix) for t in self.ptx}
        for arch, suffix in sorted(cubin_archs | ptx_archs):
            key = (arch, suffix)
            mode = "" if key in cubin_archs and key in ptx_archs else "-real" if key in cubin_archs else "-virtual"
            out.append(f"{arch}{suffix}{mode}")
        return ";".join(out)

    def to_dict(self) -> dict[str, object]:
        return {
            "targets": [t.to_dict() for t in self.targets],
            "cubin": [t.name for t in self.cubins],
            "ptx": [t.name for t in self.ptx],
            "gencode": self.gencode_flags(),
            "cmake_architectures": self.cmake_architectures(),
        }


def plan(targets: Sequence[CudaTarget], *, keep_newest_ptx: bool = False, jit_fallback: bool = True) -> CudaPlan:
    """Combine parsed tokens into a :class:`CudaPlan`.

    ``keep_newest_ptx`` (the ``ptx`` word) adds PTX for the newest cubin arch listed (its
    ``a``/``f`` variant's plain arch-portable PTX, so that later GPUs can JIT it). PTX asked for
    while JIT fallback is off (``no-jit``) is a contradiction and raises :class:`DevlistError`.
    """
    out: dict[str, CudaTarget] = {}
    for t in targets:
        out.setdefault(t.name, t)
    if keep_newest_ptx:
        cubins = [t for t in out.values() if t.kind == "cubin"]
        if not cubins:
            raise DevlistError("USE_AOT_DEVLIST: 'ptx' keeps PTX of the newest sm_XY listed, but none is listed; add e.g. sm_90 or write compute_90")
        newest = max(t.arch for t in cubins)
        ptx = CudaTarget(newest, "ptx")
        out.setdefault(ptx.name, ptx)
    if not jit_fallback:
        jit = [t.name for t in out.values() if t.kind == "ptx"]
        if jit:
            raise DevlistError(f"USE_AOT_DEVLIST: {', '.join(jit)} is PTX for JIT but JIT fallback is off (no-jit); drop one of them")
    return CudaPlan(tuple(out.values()))


class CudaVerdict(NamedTuple):
    """``(verdict, image, reason, rule)``; unpacks like a tuple."""

    verdict: VerdictKind  # native | jit | unsupported
    image: CudaTarget | None  # the image the driver will load
    reason: str  # one line for people
    rule: str  # which rule decided: see cuda_verdict


CUBIN, PTX = "cubin", "ptx"  # CudaTarget.kind: the image kinds offered to the lookup


def acceptable(device_cc: tuple[int, int], *, force_ptx_jit: bool = False) -> Iterator[Acceptable]:
    """The images the CUDA driver takes on compute capability ``device_cc``, best first (a
    generator, as packaging's ``sys_tags``: the lookup stops at the first the binary has).

    NVIDIA's rules (docs/formats.md §5, CUDA C++ Programming Guide "Binary Compatibility"): a
    cubin of the device's own arch (``sm_XYa``, then ``sm_XYf``, then ``sm_XY``), then of each
    older minor of the same major, newest first (``sm_XWf`` before ``sm_XW``; an ``a`` cubin runs
    on exactly its arch only); then PTX, newest first: ``compute_XYa`` on exactly X.Y,
    ``compute_XYf`` on the same major from minor Y, ``compute_XY`` on any compute capability >=
    X.Y. ``force_ptx_jit`` models ``CUDA_FORCE_PTX_JIT=1``: cubins are skipped."""
    from aotwheel.acceptable import Acceptable
    from aotwheel.results import JIT, NATIVE

    major, minor = device_cc
    dev = cc_to_arch(device_cc)
    if not force_ptx_jit:
        yield Acceptable(CUBIN, (f"sm_{dev}a",), NATIVE, "cubin-arch-specific")
        for arch in range(dev, major * 10 - 1, -1):  # same major, minor <= the device's
            yield Acceptable(CUBIN, (f"sm_{arch}f",), NATIVE, "cubin-family")
            yield Acceptable(CUBIN, (f"sm_{arch}",), NATIVE, "cubin-same-major")
    yield Acceptable(PTX, (f"compute_{dev}a",), JIT, "ptx-jit")
    for arch in range(dev, -1, -1):
        if arch // 10 == major:
            yield Acceptable(PTX, (f"compute_{arch}f",), JIT, "ptx-jit")
        yield Acceptable(PTX, (f"compute_{arch}",), JIT, "ptx-jit")


def cuda_verdict(targets_in_binary: Iterable[CudaTarget], device_cc: tuple[int, int], *, force_ptx_jit: bool = False) -> CudaVerdict:
    """What the CUDA driver does with a fat binary on a GPU of compute capability ``device_cc``:
    the first image of :func:`acceptable` the binary carries (``native`` for a cubin, ``jit`` for
    PTX, rule keys ``cubin-arch-specific`` / ``cubin-family`` / ``cubin-same-major`` /
    ``ptx-jit``), else ``unsupported`` (``no-match``)."""
    from aotwheel.acceptable import Offered, first_acceptable
    from aotwheel.results import NATIVE, UNSUPPORTED

    images = sorted(set(targets_in_binary))
    dev = cc_to_arch(device_cc)
    cc_text = f"{device_cc[0]}.{device_cc[1]}"
    picked = first_acceptable(acceptable(device_cc, force_ptx_jit=force_ptx_jit), [Offered(t.kind, t.name, t) for t in images])
    if picked.acceptable is not None and picked.image is not None:
        t: CudaTarget = picked.image.item
        if picked.acceptable.verdict == NATIVE:
            return CudaVerdict(NATIVE, t, f"{t.name} cubin runs natively on compute capability {cc_text}", picked.acceptable.rule)
        why = "CUDA_FORCE_PTX_JIT=1 ignores cubins" if force_ptx_jit else "no cubin matches"
        return CudaVerdict(
            picked.acceptable.verdict, t, f"{why}: the driver JIT-compiles {t.name} PTX for compute capability {cc_text} at first load", "ptx-jit"
        )
    have = ", ".join(t.name for t in images) or "no NVIDIA images"
    newer = all(dev > t.arch for t in images)
    fix = f"sm_{dev} or 'ptx'" if images and newer else f"sm_{dev}"
    return CudaVerdict(UNSUPPORTED, None, f"no image for compute capability {cc_text} (binary has {have}); rebuild with {fix} in USE_AOT_DEVLIST", "no-match")


__all__ = [
    "ARCH_SPECIFIC",
    "acceptable",
    "DEVICE_ARCHS",
    "FAMILY_SPECIFIC",
    "NEWER_ARCHS",
    "NVCC13_ARCHS",
    "PTX_TOKEN",
    "RETIRED",
    "CudaPlan",
    "CudaTarget",
    "CudaVerdict",
    "cc_to_arch",
    "cuda_verdict",
    "is_cuda_token",
    "parse_cuda_target",
    "plan",
    "target_from_name",
]
