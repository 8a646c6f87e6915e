"""AMD's HIP compiler driver ``hipcc`` (clang with the AMDGPU back end and ROCm's device
libraries): where, which version, which ``clang-offload-bundler`` it bundles with, which
processors it builds. Standard library only: the configure step and the compile edges import it.

hipcc drives nvcc instead when ``HIP_PLATFORM`` says so, or when it is unset and nvcc is on
``PATH``: every run here sets ``HIP_PLATFORM=amd`` (:func:`hip_env`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from aotwheel.backends.amd.variables import HIPCC
from aotwheel.errors import ToolchainError

INSTALL_HINT = ("install hipcc (Debian/Ubuntu: apt-get install hipcc; or ROCm, https://rocm.docs.amd.com) "
                f"or set {HIPCC.name}=/path/to/hipcc")
DEFAULT_DIRS = ("/opt/rocm/bin",)
_TIMEOUT = 120
_HIP_VERSION_RE = re.compile(r"HIP version: ([0-9][0-9.]*)")
_CLANG_VERSION_RE = re.compile(r"clang version ([0-9][0-9.]*)")
# What `hipcc -###` prints: each argument of each command quoted.
_QUOTED_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')
# ROCm's device libraries hold one oclc_isa_version_<processor digits>.bc per processor they serve.
_ISA_RE = re.compile(r"oclc_isa_version_([0-9a-f]+|[0-9]+(?:-[0-9]+)*-generic)\.bc")


def hip_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every hipcc run: ``HIP_PLATFORM=amd``, so that an nvcc on ``PATH``
    never turns hipcc into a CUDA compiler."""
    env = dict(os.environ if base is None else base)
    env["HIP_PLATFORM"] = "amd"
    return env


@dataclass(frozen=True)
class Hipcc:
    """One hipcc and what its ``--version`` and ``-###`` say."""

    path: str  # hipcc itself, resolved
    version: str  # "5.2.21153": the HIP release (ROCm 5.2)
    clang_version: str  # "15.0.6"
    clang: str  # the clang hipcc runs (its hash keys the cache)
    bundler: str  # the clang-offload-bundler clang runs
    host_bundle_id: str  # the (empty) host entry's id it writes: "host-x86_64-unknown-linux"
    device_libs: str  # ROCm's device library folder ("" when -### named none)
    processors: frozenset[str]  # processors the device libraries serve ("gfx90a", "gfx1030", ...)

    def to_dict(self) -> dict[str, object]:
        return {"hipcc": self.path, "version": self.version, "clang_version": self.clang_version, "clang": self.clang,
                "bundler": self.bundler, "host_bundle_id": self.host_bundle_id, "device_libs": self.device_libs, "processors": sorted(self.processors)}


def find_hipcc(explicit: str | None = None) -> str:
    """Locate hipcc: ``explicit``, ``$AOTWHEEL_HIPCC``, ``$HIPCC``, ``PATH``, ``$ROCM_PATH/bin``,
    ``/opt/rocm/bin``. Raises :class:`ToolchainError` naming the fix when missing."""
    env = os.environ
    candidates: list[tuple[str, str | None]] = [("the explicit path", explicit), (f"${HIPCC.name}", HIPCC.given(env)),
                                                ("$HIPCC", env.get("HIPCC")), ("search", "hipcc")]
    if env.get("ROCM_PATH"):
        candidates.append(("search", os.path.join(env["ROCM_PATH"], "bin", "hipcc")))
    candidates += [("search", os.path.join(d, "hipcc")) for d in DEFAULT_DIRS]
    for source, candidate in candidates:
        if not candidate:
            continue
        path = shutil.which(candidate) if os.path.sep not in candidate else candidate
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.realpath(path)
        if source != "search":
            raise ToolchainError(f"hipcc from {source} ({candidate}) is not an executable file; fix {source} or {INSTALL_HINT}")
    raise ToolchainError(f"Missing hipcc (the HIP compiler) for the AMD targets of USE_AOT_DEVLIST: {INSTALL_HINT}")


