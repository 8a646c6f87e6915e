"""SPIR-V -> native binaries for one device or a group of devices, through the local cache and remote stores.

One ninja edge runs :func:`run_group` for one kernel source and a group of devices: each device is
looked up under its own portable per-(SPIR-V, device) key (the same entries ``aotwheel compile``
and one-device builds use), and the misses are compiled by ONE ``ocloc -device a,b -exclude_ir``
whose fat binary is split into per-device binaries: with Debian's ocloc 22.43 its members are
byte-identical to single-device builds (checked on every kernel of this repository, and by
tests/test_ocloc_groups.py). A member that is not where expected is compiled on its own.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aotwheel.buildsteps.cache import CacheKey, DeviceCodeCache, atomic_write
from aotwheel.buildsteps.tiers import COMPILED, LOCAL, REMOTE, Tiers
from aotwheel.errors import ToolchainError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (as in tiers.py)
if TYPE_CHECKING:
    import subprocess

# The SPIR-V travels once, in the fat binary's generic_ir member; per-device members omit it,
# exactly as `ocloc compile -device a,b` does (its members equal `-exclude_ir` single builds).
_FLAGS = ("-exclude_ir",)
LOG_LIMIT = 4 << 20  # an ocloc log kept beside its binary: a remote answer beyond is refused unread


def image_limit(spirv_size: int) -> int:
    """The most bytes a native binary built from ``spirv_size`` bytes of SPIR-V may have, the
    cap on a remote answer for it: zebins measured here are 0.3-4x their SPIR-V (kernels of this
    repository, torch-xpu-ops); 64x and a 16 MiB floor leave room for any real one."""
    return max(16 << 20, 64 * spirv_size)


@dataclass(frozen=True, slots=True)
class JobResult:
    """What one job produced and where it came from: ``provenance`` compiled | local | remote;
    ``data`` what was written (run_group; not in the repr or comparisons)."""

    output: Path
    size: int
    cache_hit: bool
    provenance: str = "compiled"
    data: bytes = field(default=b"", repr=False, compare=False)


def provenance_file(output: Path | str) -> Path:
    """The sidecar naming where ``output`` came from (read by the fatbin step for the manifest)."""
    return Path(f"{output}.provenance")


def ocloc_command(ocloc: str, spirv: str, device: str, name: str, out_dir: str, options: str,
                  format_args: tuple[str, ...] = ()) -> list[str]:
    """The ocloc argument list for one device (no shell: ``options`` stays one argument);
    ``format_args`` (``--format zebin``: the toolchain's ``ocloc_format_args``) say which images it writes."""
    cmd = [ocloc, "compile", "-file", spirv, "-spirv_input", "-device", device,
           "-output", name, "-out_dir", out_dir, "-output_no_suffix", *_FLAGS, *format_args]
    if options.strip():
        cmd += ["-options", options]
    return cmd


def ocloc_key(*, spirv: bytes, target: str, ocloc: str, ocloc_version: str, ocloc_sha256: str, options: str,
              format_args: tuple[str, ...] = ()) -> CacheKey:
    """The portable key of one job: content and tool identity, never paths (schema 2); the
    format arguments are flags (a zebin and a legacy build of one SPIR-V are different objects)."""
    return CacheKey(input_sha256=hashlib.sha256(spirv).hexdigest(), target=target, tool="ocloc",
                    tool_version=ocloc_version, tool_sha256=ocloc_sha256, options=options, flags=_FLAGS + tuple(format_args))


def run_job(
    *,
    spirv: str,
    device: str,
    output: str,
    ocloc: str,
    ocloc_version: str,
    options: str = "",
    target: str | None = None,
    cache: DeviceCodeCache | None = None,
    tiers: Tiers | None = None,
    format_args: tuple[str, ...] = (),
) -> JobResult:
    """Produce ``output`` for ``device``: from the caches when possible, else by running ocloc.

    ``target``: the device's IP version for the key (default: ``device``). On failure prints
    ocloc's log and raises :class:`ToolchainError`.
    """
    out = Path(output)
    if tiers is None:
        if cache is None:  # one warning per build tree (not per edge) if the cache root is unusable
            cache = DeviceCodeCache.from_env(warn_once=out.parent / ".aotwheel-cache-warning")
        tiers = Tiers(local=cache, build_dir=out.parent)
    key = ocloc_key(spirv=Path(spirv).read_bytes(), target=target or device, ocloc=ocloc,
                    ocloc_version=ocloc_version, ocloc_sha256=tiers.local.tool_sha256(ocloc), options=options,
                    format_args=format_args)
    label = f"{Path(spirv).name}:{device}"
    data, provenance, writable = tiers.lookup(key, label, limit=image_limit(Path(spirv).stat().st_size))
    if data is None:
        data = compile_device(ocloc=ocloc, spirv=spirv, device=device, options=options, format_args=format_args)
        tiers.store(key, data, label, writable)
    atomic_write(provenance_file(out), provenance.encode())
    atomic_write(out, data)
    return JobResult(output=out, size=len(data), cache_hit=provenance in (LOCAL, REMOTE), provenance=provenance)


@dataclass(frozen=True, slots=True)
class GroupJob:
    """One device of a group: the catalog name, ocloc's name for it, its IP (the key's target and
    the fat-binary member's name) and the output path."""

    device: str
    ocloc_name: str
    ip: str
    output: Path


def run_group(*, spirv: str, jobs: list[GroupJob], ocloc: str, ocloc_version: str, options: str,
              tiers: Tiers, on_compiled: Callable[[list[str], float], None] | None = None,
              format_args: tuple[str, ...] = ()) -> list[JobResult]:
    """Produce every job's output: per-device cache lookups, then one ocloc run for the misses.

    Each result is stored under its own key and written with its provenance, as :func:`run_job`
    does for one device. On an ocloc failure the failing device's log is printed and
    :class:`ToolchainError` names it; outputs of devices that did compile are kept.
    ``on_compiled(devices, cpu_s)``: called after ocloc ran, with the compiled devices (catalog
    names) and the CPU seconds (user + system) ocloc took for them.
    """
    blob = Path(spirv).read_bytes()
    tool_sha = tiers.local.tool_sha256(ocloc)
    found: dict[GroupJob, tuple[bytes, str]] = {}
    missing: list[tuple[GroupJob, CacheKey, list]] = []
    for job in jobs:
        key = ocloc_key(spirv=blob, target=job.ip, ocloc=ocloc, ocloc_version=ocloc_version,
                        ocloc_sha256=tool_sha, options=options, format_args=format_args)
        data, provenance, writable = tiers.lookup(key, f"{Path(spirv).name}:{job.ocloc_name}", limit=image_limit(len(blob)))
        if data is None:
            missing.append((job, key, writable))
        else:
            found[job] = (data, provenance)
    if missing:
        cpu0 = _children_cpu()
        built = compile_devices(ocloc=ocloc, spirv=spirv, devices=[(j.ocloc_name, j.ip) for j, _, _ in missing],
                                options=options, format_args=format_args)
        if on_compiled is not None:
            on_compiled([j.device for j, _, _ in missing], _children_cpu() - cpu0)
        for job, key, writable in missing:
            data = built[job.ocloc_name]
            tiers.store(key, data, f"{Path(spirv).name}:{job.ocloc_name}", writable)
            found[job] = (data, COMPILED)
    results = []
    for job in jobs:
        data, provenance = found[job]
        atomic_write(provenance_file(job.output), provenance.encode())
        atomic_write(job.output, data)
        results.append(JobResult(output=job.output, size=len(data), cache_hit=provenance in (LOCAL, REMOTE),
                                 provenance=provenance, data=data))
    return results


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's waited-for children so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compile_devices(*, ocloc: str, spirv: str, devices: list[tuple[str, str]], options: str = "",
                    format_args: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Binaries for ``(ocloc name, IP)`` pairs, keyed by ocloc name: one ``ocloc -device a,b`` split
    into its ``64.<ip>`` members (one device: a plain single-device run).

    Should the multi-device run fail, each device is compiled on its own, so that the failure
    names the device that fails (with its log printed) and the others are still produced.
    """
    if len(devices) == 1:
        return {devices[0][0]: compile_device(ocloc=ocloc, spirv=spirv, device=devices[0][0], options=options, format_args=format_args)}
    out: dict[str, bytes] = {}
    import tempfile  # only when compiling (a cache hit never needs it)

    with tempfile.TemporaryDirectory(prefix="aotwheel-ocloc-") as tmp:
        names = ",".join(name for name, _ in devices)
        proc = _run_ocloc(ocloc, ocloc_command(ocloc, str(Path(spirv).resolve()), names, "fat", tmp, options, format_args), tmp)
        produced = _produced(tmp, "fat")
        if proc.returncode == 0 and produced is not None:
            out = _split_members(produced.read_bytes(), devices)
    for name, _ in devices:  # failed run, or a member not found: that device on its own
        if name not in out:
            out[name] = compile_device(ocloc=ocloc, spirv=spirv, device=name, options=options, format_args=format_args)
    return out


def _run_ocloc(ocloc: str, cmd: list[str], tmp: str) -> subprocess.CompletedProcess[str]:
    """One ocloc run in its private folder ``tmp`` (cwd too: ocloc drops side files, e.g. query
    outputs, into the working directory); a missing or unrunnable ocloc is one clear error."""
    import subprocess  # here: an edge whose devices all come from the caches runs no ocloc

    try:
        return subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ToolchainError(f"Cannot run ocloc at {ocloc}: {exc.strerror}. Try: apt-get install intel-opencl-icd") from None


def _split_members(fat: bytes, devices: list[tuple[str, str]]) -> dict[str, bytes]:
    """The ``64.<ip>`` member of each device in an ocloc fat binary (devices whose member is
    absent or ambiguous are left out)."""
    from aotwheel.errors import InspectError
    from aotwheel.formats.ar import read_ar
    from aotwheel.formats.region import Region

    try:
        members = [m for m in read_ar(Region(fat, "ocloc fat binary")) if not m.is_padding]
    except InspectError:
        return {}
    by_name: dict[str, list] = {}
    for m in members:
        by_name.setdefault(m.name, []).append(m)
    out = {}
    for name, ip in devices:
        hits = by_name.get(f"64.{ip}", [])
        if len(hits) == 1:
            out[name] = fat[hits[0].offset : hits[0].offset + hits[0].size]
    return out


def compile_device(*, ocloc: str, spirv: str, device: str, options: str = "", format_args: tuple[str, ...] = ()) -> bytes:
    """Run ocloc for one device in a private temporary directory and return the binary.

    On failure prints ocloc's log and raises :class:`ToolchainError` with one line.
    """
    return compile_device_logged(ocloc=ocloc, spirv=spirv, device=device, options=options, echo_failure=True,
                                 format_args=format_args)[0]


def compile_device_logged(*, ocloc: str, spirv: str, device: str, options: str = "",
                          echo_failure: bool = False, format_args: tuple[str, ...] = ()) -> tuple[bytes, str]:
    """Like :func:`compile_device`, returning ``(binary, ocloc's log)``; the log holds its warnings
    (spills among them). With ``echo_failure=False`` a failure's message quotes the log's first
    error line instead of printing the whole log."""
    import tempfile  # only when compiling (a cache hit never needs it)

    with tempfile.TemporaryDirectory(prefix="aotwheel-ocloc-") as tmp:
        proc = _run_ocloc(ocloc, ocloc_command(ocloc, str(Path(spirv).resolve()), device, "image", tmp, options, format_args), tmp)
        produced = _produced(tmp, "image")
        log = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 or produced is None:
            if echo_failure:
                print(log, file=sys.stderr)
                where = "its log is above"
            else:
                where = f"ocloc said: {_first_error(log)}"
            raise ToolchainError(
                f"ocloc failed for -device {device} on {Path(spirv).name} ({_status(proc.returncode)}; {where}); "
                f"{_advice(device, log, options)}"
            )
        return produced.read_bytes(), log


def _status(returncode: int) -> str:
    """``exit 245``, or for a crash ``crashed with SIGSEGV`` (ocloc 26 dies on some invalid SPIR-V)."""
    if returncode >= 0:
        return f"exit {returncode}"
    import signal

    try:
        return f"crashed with {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


def _produced(tmp: str, name: str) -> Path | None:
    """The file ocloc wrote for ``-output <name> -output_no_suffix``: ``<name>`` up to 25.x, while
    26.x still appends ``.bin`` to a single device's binary (a fat binary keeps the bare name)."""
    for candidate in (Path(tmp, name), Path(tmp, f"{name}.bin")):
        if candidate.is_file():
            return candidate
    return None


def _advice(device: str, log: str, options: str) -> str:
    """What to do about a failed build: for a kernel using double on a device without fp64, the
    option that poisons such kernels instead (the field default a user turned off)."""
    from aotwheel.backends.intel.options import FP64_POISON_OPTION

    if "double type is not supported" in log.lower() and FP64_POISON_OPTION not in options.split():
        return (f"the kernel uses double (fp64), which {device} lacks: add {FP64_POISON_OPTION} to the ocloc "
                f"options (the default unless USE_AOT_FIELD_DEFAULTS=OFF / --no-field-defaults) so that only fp64 "
                f"kernels are poisoned there, or remove {device} from USE_AOT_DEVLIST")
    return f"fix the kernel for {device} or remove {device} from USE_AOT_DEVLIST"


def _first_error(log: str) -> str:
    """The line of an ocloc log that says what failed (its logs open with banner lines)."""
    lines = [l.strip() for l in log.splitlines() if l.strip()]
    for line in lines:
        if "error" in line.lower() or "invalid" in line.lower():
            return line[:300]
    return (lines[-1] if lines else "no output")[:300]
