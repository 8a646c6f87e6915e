"""SPIR-V -> native device code outside CMake: the build behind ``aotwheel compile`` and
``aotwheel.compile_spirv`` (:mod:`aotwheel.compile`, which hands in the core's devlist resolver).

For kernels generated at run time or export time (Triton, Inductor AOT): the same devlist
resolver, device-code cache and per-device ocloc jobs as the CMake build, run in parallel, and
the same fat-binary writer, so the result equals ``ocloc compile -device a,b,…`` member by
member (and byte for byte when the options match).

GRF (the register file): the report gives what ocloc allocated, read from each image
(:mod:`aotwheel.backends.intel.grf`: zebin ``.ze_info`` ``grf_count``, legacy ``NumGRFRequired``),
never what was asked: ``-cl-intel-enable-auto-large-GRF-mode`` (a field default) lets ocloc pick
256 on pvc. ``grf="auto"``: a device whose ocloc log reports spills (22.43 prints ``warning: kernel
K  compiled SIMD32 allocated 128 regs and spilled around 248``) is rebuilt with
``-cl-intel-256-GRF-per-thread`` only when a larger register file is possible (the build got less
than 256 and the options do not pin ``-cl-intel-128-GRF-per-thread``); a rebuild that got no more
registers is dropped. Each device's report lists what was tried. Standard library only (it shares
the build steps' import rules).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aotwheel.errors import AotwheelError, DevlistError, ToolchainError

if TYPE_CHECKING:
    from aotwheel.backends.intel.devlist import IntelPart
    from aotwheel.buildsteps.cache import DeviceCodeCache
    from aotwheel.buildsteps.tiers import Tiers

LARGE_GRF_OPTION = "-cl-intel-256-GRF-per-thread"
SMALL_GRF_OPTION = "-cl-intel-128-GRF-per-thread"
LARGE_GRF = 256  # registers -cl-intel-256-GRF-per-thread asks for: the most any GRF option gives
# default: the options as given (ocloc's choice under them); small/large: add the 128/256 option;
# auto: as default, then large where that build spilled and more registers are possible
GRF_MODES = ("default", "small", "large", "auto")
SPIRV_MAGIC_LE = b"\x03\x02\x23\x07"
_SPIRV_HEADER = 20  # magic, version, generator, bound, schema
# ocloc 22.43 (IGC): "warning: kernel spill  compiled SIMD32 allocated 128 regs and spilled around 248";
# ocloc 26.27 (IGC 2.x): "warning: in kernel 'spill': compiled SIMD32 allocated 128 regs and spilled around 118"
_SPILL_LINE = re.compile(r"kernel\s+'?(?P<kernel>[^\s':]+)'?:?\s+compiled\s+SIMD(?P<simd>\d+)\s+allocated\s+(?P<regs>\d+)\s+regs"
                         r"\s+and\s+spilled\s+around\s+(?P<bytes>\d+)")
# Marks a cached ocloc log next to the cached binary (same key otherwise).
_LOG_FLAG = "aotwheel-log"
_JOB_FLAGS = ("-exclude_ir",)  # as ocloc_job: members carry no SPIR-V; generic_ir holds it once

# The core's resolver, handed in by the caller (aotwheel.compile.resolve_devlist): a devlist text
# (or a resolved list) and JIT fallback -> the resolved list (a DevList: parts, targets, names,
# jit_fallback). The resolver sits above the backends, so this module never imports it.
Resolver = Callable[[Any, bool], Any]


@dataclass(frozen=True)
class Spill:
    """One spill warning from ocloc's log."""

    kernel: str
    simd: int
    registers: int
    spill_bytes: int


@dataclass(frozen=True)
class Attempt:
    """One ocloc build of a device: the GRF option added to the options, what ocloc allocated
    (the most registers of any kernel; None when the image records none) and its spills."""

    added: str  # "" or the GRF option added for this build
    registers: int | None
    spills: tuple[Spill, ...]
    kept: bool

    def to_dict(self) -> dict[str, object]:
        return {"added_option": self.added, "registers": self.registers, "spills": [s.__dict__ for s in self.spills], "kept": self.kept}


def grf_label(registers: int | None) -> str:
    """``small`` (128 registers), ``large`` (256), another count as a number, ``unknown``."""
    return {128: "small", LARGE_GRF: "large"}.get(registers or 0, str(registers) if registers else "unknown")


