"""Shared test helpers and markers.

Helpers every ``tests/_*_util.py`` used to define for itself: :data:`REPO`, :func:`require`
(skip, saying why, when a tool is missing) and :func:`run_tool` (run a real tool, fail the test
with its output when it fails). Markers:

- ``slow``: builds wheels or CMake projects, fuzzes, or downloads and walks large third-party
  binaries; ``pytest -m "not slow"`` runs the fast unit half alone (a couple of minutes);
- ``cuda``: needs nvcc (real NVIDIA binaries); ``pytest -m "not cuda"`` leaves them out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
if str(REPO) not in sys.path:  # benchmarks.servers: the real cache servers the remote tests start
    sys.path.insert(0, str(REPO))

# Modules that build, fuzz or walk large downloads (measured: each takes tens of seconds or more).
SLOW_MODULES = frozenset({
    "test_benchmarks", "test_build_cache", "test_build_cmake", "test_build_wheel", "test_cache_concurrency",
    "test_cmake_entry", "test_cuda_build", "test_downstream", "test_fuzz_fastscan", "test_fuzz_parsers", "test_fuzz_regressions",
    "test_inspect_large", "test_inspect_own_wheel", "test_inspect_thirdparty", "test_matrix", "test_setuptools",
    "test_broken_tools", "test_typing", "test_cuda_sections", "test_cuda_modules", "test_multivendor_check", "test_first_hour",
    "test_field_defaults",
})
CUDA_MODULES = frozenset({
    "test_cuda_build", "test_cuda_check", "test_cuda_fatbin", "test_cuda_h100_record", "test_cuda_probe", "test_cuda_sections", "test_cuda_modules",
    "test_cuda_selftest", "test_model",
})


def _spirv_pair() -> tuple[str, str]:
    """The clang + llvm-spirv pair the tests compile OpenCL C with: the oldest installed matching
    pair (Debian 12: clang-15; Debian sid's current toolchain: clang-19)."""
    for major in range(15, 20):
        if shutil.which(f"clang-{major}") and shutil.which(f"llvm-spirv-{major}"):
            return f"clang-{major}", f"llvm-spirv-{major}"
    return "clang-15", "llvm-spirv-15"  # none installed: tests that need them skip, naming these


CLANG, LLVM_SPIRV = _spirv_pair()


def ocloc_output(folder: Path, name: str) -> Path:
    """What ``ocloc compile -output <name> -output_no_suffix`` wrote in ``folder``: ``<name>``, or,
    for one device, ``<name>.bin`` (ocloc 26 still appends the suffix there)."""
    for candidate in (folder / name, folder / f"{name}.bin"):
        if candidate.is_file():
            return candidate
    raise AssertionError(f"ocloc wrote neither {name} nor {name}.bin in {folder}: {sorted(p.name for p in folder.iterdir())}")


def require(*tools: str) -> None:
    """Skip (only) when a tool the test drives is not installed; CI installs them all."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (installed by ci/setup.sh)")


def run_tool(cmd: list[str], cwd: Path | None = None, *, timeout: float = 600, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run a real tool (argument list, no shell); a failure fails the test with its output."""
    kw.setdefault("text", True)
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, timeout=timeout, **kw)
    if proc.returncode != 0:
        raise AssertionError(f"{cmd[0]} failed ({proc.returncode}):\n{str(proc.stdout)[-2000:]}\n{str(proc.stderr)[-2000:]}")
    return proc


@pytest.fixture()
def fresh(monkeypatch: pytest.MonkeyPatch) -> Any:
    """aotwheel.runtime with no JIT policy or device override from the environment and an empty
    memo (before and after the test)."""
    from aotwheel import runtime

    monkeypatch.delenv("AOTWHEEL_JIT", raising=False)
    monkeypatch.delenv("AOTWHEEL_DEVICE", raising=False)
    runtime.reset_memo()
    yield runtime
    runtime.reset_memo()


def start_nginx(root: Path, **kw: Any) -> Any:
    """A real nginx WebDAV store (benchmarks/servers.py) on a loopback port; skips without nginx.
    The caller stops it."""
    from benchmarks.servers import NGINX, NginxDav

    if NGINX is None:
        pytest.skip("needs nginx (ci/setup.sh installs it: apt-get install nginx)")
    return NginxDav(root, **kw)


def start_redis(root: Path, **kw: Any) -> Any:
    """A real redis-server on a loopback port; skips without it. The caller stops it."""
    from benchmarks.servers import REDIS, RedisServer

    if REDIS is None:
        pytest.skip("needs redis-server (ci/setup.sh installs it: apt-get install redis-server)")
    return RedisServer(root, **kw)


@pytest.fixture
def nginx(tmp_path: Path) -> Any:
    server = start_nginx(tmp_path / "nginx")
    yield server
    server.stop()


@pytest.fixture
def redis(tmp_path: Path) -> Any:
    server = start_redis(tmp_path / "redis")
    yield server
    server.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        if module in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if module in CUDA_MODULES:
            item.add_marker(pytest.mark.cuda)
