"""One ninja edge: SPIR-V -> native binary for ONE device, through the local cache and remote stores."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aotwheel.buildsteps.cache import CacheKey, DeviceCodeCache, atomic_write
from aotwheel.buildsteps.tiers import LOCAL, REMOTE, Tiers
from aotwheel.errors import ToolchainError

# The SPIR-V travels once, in the fat binary's generic_ir member; per-device members omit it,
# exactly as `ocloc compile -device a,b` does (its members equal `-exclude_ir` single builds).
_FLAGS = ("-exclude_ir",)


@dataclass(frozen=True)
class JobResult:
    """What one job produced and where it came from."""

    output: Path
    size: int
    cache_hit: bool
    provenance: str = "compiled"  # compiled | local | remote


def provenance_file(output: Path | str) -> Path:
    """The sidecar naming where ``output`` came from (read by the fatbin step for the manifest)."""
    return Path(f"{output}.provenance")


def ocloc_command(ocloc: str, spirv: str, device: str, name: str, out_dir: str, options: str) -> list[str]:
    """The ocloc argument list for one device (no shell: ``options`` stays one argument)."""
    cmd = [ocloc, "compile", "-file", spirv, "-spirv_input", "-device", device,
           "-output", name, "-out_dir", out_dir, "-output_no_suffix", *_FLAGS]
    if options.strip():
        cmd += ["-options", options]
    return cmd


def skip_job(output: Path | str) -> None:
    """Another shard's job (``AOTWHEEL_SHARD``): an empty output marked ``skipped``, no ocloc, no cache."""
    atomic_write(provenance_file(output), b"skipped")
    atomic_write(Path(output), b"")


def ocloc_key(*, spirv: bytes, target: str, ocloc: str, ocloc_version: str, ocloc_sha256: str, options: str) -> CacheKey:
    """The portable key of one job: content and tool identity, never paths (schema 2)."""
    return CacheKey(input_sha256=hashlib.sha256(spirv).hexdigest(), target=target, tool="ocloc",
                    tool_version=ocloc_version, tool_sha256=ocloc_sha256, options=options, flags=_FLAGS)


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
                    ocloc_version=ocloc_version, ocloc_sha256=tiers.local.tool_sha256(ocloc), options=options)
    label = f"{Path(spirv).name}:{device}"
    data, provenance, writable = tiers.lookup(key, label)
    if data is None:
        data = compile_device(ocloc=ocloc, spirv=spirv, device=device, options=options)
        tiers.store(key, data, label, writable)
    atomic_write(provenance_file(out), provenance.encode())
    atomic_write(out, data)
    return JobResult(output=out, size=len(data), cache_hit=provenance in (LOCAL, REMOTE), provenance=provenance)


def compile_device(*, ocloc: str, spirv: str, device: str, options: str = "") -> bytes:
    """Run ocloc for one device in a private temporary directory and return the binary.

    On failure prints ocloc's log and raises :class:`ToolchainError` with one line.
    """
    return compile_device_logged(ocloc=ocloc, spirv=spirv, device=device, options=options, echo_failure=True)[0]


def compile_device_logged(*, ocloc: str, spirv: str, device: str, options: str = "",
                          echo_failure: bool = False) -> tuple[bytes, str]:
    """Like :func:`compile_device`, returning ``(binary, ocloc's log)``; the log holds its warnings
    (spills among them). With ``echo_failure=False`` a failure's message quotes the log's first
    error line instead of printing the whole log."""
    with tempfile.TemporaryDirectory(prefix="aotwheel-ocloc-") as tmp:
        cmd = ocloc_command(ocloc, str(Path(spirv).resolve()), device, "image", tmp, options)
        try:
            # cwd=tmp: ocloc drops side files (e.g. query outputs) into the working directory.
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise ToolchainError(f"Cannot run ocloc at {ocloc}: {exc.strerror}. Try: apt-get install intel-opencl-icd") from None
        produced = Path(tmp, "image")
        log = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 or not produced.is_file():
            if echo_failure:
                print(log, file=sys.stderr)
                where = "its log is above"
            else:
                where = f"ocloc said: {_first_error(log)}"
            raise ToolchainError(
                f"ocloc failed for -device {device} on {Path(spirv).name} (exit {proc.returncode}; {where}); "
                f"fix the kernel for {device} or remove {device} from USE_AOT_DEVLIST"
            )
        return produced.read_bytes(), log


def _first_error(log: str) -> str:
    """The line of an ocloc log that says what failed (its logs open with banner lines)."""
    lines = [l.strip() for l in log.splitlines() if l.strip()]
    for line in lines:
        if "error" in line.lower() or "invalid" in line.lower():
            return line[:300]
    return (lines[-1] if lines else "no output")[:300]
