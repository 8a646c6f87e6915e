"""One ninja edge: SPIR-V -> native binary for ONE device, through the device-code cache."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aotwheel.buildsteps.cache import CacheKey, DeviceCodeCache, atomic_write
from aotwheel.errors import ToolchainError

# The SPIR-V travels once, in the fat binary's generic_ir member; per-device members omit it,
# exactly as `ocloc compile -device a,b` does (its members equal `-exclude_ir` single builds).
_FLAGS = ("-exclude_ir",)


@dataclass(frozen=True)
class JobResult:
    """What one job produced and whether the cache served it."""

    output: Path
    size: int
    cache_hit: bool


def ocloc_command(ocloc: str, spirv: str, device: str, name: str, out_dir: str, options: str) -> list[str]:
    """The ocloc argument list for one device (no shell: ``options`` stays one argument)."""
    cmd = [ocloc, "compile", "-file", spirv, "-spirv_input", "-device", device,
           "-output", name, "-out_dir", out_dir, "-output_no_suffix", *_FLAGS]
    if options.strip():
        cmd += ["-options", options]
    return cmd


def run_job(
    *,
    spirv: str,
    device: str,
    output: str,
    ocloc: str,
    ocloc_version: str,
    options: str = "",
    cache: DeviceCodeCache | None = None,
) -> JobResult:
    """Produce ``output`` for ``device``: from the cache when possible, else by running ocloc.

    On failure prints ocloc's log and raises :class:`ToolchainError` with one line.
    """
    # One warning per build tree (not per ocloc edge) if the cache root is unusable.
    cache = cache if cache is not None else DeviceCodeCache.from_env(warn_once=Path(output).parent / ".aotwheel-cache-warning")
    data_in = Path(spirv).read_bytes()
    key = CacheKey(
        spirv_sha256=hashlib.sha256(data_in).hexdigest(),
        device=device,
        ocloc_path=ocloc,
        ocloc_version=ocloc_version,
        options=options,
        flags=_FLAGS,
    )
    label = Path(spirv).name
    out = Path(output)
    data = cache.get(key, label)
    if data is not None:
        atomic_write(out, data)
        return JobResult(output=out, size=len(data), cache_hit=True)

    data = compile_device(ocloc=ocloc, spirv=spirv, device=device, options=options)
    cache.put(key, data, label)
    atomic_write(out, data)
    return JobResult(output=out, size=len(data), cache_hit=False)


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
