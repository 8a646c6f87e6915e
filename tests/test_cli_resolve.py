"""`aotwheel resolve` as a user runs it: real subprocesses, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require, unbuildable_devices


def aotwheel(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=60)


def test_done_when_aliases_collapse() -> None:
    proc = aotwheel("resolve", "PVC, ats-m150,dg2-g10", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [(t["name"], t["ip"]) for t in data["targets"]] == [("pvc", "12.60.7"), ("acm-g10", "12.55.8")]
    assert data["ocloc_device"] == "pvc,acm-g10"
    assert data["sycl_targets"] == "spir64_gen,spir64"
    assert data["jit_fallback"] is True


@pytest.mark.parametrize("text,needle", [("pvc;rm -rf /", "';'"), ("pcv", "did you mean pvc?"), (" , ", "empty"), ("$(touch pwned)", "'$'")])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path: Path, text: str, needle: str) -> None:
    proc = aotwheel("resolve", text, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("aotwheel: error: ") and needle in lines[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "fmt,expected", [("ocloc", "pvc,acm-g10"), ("sycl-targets", "spir64_gen,spir64"), ("names", "pvc,acm-g10"), ("ips", "12.60.7,12.55.8")]
)
def test_formats(fmt: str, expected: str) -> None:
    proc = aotwheel("resolve", "pvc,ats-m150", "--format", fmt)
    assert proc.returncode == 0 and proc.stdout.strip() == expected


def test_reads_environment_and_default() -> None:
    assert aotwheel("resolve", "--format", "names", env={"USE_AOT_DEVLIST": "dg2-g11"}).stdout.strip() == "acm-g11"
    assert aotwheel("resolve", "--format", "names").stdout.strip() == "pvc,acm-g10"  # default pvc,ats-m150
    off = aotwheel("resolve", "pvc", "--format", "sycl-targets", env={"USE_AOT_JIT_FALLBACK": "OFF"})
    assert off.stdout.strip() == "spir64_gen"
    flag = aotwheel("resolve", "pvc", "--format", "sycl-targets", "--no-jit-fallback")
    assert flag.stdout.strip() == "spir64_gen"


def test_json_compress_word_for_cmake_defaults_to_on() -> None:
    # What aotwheel_add_device_code / aotwheel_target_sycl read: CMake's USE_AOT_COMPRESS (--compress),
    # else the environment's, as written (CMake checks the word), else aotwheel's default, ON.
    def word(*args: str, **env: str) -> str:
        proc = aotwheel("resolve", "pvc", "--json", *args, env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["compress"]

    assert word() == "ON"
    assert word(USE_AOT_COMPRESS=" ") == "ON"  # empty counts as unset
    assert word(USE_AOT_COMPRESS="off") == "off"
    assert word("--compress=OFF", USE_AOT_COMPRESS="ON") == "OFF"


def test_family_output_names_products() -> None:
    proc = aotwheel("resolve", "xe-hpg")
    assert proc.returncode == 0
    assert "'xe-hpg' is a family: its shipping products are acm-g10, acm-g11, acm-g12" in proc.stdout
    # A generic name is one product, as ocloc builds it (`ocloc ids dg2` = 12.55.8 on 26.x).
    proc = aotwheel("resolve", "dg2")
    assert proc.returncode == 0 and "'dg2' is ocloc's generic name for acm-g10" in proc.stdout


def test_list_covers_catalog() -> None:
    proc = aotwheel("resolve", "--list")
    assert proc.returncode == 0
    for word in ("pvc", "ats-m150", "intel_gpu_bmg_g21", "xe-hpc", "none", "no-jit"):
        assert word in proc.stdout


@pytest.mark.skipif(shutil.which("ocloc") is None, reason="ocloc not installed (apt-get install intel-opencl-icd)")
def test_toolchain_check_names_ocloc_version() -> None:
    require("ocloc")
    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "intel-opencl-icd", "intel-ocloc"], capture_output=True, text=True).stdout
    ok = aotwheel("resolve", "pvc,ats-m150", "--toolchain", "ocloc")
    assert ok.returncode == 0, ok.stderr
    missing = unbuildable_devices()
    if not missing:
        pytest.skip("the installed ocloc builds every catalog device with a known first release (Debian sid's 26.x)")
    from aotwheel.backends.intel.ocloc import FIRST_OCLOC

    # Debian 12's ocloc 22.43 predates Battlemage (docs/formats.md §2).
    name = missing[0]
    bad = aotwheel("resolve", f"pvc,{name}", "--toolchain", "ocloc")
    assert bad.returncode == 2
    (line,) = bad.stderr.splitlines()
    assert f"cannot build {name} (" in line and f"first built by ocloc {FIRST_OCLOC[name]}): install ocloc {FIRST_OCLOC[name]} or newer" in line
    assert "apt-get install intel-opencl-icd" not in line  # the package that is too old
    assert "apt-get install intel-ocloc" in line  # the one that is new enough (Debian sid)
    if version:  # the version ocloc reports is the package's upstream version
        assert version.split("-")[0].rsplit(".", 1)[0] in line
    if {"bmg-g21", "bmg-g31"} <= set(missing):
        # A family names every member this ocloc cannot build, each with its first ocloc (docs/formats.md §10).
        fam = aotwheel("resolve", "xe2-hpg", "--toolchain", "ocloc")
        (line,) = fam.stderr.splitlines()
        assert fam.returncode == 2 and "bmg-g21 (20.1.0; first built by ocloc 24.31), bmg-g31 (20.2.0; first built by ocloc 25.27)" in line
        assert "install ocloc 25.27 or newer" in line and "leave them out of USE_AOT_DEVLIST" in line and "JIT" in line


def test_toolchain_check_missing_ocloc(tmp_path: Path) -> None:
    proc = aotwheel("resolve", "pvc", "--toolchain", "ocloc", env={"PATH": str(tmp_path), "AOTWHEEL_OCLOC": ""})
    assert proc.returncode == 2
    assert "Missing ocloc" in proc.stderr and "apt-get install intel-opencl-icd" in proc.stderr


def test_help_lists_the_backends_formats_and_tools() -> None:
    # --format's values and --toolchain's tools are declared by the backends (Intel's ocloc, names,
    # ips; NVIDIA's nvcc; AMD's hipcc) around the core's sycl-targets, in the registry's order.
    text = " ".join(aotwheel("resolve", "--help").stdout.split())
    assert "[--json | --format {ocloc,sycl-targets,names,ips} | --list]" in text
    assert "[--toolchain {ocloc,nvcc,hipcc}] [--ocloc PATH] [--nvcc PATH] [--hipcc PATH]" in text
    assert "print one value: ocloc -device list, -fsycl-targets, names or IP versions" in text
    assert "--ocloc PATH ocloc to check against (default: $AOTWHEEL_OCLOC, then PATH)" in text
    assert "--hipcc PATH hipcc to check against (default: $AOTWHEEL_HIPCC, $HIPCC, PATH, $ROCM_PATH/bin, /opt/rocm/bin)" in text
    bad = aotwheel("resolve", "pvc", "--toolchain", "icpx")
    assert bad.returncode == 2 and "invalid choice: 'icpx' (choose from 'ocloc', 'nvcc', 'hipcc')" in bad.stderr


def test_python_api_is_lazy() -> None:
    code = "import sys, aotwheel; heavy = [m for m in ('elftools', 'zstandard', 'numpy', 'pyopencl', 'aotwheel.devlist') if m in sys.modules]; print(heavy)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
    code = ("import aotwheel; from aotwheel.backends.intel.devlist import IntelPart; "
            "print([t.name for t in aotwheel.resolve('ats-m150,pvc').part_of(IntelPart).targets])")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "['acm-g10', 'pvc']"


def test_console_script_and_module_agree() -> None:
    exe = shutil.which("aotwheel")
    if exe is None:
        pytest.skip("console script not installed (pip install . puts it on PATH)")
    a = subprocess.run([exe, "resolve", "dg2", "--json"], capture_output=True, text=True)
    assert a.returncode == 0 and a.stdout == aotwheel("resolve", "dg2", "--json").stdout
