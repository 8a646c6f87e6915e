"""Shared test helpers and markers.

Helpers every ``tests/_*_util.py`` used to define for itself: :data:`REPO`, :func:`require`
(skip, saying why, when a tool is missing) and :func:`run_tool` (run a real tool, fail the test
with its output when it fails). Markers:

- ``slow``: the test requests ``builds`` (CMake projects, pip wheels), ``installed_aotwheel``,
  ``large_binaries`` or ``fuzzing``; ``pytest -m "not slow"`` runs the fast unit half alone;
- ``cuda``: the test requests ``nvcc`` (real NVIDIA binaries); ``pytest -m "not cuda"`` leaves them out.

Markers follow from fixtures, not from a list of modules, and an autouse guard fails a fast test
that starts a build (or a non-``cuda`` test that starts nvcc), naming the fixture to request.
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

# Markers come from what a test uses: a test that requests one of these fixtures (directly, via
# another fixture, or a module's ``pytestmark = pytest.mark.usefixtures(...)``) gets the marker.
SLOW_FIXTURES = frozenset({"builds", "installed_aotwheel", "large_binaries", "fuzzing", "aotwheel_wheel", "mypy", "simulated_driver"})
CUDA_FIXTURES = frozenset({"nvcc"})


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


_FORMATS: list[list[str]] = []


def ocloc_formats() -> list[str]:
    """The ``--format`` values the installed ocloc's ``compile --help`` lists (22.43: zebin,
    patchtokens; 26.x: zebin). Asked of ocloc, once."""
    import re

    if not _FORMATS:
        proc = subprocess.run(["ocloc", "compile", "--help"], capture_output=True, text=True, check=False)
        _FORMATS.append(re.findall(r"^\s*--format\s+(\w+)\s+-", proc.stdout + proc.stderr, re.M))
    return list(_FORMATS[0])


def ocloc_zebin_args() -> list[str]:
    """``["--format", "zebin"]`` when the installed ocloc offers ``--format zebin`` (22.43 and 26.x
    do), else ``[]``: what a reference ocloc run adds to equal aotwheel's builds, which write zebin
    on every ocloc that can (docs/formats.md §10)."""
    return ["--format", "zebin"] if "zebin" in ocloc_formats() else []


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


ZSTD_MAGIC = bytes.fromhex("28b52ffd")


def unzstd(stored: bytes) -> bytes:
    """An image aotwheel_add_device_code embedded compressed (COMPRESS ON, the default), read back
    by the zstandard library itself, not by aotwheel's reader under test: exactly one frame, which
    declares its decompressed size and holds that many bytes (its checksum checked by zstandard)."""
    import zstandard

    assert stored[:4] == ZSTD_MAGIC, f"embedded image is not a zstd frame (starts {stored[:4].hex()}); was it built with COMPRESS OFF?"
    declared = zstandard.get_frame_parameters(stored).content_size
    assert 0 < declared < zstandard.CONTENTSIZE_UNKNOWN, f"zstd frame declares no size ({declared})"
    assert zstandard.frame_content_size(stored) == declared
    dobj = zstandard.ZstdDecompressor().decompressobj()
    data = dobj.decompress(stored)
    assert dobj.eof and not dobj.unused_data, "bytes after the image's zstd frame"
    assert len(data) == declared, (len(data), declared)
    return data


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
def builds() -> None:
    """Requested by a test that builds: a CMake project configured and built, ``pip wheel`` /
    ``pip install`` of a project, a whole-project ninja run. Marks the test ``slow``."""


@pytest.fixture(scope="session")
def simulated_driver() -> None:
    """Requested by a test that loads binaries on Intel's GPU driver in simulation mode
    (``aotwheel.backends.intel.simulate``: a child process per device, a minute or two for every
    device and shape). Marks the test ``slow``."""


@pytest.fixture(scope="session")
def installed_aotwheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site directory holding this checkout's aotwheel, installed with pip (a build: ``slow``)."""
    from _aotdemo_util import install_aotwheel, require_tools

    require_tools()
    return install_aotwheel(tmp_path_factory.mktemp("aotwheel-install"))


@pytest.fixture(scope="session")
def large_binaries() -> None:
    """Requested by a test that downloads or walks large third-party binaries. Marks it ``slow``."""


@pytest.fixture(scope="session")
def fuzzing() -> None:
    """Requested by a test that runs a fuzzer's many inputs. Marks it ``slow``."""


@pytest.fixture(scope="session")
def nvcc() -> str:
    """NVIDIA's nvcc as aotwheel finds it (ci/setup.sh installs it from PyPI); skips without it.
    Marks the test ``cuda``."""
    from _cuda_util import nvcc_path

    return nvcc_path()


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
        used = set(getattr(item, "fixturenames", ()))
        if used & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
        if used & CUDA_FIXTURES:
            item.add_marker(pytest.mark.cuda)


# What a build looks like on a command line: configuring or building a CMake project, a pip
# build or install of a project, python -m build. `cmake -P` scripts and `cmake --version` are not builds.
_PIP_BUILDS = ("wheel", "install")


def _is_build(argv: list[str]) -> bool:
    if not argv:
        return False
    prog = Path(str(argv[0])).name
    args = [str(a) for a in argv[1:]]
    if prog == "cmake":
        return any(a in ("-S", "-B", "--build") or a.startswith(("-S", "-B")) for a in args)
    if prog in ("ninja", "make"):
        return True
    if prog.startswith("python") or prog == "pip" or prog.startswith("pip3"):
        if "-m" in args:
            mod = args[args.index("-m") + 1: args.index("-m") + 3]
            return bool(mod) and (mod[0] == "build" or mod[0] == "pip" and len(mod) > 1 and mod[1] in _PIP_BUILDS)
        return prog.startswith("pip") and bool(args) and args[0] in _PIP_BUILDS
    return False


@pytest.fixture(autouse=True)
def _markers_follow_what_tests_run(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test without the ``slow`` marker that starts a build, or without ``cuda`` that starts
    nvcc, fails and names the fixture to request, so the fast half stays fast and the markers
    stay true (the child processes it starts are not followed)."""
    marks = {m.name for m in request.node.iter_markers()}
    if {"slow", "cuda"} <= marks:
        return
    original = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *a: Any, **kw: Any) -> None:
        argv = [args] if isinstance(args, (str, bytes, Path)) else list(args)
        if "slow" not in marks and _is_build(argv):
            pytest.fail(f"{request.node.nodeid} builds ({' '.join(map(str, argv[:4]))} ...): request the `builds` fixture", pytrace=False)
        if "cuda" not in marks and argv and Path(str(argv[0])).name == "nvcc":
            pytest.fail(f"{request.node.nodeid} runs nvcc: request the `nvcc` fixture", pytrace=False)
        original(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