@dataclass(frozen=True)
class DeviceBuild:
    """What was built for one device."""

    device: str
    ip: str
    ocloc_device: str
    grf: str  # what ocloc allocated: grf_label(registers)
    size: int
    cache_hit: bool
    spills: tuple[Spill, ...] = ()  # of the build that was kept
    retried_after_spills: tuple[Spill, ...] = ()  # of the build that --grf auto replaced
    poisoned: tuple[str, ...] = ()  # kernels IGC replaced by fp64 poison stubs (a device without fp64)
    member: str = ""  # its fat-binary member: 64.<ip>, or 64.<generic> for an image several devices share
    serves: tuple[str, ...] = ()  # the listed devices it serves natively (coverage.py)
    registers: int | None = None  # allocated, the most of any kernel (read from the image)
    kernel_registers: tuple[tuple[str, int], ...] = ()
    tried: tuple[Attempt, ...] = ()
    note: str = ""  # why --grf auto did not retry, or why its retry was dropped

    def to_dict(self) -> dict[str, object]:
        return {"device": self.device, "ip": self.ip, "ocloc_device": self.ocloc_device, "member": self.member,
                "serves": list(self.serves), "grf": self.grf,
                "registers": self.registers, "kernel_registers": dict(self.kernel_registers),
                "size": self.size, "cache_hit": self.cache_hit,
                "spills": [s.__dict__ for s in self.spills],
                "retried_after_spills": [s.__dict__ for s in self.retried_after_spills],
                "poisoned": list(self.poisoned), "tried": [a.to_dict() for a in self.tried], "note": self.note}


def poisoned_kernels(binary: bytes, label: str) -> tuple[str, ...]:
    """The kernels a built image holds only as fp64 poison stubs, read from the image itself (its
    .ze_info, or a legacy image's patch tokens): what a cache hit reports as well as a fresh build."""
    from aotwheel.backends.intel import legacy, zeinfo
    from aotwheel.backends.intel.kinds import LEGACY, sniff
    from aotwheel.errors import InspectError
    from aotwheel.formats.region import Region

    region = Region(binary, label)
    try:
        return (legacy if sniff(binary[:64]) == LEGACY else zeinfo).poisoned_kernels(region)
    except InspectError:
        return ()  # ocloc's own output; an image we cannot read has nothing to report here


@dataclass(frozen=True)
class CompileResult:
    """The fat binary, the per-device binaries (devlist order) and how each was built."""

    fatbinary: bytes
    natives: tuple[tuple[DeviceBuild, bytes], ...]
    jit_fallback: bool
    spirv_sha256: str
    ocloc: str = ""
    ocloc_version: str = ""
    options: str = ""
    spirv: bytes | None = None  # kept for JIT fallback
    coverage: dict[str, object] | None = None  # the coverage plan (coverage.Coverage.to_dict)
    image_format: str = "zebin"  # zebin, or legacy (patch-token) when asked for

    @property
    def builds(self) -> tuple[DeviceBuild, ...]:
        return tuple(b for b, _ in self.natives)

    def to_dict(self) -> dict[str, object]:
        return {"spirv_sha256": self.spirv_sha256, "jit_fallback": self.jit_fallback, "ocloc": self.ocloc,
                "ocloc_version": self.ocloc_version, "options": self.options, "image_format": self.image_format,
                "size": len(self.fatbinary),
                "devices": [b.to_dict() for b, _ in self.natives], "coverage": self.coverage}


def parse_spills(log: str) -> tuple[Spill, ...]:
    """Spill warnings in an ocloc log (empty when it reports none)."""
    return tuple(Spill(m["kernel"], int(m["simd"]), int(m["regs"]), int(m["bytes"])) for m in _SPILL_LINE.finditer(log))


def check_spirv(spirv: bytes) -> None:
    """Raise :class:`AotwheelError` unless ``spirv`` looks like a little-endian SPIR-V module."""
    if not isinstance(spirv, (bytes, bytearray, memoryview)):
        raise AotwheelError(f"compile_spirv needs the SPIR-V as bytes, not {type(spirv).__name__}")
    head = bytes(spirv[:4])
    if len(spirv) < _SPIRV_HEADER or len(spirv) % 4 or head != SPIRV_MAGIC_LE:
        what = "is empty" if not len(spirv) else (
            "is big-endian SPIR-V (ocloc reads little-endian only)" if head == SPIRV_MAGIC_LE[::-1] else
            "does not start with the SPIR-V magic 0x07230203" if head != SPIRV_MAGIC_LE else
            "is truncated (not a whole SPIR-V header of 32-bit words)")
        raise AotwheelError(f"the input {what}; pass a SPIR-V module (llvm-spirv output, Triton's .spv)")


