"""find_package(aotwheel CONFIG) + aotwheel_resolve_devlist() in a real CMake configure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import aotwheel

pytestmark = [
    pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake and ninja (bash ci/setup.sh)"),
    pytest.mark.usefixtures("builds"),
]

REPO = Path(__file__).resolve().parents[1]

PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(devlist_probe LANGUAGES NONE)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
file(WRITE "${CMAKE_BINARY_DIR}/result.txt"
  "names=${DEVS}\\nips=${DEVS_IPS}\\njit=${DEVS_JIT_FALLBACK}\\nocloc=${DEVS_OCLOC_DEVICE}\\nsycl=${DEVS_SYCL_TARGETS}\\ncuda=${DEVS_CUDA}\\ncuda_archs=${DEVS_CUDA_ARCHITECTURES}\\n")
"""


def config_dirs() -> list[Path]:
    dirs = [REPO / "cmake"]
    installed = Path(aotwheel.__file__).parent / "cmake"
    if (installed / "aotwheel-config.cmake").is_file():
        dirs.append(installed)
    return dirs


def configure(tmp_path: Path, config_dir: Path, *defines: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "CMakeLists.txt").write_text(PROJECT)
    build = tmp_path / "build"
    shutil.rmtree(build, ignore_errors=True)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    full_env.update(env or {})
    proc = subprocess.run(
        ["cmake", "-G", "Ninja", "-S", str(src), "-B", str(build), f"-Daotwheel_DIR={config_dir}", *defines],
        capture_output=True, text=True, env=full_env, timeout=120,
    )
    result: dict[str, str] = {}
    if (build / "result.txt").is_file():
        result = dict(line.split("=", 1) for line in (build / "result.txt").read_text().splitlines())
    return proc, result


@pytest.fixture(params=config_dirs(), ids=lambda p: "installed" if "site-packages" in str(p) else "in-tree")
def config_dir(request: pytest.FixtureRequest) -> Path:
    return request.param


def test_default_devlist(tmp_path: Path, config_dir: Path) -> None:
    proc, result = configure(tmp_path, config_dir)
    assert proc.returncode == 0, proc.stderr
    assert result == {
        "names": "pvc;acm-g10",
        "ips": "12.60.7;12.55.8",
        "jit": "ON",
        "ocloc": "pvc,acm-g10",
        "sycl": "spir64_gen,spir64",
        "cuda": "",
        "cuda_archs": "",
    }


def test_cache_variable_wins_over_environment(tmp_path: Path, config_dir: Path) -> None:
    proc, result = configure(tmp_path, config_dir, "-DUSE_AOT_DEVLIST=dg2-g11", env={"USE_AOT_DEVLIST": "pvc"})
    assert proc.returncode == 0, proc.stderr
    assert result["names"] == "acm-g11"


def test_environment_fallback_and_jit_off(tmp_path: Path, config_dir: Path) -> None:
    proc, result = configure(tmp_path, config_dir, env={"USE_AOT_DEVLIST": "xe-hpc", "USE_AOT_JIT_FALLBACK": "OFF"})
    assert proc.returncode == 0, proc.stderr
    assert result == {"names": "pvc", "ips": "12.60.7", "jit": "OFF", "ocloc": "pvc", "sycl": "spir64_gen", "cuda": "", "cuda_archs": ""}


def test_mixed_vendor_list(tmp_path: Path, config_dir: Path) -> None:
    # CMake's CUDA_ARCHITECTURES spelling of "cubin 80, cubin+PTX 90" is 80-real;90.
    proc, result = configure(tmp_path, config_dir, "-DUSE_AOT_DEVLIST=pvc,sm_80,sm_90,ptx")
    assert proc.returncode == 0, proc.stderr
    assert result["names"] == "pvc" and result["cuda"] == "sm_80;sm_90;compute_90"
    assert result["cuda_archs"] == "80-real;90"


def test_none_means_spirv_only(tmp_path: Path, config_dir: Path) -> None:
    proc, result = configure(tmp_path, config_dir, "-DUSE_AOT_DEVLIST=none")
    assert proc.returncode == 0, proc.stderr
    assert result["names"] == "" and result["sycl"] == "spir64"


@pytest.mark.parametrize("value,needle", [("bogus", "unknown device 'bogus'"), ("pvc;rm -rf /", "character ';'"), ("-DFOO=1", "'-dfoo=1'")])
def test_bad_devlist_stops_configure(tmp_path: Path, config_dir: Path, value: str, needle: str) -> None:
    proc, result = configure(tmp_path, config_dir, f"-DUSE_AOT_DEVLIST={value}")
    assert proc.returncode != 0
    assert result == {}
    flat = " ".join(proc.stderr.split())  # CMake wraps long messages
    assert "aotwheel_resolve_devlist: USE_AOT_DEVLIST: " in flat
    assert needle.lower() in flat.lower()


@pytest.mark.parametrize("safe_path", ["", "1"], ids=["plain", "PYTHONSAFEPATH"])
def test_resolver_is_this_config_files_aotwheel_with_pythonpath_after_it(tmp_path: Path, config_dir: Path, safe_path: str) -> None:
    # The resolver runs as <aotwheel>/__main__.py, no `cmake -E env PYTHONPATH=...` around it: the
    # aotwheel of this config file still comes first when PYTHONPATH names another one, and the
    # environment's PYTHONPATH entries follow it (recorded by a sitecustomize on PYTHONPATH).
    other = tmp_path / "other"
    (other / "aotwheel").mkdir(parents=True)
    (other / "aotwheel" / "__init__.py").write_text("raise ImportError('not the aotwheel of this config file')\n")
    record = tmp_path / "record.jsonl"
    (other / "sitecustomize.py").write_text(
        "import atexit, json, sys\n"
        "def _record():\n"
        "    if 'aotwheel' in sys.modules:  # the resolver, not CMake's own Python probes\n"
        f"        with open({str(record)!r}, 'a') as f:\n"
        "            f.write(json.dumps({'path': sys.path, 'aotwheel': sys.modules['aotwheel'].__file__}) + '\\n')\n"
        "atexit.register(_record)\n")
    env = {"PYTHONPATH": str(other), **({"PYTHONSAFEPATH": safe_path} if safe_path else {})}
    proc, result = configure(tmp_path, config_dir, env=env)
    assert proc.returncode == 0, proc.stderr
    assert result["names"] == "pvc;acm-g10"
    (run,) = [json.loads(line) for line in record.read_text().splitlines()]
    root = os.path.realpath(REPO / "python" if config_dir == REPO / "cmake" else config_dir.parents[1])
    assert os.path.realpath(run["aotwheel"]) == os.path.join(root, "aotwheel", "__init__.py")
    assert [os.path.realpath(p) for p in run["path"][:2]] == [root, os.path.realpath(other)]
