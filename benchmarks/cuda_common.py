"""What the GPU benchmarks share (benchmarks/cuda_h100.py, benchmarks/cuda_driver_truth.py): running
a tool, building csrc/kernels with CMake + ninja + nvcc through a throw-away project, writing a
library's fat binary containers one per file (one cuModuleLoadData argument each), and running a
``--child-load`` process that prints its result as JSON on its last line.

Both scripts run as ``python3 benchmarks/<script>.py`` on the GPU machine (this folder first on
sys.path) and import as ``benchmarks.<script>`` elsewhere; they import this module either way.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "csrc" / "kernels"
# The host side of each throw-away project: a symbol that uses the generated header.
STUB = '#include "kernels_cuda.h"\nunsigned kern_image_count(void) { return aotwheel_kernels_cuda_image_count; }\n'


def sh(args: list[str], *, errors: str | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    """``args`` run with text output captured, never raising on a failed exit; ``errors`` as
    for bytes.decode (None: strict)."""
    return subprocess.run(args, capture_output=True, text=True, errors=errors, check=False, **kw)


def kernel_sources() -> str:
    """csrc/kernels/*.cl, quoted for a CMake SOURCES list."""
    return " ".join(f'"{p}"' for p in sorted(KERNELS.glob("*.cl")))


@dataclass
class Built:
    ok: bool  # configured, built, and the library is there
    seconds: float
    so: Path
    cfg: subprocess.CompletedProcess[str]
    nin: subprocess.CompletedProcess[str]  # cfg again when configure failed


def cmake_build(src: Path, bld: Path, cmakelists: str, env: dict[str, str], *configure: str, errors: str | None = None) -> Built:
    """The project ``cmakelists`` (+ STUB as stub.c) in ``src``, configured with Ninja into
    ``bld`` (``configure``: more -D arguments) and built; libkern.so is its library."""
    src.mkdir(parents=True, exist_ok=True)
    (src / "CMakeLists.txt").write_text(cmakelists)
    (src / "stub.c").write_text(STUB)
    t0 = time.perf_counter()
    cfg = sh(["cmake", "-S", str(src), "-B", str(bld), "-G", "Ninja", *configure, f"-DPython_EXECUTABLE={sys.executable}"], env=env, errors=errors)
    nin = sh(["ninja", "-C", str(bld)], env=env, errors=errors) if cfg.returncode == 0 else cfg
    seconds = time.perf_counter() - t0
    so = bld / "libkern.so"
    return Built(cfg.returncode == 0 and nin.returncode == 0 and so.is_file(), seconds, so, cfg, nin)


def write_containers(so: Path, fat: Any, dest: Path) -> list[Path]:
    """Each container of ``fat`` (read from ``so`` by fatbin.read_fatbin) as ``dest/<i>.fatbin``."""
    dest.mkdir(parents=True, exist_ok=True)
    files = []
    with open(so, "rb") as f:
        for i, c in enumerate(fat.containers):
            f.seek(c.offset)
            path = dest / f"{i}.fatbin"
            path.write_bytes(f.read(16 + c.size))
            files.append(path)
    return files


def child_load(script: str, files: list[Path], env: dict[str, str], *, errors: str | None = None) -> subprocess.CompletedProcess[str]:
    """``script --child-load files...`` in a fresh interpreter (a fresh CUDA context, and the
    environment ``env`` for the driver: JIT and cache switches), 5 minutes at most."""
    return sh([sys.executable, script, "--child-load", *map(str, files)], env=env, timeout=300, errors=errors)


def child_json(proc: subprocess.CompletedProcess[str]) -> Any:
    """What a --child-load process printed as JSON on its last line."""
    return json.loads(proc.stdout.strip().splitlines()[-1])