def intel_devices(dl: Any) -> IntelPart:
    """The Intel part of ``dl`` (a resolved device list) when it names Intel devices only: SPIR-V
    has no NVIDIA path through ocloc."""
    from aotwheel.backends.intel import INTEL
    from aotwheel.backends.intel.devlist import IntelPart

    other = next((p for p in dl.parts if p.vendor != INTEL and p.listed), None)  # another vendor's targets
    if other is not None:
        from aotwheel import backends

        raise DevlistError(f"'{','.join(other.listed)}' are {backends.get(other.vendor).title} targets; SPIR-V compiles for Intel devices only: "
                           "drop them from the device list")
    part: IntelPart = dl.part_of(IntelPart)
    return part


def compile_spirv_report(spirv: bytes, devlist: Any, *, resolve: Resolver, options: Sequence[str] | str = (),
                         jit_fallback: bool = True, grf: str = "default", jobs: int | None = None,
                         cache: DeviceCodeCache | None = None, field_defaults: bool = True,
                         image_format: str | None = None, format_source: str = "image_format",
                         min_driver: str | None = None,
                         progress: Callable[[DeviceBuild, float, int, str], None] | None = None,
                         append_as_triton: bool = False) -> CompileResult:
    """:func:`aotwheel.compile.compile_spirv` with the per-device report (and binaries, for
    ``--format dir``); ``devlist`` is resolved by ``resolve`` once the input checked out.
    ``image_format``: ``zebin`` or ``legacy``; None reads ``USE_AOT_IMAGE_FORMAT`` (default zebin);
    ``format_source`` names how it was asked for in an error line (``--legacy-images``).
    ``min_driver``: the oldest driver release (``26.05``) every listed device runs natively on; its
    images are planned for it (:mod:`aotwheel.backends.intel.coverage`; None: the default floor).
    ``progress(build, seconds, images, image_format)`` is called as each image finishes (in this thread).
    ``append_as_triton``: add a GRF option as Triton's ``make_spv`` does (``flags + " " + option``,
    even to empty flags: ocloc's image differs with the option text's spacing)."""
    from aotwheel.backends.intel.buildsteps.fatbin import build_fatbin
    from aotwheel.backends.intel.buildsteps.toolchain import ocloc_facts, ocloc_spellings
    from aotwheel.buildsteps.cache import DeviceCodeCache

    if grf not in GRF_MODES:
        raise AotwheelError(f"grf must be one of {', '.join(GRF_MODES)}, not {grf!r}")
    from aotwheel.backends.intel.ocloc import image_format as read_format
    from aotwheel.backends.intel.variables import IMAGE_FORMAT

    if image_format is None:
        wanted = read_format(IMAGE_FORMAT.get(), IMAGE_FORMAT.name)
    else:
        wanted = read_format(image_format, format_source)
    from aotwheel.backends.intel.options import with_field_options

    opts = options if isinstance(options, str) else " ".join(options)
    if "\0" in opts:
        raise AotwheelError("ocloc options contain a NUL character; pass plain option text")
    opts = with_field_options(opts, field_defaults)
    spirv = bytes(spirv)
    check_spirv(spirv)
    from aotwheel.backends.intel.coverage import parse_release

    parse_release(min_driver, "--min-driver / USE_AOT_MIN_DRIVER")  # a bad floor fails before anything runs
    dl = intel_devices(resolve(devlist, jit_fallback))
    keep_ir = jit_fallback and dl.jit_fallback
    if not dl.targets and not keep_ir:
        raise DevlistError("nothing to build: the device list names no device and JIT fallback is off; name devices (e.g. pvc)")
    cache = cache if cache is not None else DeviceCodeCache.from_env()
    sha = hashlib.sha256(spirv).hexdigest()
    if not dl.targets:
        return CompileResult(build_fatbin([], spirv), (), keep_ir, sha, options=opts, spirv=spirv, image_format=wanted)

    from aotwheel.buildsteps.remote import config_from
    from aotwheel.buildsteps.tiers import Tiers

    remote = config_from(os.environ, None)
    path, version, acronyms = ocloc_facts(cache)
    spellings = ocloc_spellings(list(dl.names), path, version, acronyms, hint="the device list")

    # The fewest images the driver runs natively on every listed device from min_driver on (coverage.py).
    coverage = dl.coverage(min_driver, acronyms)
    assert coverage is not None  # None only without targets, returned above
    spellings |= ocloc_spellings([i.device for i in coverage.images if i.device not in spellings], path, version, acronyms,
                                 hint="the device list")
    images = {i.device: i for i in coverage.images}
    from aotwheel.backends.intel.buildsteps.toolchain import ocloc_format_args

    format_args = ocloc_format_args(cache, path, version, wanted,
                                    source=IMAGE_FORMAT.name if image_format is None else format_source)
    with tempfile.TemporaryDirectory(prefix="aotwheel-compile-") as tmp:
        spv_path = os.path.join(tmp, "input.spv")
        Path(spv_path).write_bytes(spirv)
        tiers = Tiers(local=cache, stores=remote.stores(), readonly=remote.readonly,
                      secret=remote.secret)  # remote stores as in a build
        job = _Job(spv_path=spv_path, sha=sha, ocloc=path, ocloc_version=version, options=opts, tiers=tiers,
                   format_args=format_args, spirv_size=len(spirv), append_as_triton=append_as_triton)
        workers = max(1, min(len(images), jobs or os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aotwheel-ocloc") as pool:
            futures = [pool.submit(job.timed, i.device, i.ip, spellings[i.device], grf) for i in images.values()]

            def planned(build: DeviceBuild) -> DeviceBuild:
                return replace(build, member=images[build.device].member, serves=images[build.device].serves)

            for done in as_completed(futures):  # said as each image finishes
                if done.exception() is not None:
                    for f in futures:
                        f.cancel()  # not started yet: nothing more to wait for
                    break
                if progress is not None:
                    (build, _), seconds = done.result()
                    progress(planned(build), seconds, len(futures), wanted)
            # first failure (plan order) raises
            natives = tuple((planned(b), data) for (b, data), _ in (f.result() for f in futures if not f.cancelled()))
    from aotwheel.backends.intel.buildsteps.fatbin import ir_options

    fat = build_fatbin([(b.member.partition(".")[2], data) for b, data in natives], spirv if keep_ir else None, ir_options(version, opts))
    return CompileResult(fat, natives, keep_ir, sha, path, version, opts, spirv if keep_ir else None,
                         image_format=wanted, coverage=coverage.to_dict())


@dataclass(frozen=True)
class _Job:
    """One device's build (with the ``--grf auto`` retry), through the device-code cache."""

    spv_path: str
    sha: str
    ocloc: str
    ocloc_version: str
    options: str
    tiers: Tiers
    format_args: tuple[str, ...] = ()  # --format zebin / patchtokens, as this ocloc takes it
    spirv_size: int = 0
    append_as_triton: bool = False

    def timed(self, device: str, ip: str, ocloc_device: str, grf: str) -> tuple[tuple[DeviceBuild, bytes], float]:
        """:meth:`build` and the seconds it took."""
        began = time.monotonic()
        return self.build(device, ip, ocloc_device, grf), time.monotonic() - began

    def build(self, device: str, ip: str, ocloc_device: str, grf: str) -> tuple[DeviceBuild, bytes]:
        added = {"small": SMALL_GRF_OPTION, "large": LARGE_GRF_OPTION}.get(grf, "")
        data, spills, hit = self._one(ocloc_device, ip, added)
        kernels = _registers(data)
        regs = max(kernels.values(), default=None)
        first = Attempt(added, regs, spills, True)
        note = ""
        if grf == "auto" and spills:
            words = self.options.split()
            if SMALL_GRF_OPTION in words:
                note = f"spills; not rebuilt: the options pin {SMALL_GRF_OPTION}"
            elif LARGE_GRF_OPTION in words or (regs or 0) >= LARGE_GRF:
                note = f"spills with {regs} registers, the most {LARGE_GRF_OPTION} gives; not rebuilt"
            else:
                data2, spills2, hit2 = self._one(ocloc_device, ip, LARGE_GRF_OPTION)
                kernels2 = _registers(data2)
                regs2 = max(kernels2.values(), default=None)
                if regs2 is not None and regs is not None and regs2 <= regs:  # this device has no larger GRF
                    note = f"rebuilt with {LARGE_GRF_OPTION}, got {regs2} registers (no more than {regs}): first build kept"
                    tried = (first, Attempt(LARGE_GRF_OPTION, regs2, spills2, False))
                    return self._report(device, ip, ocloc_device, data, kernels, hit and hit2, spills, (), tried, note), data
                tried = (Attempt(added, regs, spills, False), Attempt(LARGE_GRF_OPTION, regs2, spills2, True))
                return self._report(device, ip, ocloc_device, data2, kernels2, hit and hit2, spills2, spills, tried, ""), data2
        return self._report(device, ip, ocloc_device, data, kernels, hit, spills, (), (first,), note), data

    @staticmethod
    def _report(device: str, ip: str, ocloc_device: str, data: bytes, kernels: dict[str, int], hit: bool,
                spills: tuple[Spill, ...], replaced: tuple[Spill, ...], tried: tuple[Attempt, ...], note: str) -> DeviceBuild:
        regs = max(kernels.values(), default=None)
        return DeviceBuild(device, ip, ocloc_device, grf_label(regs), len(data), hit, spills, replaced,
                           poisoned=poisoned_kernels(data, device), registers=regs,
                           kernel_registers=tuple(sorted(kernels.items())), tried=tried, note=note)

    def _one(self, ocloc_device: str, ip: str, added: str) -> tuple[bytes, tuple[Spill, ...], bool]:
        """``(binary, spills, cache hit)`` of one ocloc run with ``added`` after the options. The
        log is cached beside the binary so that a cache hit still knows about spills; a binary
        without its log is rebuilt."""
        from aotwheel.backends.intel.buildsteps.ocloc_job import LOG_LIMIT, compile_device_logged, image_limit
        from aotwheel.buildsteps.cache import CacheKey

        options = f"{self.options} {added}" if added and self.append_as_triton else f"{self.options} {added}".strip()
        # The same portable key (schema 2) as the CMake build's ocloc jobs: content, the device's
        # IP and ocloc's identity, so both share local and remote entries.
        fields = dict(input_sha256=self.sha, target=ip, tool="ocloc", tool_version=self.ocloc_version,
                      tool_sha256=self.tiers.local.tool_sha256(self.ocloc), options=options)
        key = CacheKey(**fields, flags=_JOB_FLAGS + self.format_args)  # type: ignore[arg-type]
        log_key = CacheKey(**fields, flags=_JOB_FLAGS + self.format_args + (_LOG_FLAG,))  # type: ignore[arg-type]
        label = f"compile:{self.sha[:12]}:{ocloc_device}"
        data, _, writable = self.tiers.lookup(key, label, limit=image_limit(self.spirv_size))
        # The log is looked up only beside a binary; without one, it goes wherever the binary
        # goes (the stores that missed it), so that a second machine compiles nothing.
        log, _, log_writable = self.tiers.lookup(log_key, label, limit=LOG_LIMIT) if data is not None else (None, "", writable)
        if data is not None and log is not None:
            return data, parse_spills(log.decode(errors="replace")), True
        try:
            data, text = compile_device_logged(ocloc=self.ocloc, spirv=self.spv_path, device=ocloc_device, options=options,
                                               format_args=self.format_args)
        except ToolchainError as exc:
            from aotwheel.variables import DEVLIST

            raise ToolchainError(str(exc).replace("input.spv", "the SPIR-V").replace(
                DEVLIST.name, "the device list")) from None
        self.tiers.store(key, data, label, writable)
        self.tiers.store(log_key, text.encode(), label, log_writable)
        return data, parse_spills(text), False


def _registers(image: bytes) -> dict[str, int]:
    """``kernel -> registers`` ocloc allocated, read from the image (empty when it records none)."""
    from aotwheel.backends.intel.grf import kernel_grf
    from aotwheel.errors import InspectError

    try:
        return kernel_grf(image, "ocloc's image")
    except InspectError:  # an image layout this reader does not know: the report says "unknown"
        return {}


def write_outputs(result: CompileResult, output: str, fmt: str) -> list[str]:
    """Write ``fatbin`` (one file) or ``dir`` (``<device>.bin`` per device, plus ``generic_ir.spv``
    when JIT fallback is on) atomically: a failure leaves nothing half-written. Returns the paths."""
    from aotwheel.buildsteps.cache import atomic_write

    out = Path(output)
    if fmt == "fatbin":
        if out.is_dir():
            raise AotwheelError(f"{out} is a directory; name a file for the fat binary, or use --format dir")
        atomic_write(out, result.fatbinary)
        return [str(out)]
    if out.exists() and not out.is_dir():
        raise AotwheelError(f"{out} exists and is not a directory; name a new folder for --format dir")
    files = {f"{b.device}.bin": data for b, data in result.natives}
    if result.spirv is not None:
        files["generic_ir.spv"] = result.spirv
    out.mkdir(parents=True, exist_ok=True)
    written = []
    staged = Path(tempfile.mkdtemp(prefix=".aotwheel-compile-", dir=out))
    try:
        for name, data in files.items():
            (staged / name).write_bytes(data)
        for name in files:
            os.replace(staged / name, out / name)
            written.append(str(out / name))
    finally:
        for leftover in staged.iterdir():
            leftover.unlink()
        staged.rmdir()
    return written
