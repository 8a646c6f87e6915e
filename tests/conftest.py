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
    "test_field_defaults", "test_variant_wheels", "test_compressed_images", "test_readme_blocks",
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
BUNDLER = CLANG.replace("clang-", "clang-offload-bundler-")  # clang-tools-N, beside the pair's clang
LLVM_LINK = CLANG.replace("clang-", "llvm-link-")


def ocloc_output(folder: Path, name: str) -> Path:
    """What ``ocloc compile -output <name> -output_no_suffix`` wrote in ``folder``: ``<name>``, or,
    for one device, ``<name>.bin`` (ocloc 26 still appends the suffix there)."""
    for candidate in (folder / name, folder / f"{name}.bin"):
        if candidate.is_file():
            return candidate
    raise AssertionError(f"ocloc wrote neither {name} nor {name}.bin in {folder}: {sorted(p.name for p in folder.iterdir())}")


def ocloc_device_words() -> set[str]:
    """The words of the installed ocloc's ``-device`` list (``ocloc compile --help``), lower-case."""
    import re

    proc = subprocess.run(["ocloc", "compile", "--help"], capture_output=True, text=True, check=False)
    text = (proc.stdout + proc.stderr).split("<device_type> can be:", 1)[-1].split("or hexadecimal", 1)[0]
    return {w.lower() for w in re.split(r"[\s,]+", text) if w and w not in ("ip", "version")}


def unbuildable_devices() -> list[str]:
    """Catalog devices with a known first ocloc release that the installed ocloc cannot build
    (Debian 12's 22.43: bmg-g21, lnl-m, ...; none for Debian sid's 26.x)."""
    from aotwheel.backends.intel.catalog import load_catalog
    from aotwheel.backends.intel.ocloc import FIRST_OCLOC

    words = ocloc_device_words()
    return [d.name for d in load_catalog().devices if d.name in FIRST_OCLOC and not ({d.name, *d.aliases} & words)]


_LEGACY: list[bool] = []


def ocloc_writes_legacy_images() -> bool:
    """Whether the installed ocloc writes pvc code as a legacy patch-token ELF (Debian 12's 22.43)
    rather than a zebin (e_machine 205, every newer ocloc): asked of ocloc itself, once."""
    import tempfile

    if not _LEGACY:
        require("ocloc", CLANG, LLVM_SPIRV)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "k.cl").write_text("kernel void k(global float *x) { x[0] = 1.0f; }\n")
            run_tool([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(work / "k.cl"), "-o", str(work / "k.bc")])
            run_tool([LLVM_SPIRV, str(work / "k.bc"), "-o", str(work / "k.spv")])
            run_tool(["ocloc", "compile", "-file", str(work / "k.spv"), "-spirv_input", "-device", "pvc", "-output", "probe",
                      "-out_dir", tmp, "-output_no_suffix", "-exclude_ir"])
            head = ocloc_output(work, "probe").read_bytes()[:20]
        _LEGACY.append(int.from_bytes(head[18:20], "little") != 205)
    return _LEGACY[0]


def require_legacy_ocloc() -> None:
    """Skip a test of Debian 12's legacy patch-token images when the installed ocloc writes zebins."""
    if not ocloc_writes_legacy_images():
        pytest.skip("the installed ocloc writes zebin images; this test reads the legacy patch-token "
                    "images of Debian 12's ocloc 22.43 (the bookworm CI lane)")


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


@pytest.fixture(scope="session")
def aotwheel_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's aotwheel wheel: the one ci/test.sh built and installed ($AOTWHEEL_TEST_WHEEL),
    else built once per session (with .venv's build tools: --no-build-isolation)."""
    import os

    given = os.environ.get("AOTWHEEL_TEST_WHEEL")
    if given and Path(given).is_file():
        return Path(given)
    dist = tmp_path_factory.mktemp("aotwheel-wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(REPO)],
                           capture_output=True, text=True, timeout=900, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("aotwheel-*.whl")
    return wheel


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        if module in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if module in CUDA_MODULES:
            item.add_marker(pytest.mark.cuda)
