"""The inspector on this repository's own fat wheel (`pip wheel .` with USE_AOT_DEVLIST=pvc,ats-m150):
native pvc 12.60.7 and acm-g10 12.55.8 (IPs from `ocloc ids`), SPIR-V for JIT, every kernel of csrc."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import zipfile

import pytest

from aotwheel.inspector import find_spirv, inspect

from _inspect_util import REPO, ocloc_ip, require
from conftest import CLANG, LLVM_SPIRV

pytestmark = pytest.mark.usefixtures("builds")

DEVLIST = "pvc,ats-m150"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    require("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV)
    if not (REPO / "cmake" / "aotwheel-intel.cmake").is_file() or not (REPO / "csrc").is_dir():
        pytest.skip("the CMake build (cmake/aotwheel-intel.cmake, csrc/) is not in this checkout")
    root = tmp_path_factory.mktemp("ownwheel")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("USE_AOT_")}
    env.update(USE_AOT_DEVLIST=DEVLIST, AOTWHEEL_CACHE_DIR=str(root / "cache"))
    # Reuse this interpreter's scikit-build-core when present (seconds); else an isolated build.
    flags = ["--no-build-isolation"] if importlib.util.find_spec("scikit_build_core") else []
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *flags, "-w", str(root / "dist"), str(REPO), "-C", f"build-dir={root / 'build'}"],
        env=env, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return next((root / "dist").glob("*.whl"))


def test_own_fat_wheel_has_pvc_and_acm_g10_natively_and_spirv(wheel):
    report = inspect(wheel)
    (fr,) = [f for f in report.files if f.images]
    assert fr.path.endswith("!aotwheel/_kernels.abi3.so")
    expected = {("pvc", ocloc_ip("pvc")), ("acm-g10", ocloc_ip("ats-m150"))}
    assert expected == {("pvc", "12.60.7"), ("acm-g10", "12.55.8")}  # docs/formats.md §2 agrees with ocloc
    assert {(t.name, t.ip) for t in fr.native_targets} == expected
    assert {t.member for t in fr.native_targets} == {"64." + ip for _, ip in expected}
    assert fr.ir == ["spirv"]
    assert fr.warnings == []
    sources = "".join(p.read_text() for p in (REPO / "csrc" / "kernels").glob("*.cl"))
    assert fr.kernels == len(re.findall(r"__kernel\b", sources))


def test_own_wheel_spirv_is_a_valid_module(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        z.extract("aotwheel/_kernels.abi3.so", tmp_path)
    spv = find_spirv(tmp_path / "aotwheel" / "_kernels.abi3.so")
    assert spv is not None and spv[:4] == b"\x03\x02\x23\x07"
    out = tmp_path / "k.spv"
    out.write_bytes(spv)
    # llvm-spirv-15 can read it back and sees kernels in it.
    text = subprocess.run([LLVM_SPIRV, "-to-text", str(out), "-o", "-"], capture_output=True, text=True, check=True).stdout
    assert re.search(r"EntryPoint\s+6\s", text)