def query(path: str, processors: list[str]) -> Hipcc:
    """What hipcc at ``path`` is, asked with ``--version`` and one ``-###`` dry run for the
    processors ``processors`` (the commands clang would run: its bundler and device libraries)."""
    text = _run([path, "--version"], "--version")
    hip = _HIP_VERSION_RE.search(text)
    clang = _CLANG_VERSION_RE.search(text)
    if hip is None or clang is None:
        raise ToolchainError(f"cannot read the HIP and clang versions from '{path} --version' (is it AMD's hipcc?); {INSTALL_HINT}")
    archs = [f"--offload-arch={p}" for p in processors]
    try:
        plan = _run([path, *archs, "--genco", "-x", "hip", os.devnull, "-o", os.devnull, "-###"], "-###")
    except ToolchainError as exc:  # clang's own line on a processor it does not know
        raise ToolchainError(f"hipcc {hip[1]} (clang {clang[1]}) at {path} refuses the AMD targets {', '.join(processors)}: "
                             f"{str(exc).split('(exit ', 1)[-1].split(': ', 1)[-1].split(';')[0]}; drop them from USE_AOT_DEVLIST "
                             "or install a newer ROCm") from None
    args = _QUOTED_RE.findall(plan)
    clang_bin = next((a for a in args if os.path.basename(a).startswith("clang") and os.path.isabs(a)
                      and "offload" not in os.path.basename(a)), "")
    bundler = next((a for a in args if os.path.basename(a) == "clang-offload-bundler"), "")
    host = next((a.removeprefix("-targets=").split(",")[0] for a in args if a.startswith("-targets=host-")), "")
    if not clang_bin or not bundler or not host:
        raise ToolchainError(f"'{path} -###' named no clang and clang-offload-bundler (is HIP_PLATFORM=amd honoured?); {INSTALL_HINT}")
    libs = next((os.path.dirname(a) for a in args if os.path.basename(a) in ("hip.bc", "ocml.bc")), "")
    served = frozenset(f"gfx{m[1]}" for m in map(_ISA_RE.fullmatch, os.listdir(libs) if libs and os.path.isdir(libs) else ()) if m)
    return Hipcc(path, hip[1], clang[1], os.path.realpath(clang_bin), bundler, host, libs, served)


def require_processors(hipcc: Hipcc, targets: tuple[str, ...] | list[str]) -> None:
    """Raise :class:`ToolchainError` (one line naming the fix) unless ``hipcc``'s device
    libraries serve the processor of every target id in ``targets``."""
    processors = list(dict.fromkeys(t.split(":")[0] for t in targets))
    missing = [p for p in processors if hipcc.device_libs and p not in hipcc.processors]
    if not missing:
        return
    # the newest of each generation's spelling (gfx9xx, gfx1xxx): "gfx940 and gfx1036"
    newest = [max(p for p in hipcc.processors if len(p) == n) for n in sorted({len(p) for p in hipcc.processors if "generic" not in p})]
    raise ToolchainError(f"hipcc {hipcc.version} (clang {hipcc.clang_version}) at {hipcc.path} cannot build {', '.join(missing)}: "
                         f"its ROCm device libraries ({hipcc.device_libs}) serve {len(hipcc.processors)} processors up to "
                         f"{' and '.join(newest)}; install a newer ROCm (Debian sid's hipcc, or AMD's packages) or drop "
                         f"{', '.join(missing)} from USE_AOT_DEVLIST")


def _run(args: list[str], what: str) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=_TIMEOUT, check=False, env=hip_env())
    except OSError as exc:
        raise ToolchainError(f"Cannot run hipcc at {args[0]}: {exc.strerror}; {INSTALL_HINT}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"hipcc at {args[0]} did not answer '{what}' within {_TIMEOUT} s; check the ROCm installation") from None
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        first = next((ln for ln in lines if "error" in ln), lines[0] if lines else "no output")
        raise ToolchainError(f"'{args[0]} {what}' failed (exit {proc.returncode}: {first.strip()[:200]}); {INSTALL_HINT}")
    return proc.stdout + proc.stderr  # -### prints to stderr
