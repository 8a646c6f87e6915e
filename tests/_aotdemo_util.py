"""Helpers for the tests that build examples/downstream (scikit-build-core, setuptools, matrix).

Everything here reads built files with binutils (readelf, objcopy, ar), independently of
aotwheel's own parsers.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import CLANG, LLVM_SPIRV, REPO, unzstd  # noqa: F401  # noqa: F401 (re-exported to the aotdemo tests)

EXAMPLE = REPO / "examples" / "downstream"

#: IP versions from docs/formats.md §2 (written by hand): the ar member names ocloc gives them.
PVC_MEMBER = "64.12.60.7"       # pvc
ACM_G10_MEMBER = "64.12.55.8"   # acm-g10 = ats-m150
SPIRV_MAGIC = bytes([0x03, 0x02, 0x23, 0x07])
FAT_SECTION = "__CLANG_OFFLOAD_BUNDLE__sycl-spir64_gen"
SPIRV_SECTION = "__CLANG_OFFLOAD_BUNDLE__sycl-spir64"

#: The CMakeLists a scikit-build-core user writes (no fallback when SKBUILD_SABI_COMPONENT is unset):
#: `aotwheel build warm` must configure it as scikit-build-core does (issue 30 item 3).
SKBUILD_CMAKELISTS = """cmake_minimum_required(VERSION 3.26)
project(${SKBUILD_PROJECT_NAME} LANGUAGES C)
find_package(Python 3.10 REQUIRED COMPONENTS Interpreter Development.Module ${SKBUILD_SABI_COMPONENT})
Python_add_library(_demo MODULE USE_SABI 3.10 WITH_SOABI csrc/_demo.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
aotwheel_add_device_code(_demo NAME demo SOURCES kernels/saxpy.cl DEVLIST DEVS DESTINATION aotdemo)
install(TARGETS _demo LIBRARY DESTINATION aotdemo)
"""

BINUTILS = ("readelf", "objcopy", "ar")
TOOLS = ("cmake", "ninja", "ocloc", CLANG, LLVM_SPIRV, "cc", *BINUTILS)


def require_tools(*tools: str) -> None:
    """Skip (only) when a tool the test needs is absent; CI installs them all."""
    missing = [t for t in tools or TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing {', '.join(missing)} (CI installs them via ci/setup.sh)")


def copy_example(dest: Path) -> Path:
    """A clean copy of examples/downstream (no build trees from earlier runs)."""
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "dist"))
    return dest


def unpack(wheel: Path, dest: Path) -> Path:
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(dest)
    return dest


def section_names(so: Path) -> list[str]:
    """Section names from `readelf -SW` (the table rows, '[ n] name TYPE ...')."""
    out = subprocess.run(["readelf", "-SW", str(so)], capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("[") and "]" in line:
            rest = line.split("]", 1)[1].split()
            if rest and rest[0] != "Name":
                names.append(rest[0])
    return names


def section_bytes(so: Path, section: str, tmp: Path) -> bytes:
    out = tmp / (section.replace("/", "_") + ".bin")
    subprocess.run(["objcopy", "-O", "binary", f"--only-section={section}", str(so), str(out)], check=True)
    return out.read_bytes()


def ar_members(data: bytes, tmp: Path) -> list[str]:
    """`ar t` of an archive given as bytes, GNU '/' suffixes and alignment pads dropped."""
    path = tmp / "members.ar"
    path.write_bytes(data)
    out = subprocess.run(["ar", "t", str(path)], capture_output=True, text=True, check=True).stdout
    return [m.rstrip("/") for m in out.split() if not m.startswith("pad_")]


def install_aotwheel(dest: Path) -> Path:
    """`pip install --target` this checkout (as a user would install aotwheel); returns the site dir.

    USE_AOT_DEVLIST=none keeps aotwheel's own kernel build short; downstream builds choose their own.
    """
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    env["USE_AOT_DEVLIST"] = "none"
    site = dest / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-cache-dir",
         "--target", str(site), "-C", f"build-dir={dest / 'build'}", str(REPO)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return site
