"""Whole-wheel, directory and package answers (issue 14 item 6): an unreadable file is listed with
its one-line error and the exit code says so while every other binary is still reported; `check`
takes what `inspect` takes and names each binary; one package-level summary line; a CPU device's
vendor is the CPU's, not the OpenCL runtime's."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from aotwheel.inspector import inspect

from _check_util import child_env, fat_binary, opencl_cpu_env, run_cli, single_binary
from _inspect_util import fetch

BNB = ("bitsandbytes", "0.50.2", "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
       "55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283")


def test_bitsandbytes_wheel_reports_every_vendor_library():
    """The whole wheel: before issue 14 the two XPU libraries ended the report (exit 2)."""
    whl = fetch(*BNB)
    with zipfile.ZipFile(whl) as z:
        libs = sorted(n for n in z.namelist() if n.endswith(".so"))
    report = inspect(whl)
    assert report.errors == []
    by_name = {f.path.split("!", 1)[1]: f for f in report.files}
    assert sorted(by_name) == libs
    vendors = {name: {t.vendor for t in f.native_targets} for name, f in by_name.items()}
    assert sum(v == {"nvidia"} for v in vendors.values()) == sum("cuda" in n for n in libs) == 7
    assert sum(v == {"amd"} for v in vendors.values()) == sum("rocm" in n for n in libs) == 6
    assert sum(v == {"intel"} for v in vendors.values()) == sum("xpu" in n for n in libs) == 2
    assert vendors["bitsandbytes/libbitsandbytes_cpu.so"] == set()


@pytest.fixture()
def wheel_with_a_corrupt_member(tmp_path) -> Path:
    good = fat_binary("pvc,acm-g10").read_bytes()
    whl = tmp_path / "mixed-0.1-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("mixed/kernels.bin", good)
        z.writestr("mixed/broken.so", b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\x03\x00\x3e\x00" + b"\xff" * 40)  # headers past the end
        z.writestr("mixed/other.bin", good)
    return whl


def test_wheel_report_goes_on_past_an_unreadable_member(wheel_with_a_corrupt_member):
    report = inspect(wheel_with_a_corrupt_member)
    assert [f.path.rsplit("!", 1)[1] for f in report.files] == ["mixed/kernels.bin", "mixed/broken.so", "mixed/other.bin"]
    (bad,) = report.errors
    assert bad.path.endswith("!mixed/broken.so") and "\n" not in bad.error and re.search(r"offset 0x[0-9a-f]+", bad.error)
    assert all(f.native_targets for f in report.files if f is not bad)


def test_cli_inspect_and_check_list_the_error_and_exit_2(wheel_with_a_corrupt_member):
    env = child_env()
    proc = run_cli(["inspect", str(wheel_with_a_corrupt_member)], env)
    assert proc.returncode == 2
    assert proc.stdout.count("error: ") == 1 and "mixed/kernels.bin" in proc.stdout and "mixed/other.bin" in proc.stdout
    assert "1 file could not be read" in proc.stdout
    proc = run_cli(["check", str(wheel_with_a_corrupt_member), "--device", "pvc", "--jit", "ignore"], env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stdout.splitlines()
    # Each binary named, its verdicts indented under it; the unreadable one says why.
    assert [line for line in lines if not line.startswith("  ")][:3] == [
        f"{wheel_with_a_corrupt_member}!mixed/{n}" for n in ("broken.so", "kernels.bin", "other.bin")
    ]
    assert any("[rule unreadable]" in line for line in lines)
    assert lines[-1] == f"{wheel_with_a_corrupt_member}: native on: pvc"


def test_check_takes_a_package_name_and_summarizes(tmp_path):
    pkg = tmp_path / "site" / "fakepkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise SystemExit('imported!')\n")  # check must not import it
    (pkg / "a.bin").write_bytes(fat_binary("pvc,acm-g10").read_bytes())
    (pkg / "sub" / "b.bin").write_bytes(single_binary("pvc").read_bytes())
    env = child_env(PYTHONPATH=f"{tmp_path / 'site'}:{child_env()['PYTHONPATH']}")
    proc = run_cli(["check", "fakepkg", "--device", "pvc,acm-g11", "--jit", "ignore"], env)
    out = proc.stdout.splitlines()
    assert str(pkg / "a.bin") in out and str(pkg / "sub" / "b.bin") in out, proc.stdout + proc.stderr
    # acm-g11: JIT for a.bin (generic_ir), nothing for b.bin (no IR) -> unsupported for the package.
    assert out[-1] == "fakepkg: native on: pvc; unsupported on: acm-g11"
    assert proc.returncode == 1


def test_cpu_device_vendor_is_the_cpus_not_the_runtimes():
    env = opencl_cpu_env()
    proc = run_cli(["devices", "--json"], env)
    assert proc.returncode == 0, proc.stderr
    import json

    cpus = [d for d in json.loads(proc.stdout)["devices"] if d["kind"] == "cpu"]
    assert cpus
    # Independent reading: the kernel's CPUID vendor string.
    ident = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("vendor_id"))
    want = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(ident, ident.lower())
    assert {d["vendor"] for d in cpus} == {want}


def test_cpu_vendor_from_the_name_then_cpuid(tmp_path):
    from aotwheel.backends.intel.probes.opencl import cpu_vendor

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\n")
    assert cpu_vendor("AMD EPYC 9654 96-Core Processor", "Intel(R) Corporation", str(info)) == "amd"
    assert cpu_vendor("Intel(R) Xeon(R) Platinum 8480+", "Intel(R) Corporation", str(info)) == "intel"
    assert cpu_vendor("Generic x86 CPU", "Intel(R) Corporation", str(info)) == "amd"
    assert cpu_vendor("Generic x86 CPU", "Intel(R) Corporation", str(tmp_path / "missing")) == "intel(r) corporation"


def test_inspect_summary_says_generic_ir_serves_intel_gpus_only(tmp_path):
    from aotwheel.report import summary

    (fat,) = inspect(fat_binary("pvc,acm-g10")).files
    assert "JIT fallback: SPIR-V (generic_ir: Intel GPUs only)" in summary(fat)
    from _inspect_util import spirv

    (spv,) = inspect(spirv(tmp_path)).files
    assert "JIT fallback: SPIR-V ·" in summary(spv) + " ·"
