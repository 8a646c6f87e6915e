"""``aotwheel inspect`` and ``aotwheel check --device`` import what their path needs and nothing
else (issue 40's CLI budget: each command within 4 times ``python -c pass``; the times are
benchmarks/cli_startup.py's, never asserted here). The real commands run in a subprocess on real
binaries; the modules they loaded are read from ``sys.modules`` when they return."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
CUDA_LIB = DATA / "cuda-h100" / "libkern_sm_90.so"  # a host ELF with an NVIDIA fat binary, nothing compressed
FAT_BINARY = DATA / "ocloc-22.43" / "pvc+acm-g10.zebin.ar"  # a bare ocloc fat binary: zebins, generic_ir SPIR-V
POISONED = DATA / "ocloc-22.43" / "acm-g10.fp64-poisoned.zebin"  # a zebin with fp64 poison stubs

# Never on these paths: what typing costs (the project's TYPE_CHECKING = False instead), what
# only wheels, directories, --deep or builds need, and the probes' machinery.
NEVER = {"typing", "pathlib", "subprocess", "tempfile", "zipfile", "shutil", "hashlib", "mmap", "importlib.metadata",
         "pyopencl", "aotwheel.probe.probes", "aotwheel.devlist", "aotwheel.opencl"}
# Records a path that does not meet them must not make (their modules make them when imported).
CUDA_RECORDS = "aotwheel.backends.nvidia.report"  # NVIDIA's report fields: CUDA code only
SELFTEST_RECORDS = "aotwheel.outcomes"  # selftest results


def _loaded(*argv: str) -> tuple[set[str], str, int]:
    """Modules ``aotwheel ARGV`` has loaded when it returns, its stdout and its exit status."""
    code = ("import sys\nfrom aotwheel.cli import main\ntry:\n    rc = main(sys.argv[1:])\nexcept SystemExit as exc:\n    rc = exc.code\n"
            "sys.stderr.write('\\n' + repr(sorted(sys.modules)) + '\\n' + repr(rc))\n")
    tree = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=REPO / "tests",
                          env={"PATH": "/usr/bin:/bin", "AOTWHEEL_JIT": "ignore", **tree}, check=True)
    *_, modules, rc = proc.stderr.splitlines()
    return set(ast.literal_eval(modules)), proc.stdout, int(rc)  # a list of module names and an int, printed by repr()


@pytest.mark.parametrize("argv", [("inspect", str(CUDA_LIB)), ("inspect", str(FAT_BINARY)), ("inspect", str(POISONED)),
                                  ("inspect", "--json", str(FAT_BINARY))])
def test_inspect_imports_nothing_its_binary_does_not_need(argv: tuple[str, ...]) -> None:
    loaded, out, rc = _loaded(*argv)
    assert rc == 0 and out.startswith("{" if argv[1] == "--json" else argv[-1]), (rc, out)
    assert "aotwheel.inspector" in loaded
    # no zstd frame in these binaries: no zstandard (it imports platform and, before 3.12, typing)
    unwanted = (NEVER | {"zstandard", "platform", SELFTEST_RECORDS, "aotwheel.results", "aotwheel.runtime"}) & loaded
    if argv[-1] == str(CUDA_LIB):  # NVIDIA's fat binary entries are typing.NamedTuple, as the C scanner makes them
        unwanted.discard("typing")
    assert not unwanted, sorted(unwanted)
    if argv[-1] != str(CUDA_LIB) and argv[1] != "--json":  # the JSON names every vendor's fields, empty ones too
        assert CUDA_RECORDS not in loaded, "an Intel binary made NVIDIA's report records"
    if argv[-1] == str(POISONED):
        assert "poisoned there" in out  # the poisoned kernels were named


def test_the_cuda_records_come_with_cuda_code_and_with_the_json() -> None:
    # The other side of the test above: the records exist where they are used.
    assert CUDA_RECORDS in _loaded("inspect", str(CUDA_LIB))[0]
    loaded, out, _ = _loaded("inspect", "--json", str(FAT_BINARY))
    assert CUDA_RECORDS in loaded and '"cuda": []' in out


@pytest.mark.parametrize("device", ["pvc", "acm-g10", "sm_90", "pvc,sm_90"])
@pytest.mark.parametrize("binary", [FAT_BINARY, CUDA_LIB])
def test_check_with_named_devices_imports_only_their_vendors_rules(device: str, binary: Path) -> None:
    loaded, out, rc = _loaded("check", "--device", device, str(binary))
    assert rc in (0, 1) and out.count("[rule ") == len(device.split(",")), out
    assert {"aotwheel.runtime", "aotwheel.results"} <= loaded
    # (typing: the backends' protocol and their backend modules import it at run time, for now)
    # (aotwheel.config: the build settings; the JIT policy is read from aotwheel.variables)
    unwanted = (NEVER - {"typing"} | {"zstandard", SELFTEST_RECORDS, "aotwheel.syclcache", "aotwheel.config", "importlib.util"}) & loaded
    assert not unwanted, sorted(unwanted)
    if all(": native " in line for line in out.splitlines()):
        # no AMD device and no remedy to word (a remedy names every vendor's targets): neither the
        # AMD lookup nor its target ids (the AMD backend still says the binary has no AMD code)
        assert "aotwheel.backends.amd.targets" not in loaded, sorted(loaded)
    if binary == FAT_BINARY and "sm_" not in device:  # no CUDA code and no NVIDIA device to judge
        assert CUDA_RECORDS not in loaded


def test_an_amd_device_imports_the_amd_lookup() -> None:
    loaded, out, _ = _loaded("check", "--device", "gfx90a", str(CUDA_LIB))
    assert "gfx90a: unsupported [rule other-vendor]" in out and "aotwheel.backends.amd.targets" in loaded


def test_a_jit_verdict_asks_the_sycl_cache_state_only_then() -> None:
    # tgllp has no image in the fat binary: the driver rebuilds generic_ir (a JIT verdict)
    loaded, out, rc = _loaded("check", "--device", "tgllp", str(FAT_BINARY))
    assert rc == 0 and ": jit " in out and "aotwheel.syclcache" in loaded
    loaded, out, rc = _loaded("check", "--device", "pvc", str(FAT_BINARY))
    assert rc == 0 and ": native " in out and "aotwheel.syclcache" not in loaded


def test_the_moved_functions_have_one_home() -> None:
    from aotwheel import probe, results
    from aotwheel.backends.intel import zebin, zeinfo
    from aotwheel.formats import ar, arname

    assert results.ProbeResult is probe.ProbeResult  # the probes' result type, re-exported by the probe package
    # .ze_info's readers live in zeinfo, member names in arname: their old modules name neither.
    assert callable(zeinfo.poisoned_kernels) and callable(zeinfo.validate_zebin)
    assert not hasattr(zebin, "poisoned_kernels") and not hasattr(zebin, "validate_zebin")
    assert arname.member_target("64.12.60.7") == (64, "12.60.7") and not hasattr(ar, "member_target")
