"""Issue 12: one vendor-neutral model. Each fault the issue lists is reproduced here first (real
nvcc and ocloc binaries, the real CLI in a child process), then the schema-2 report, the one
run-time loop, the CLI contract (one-line warnings, --json everywhere, exit codes) and the
import graph. Expected values come from the nvcc -gencode flags and ocloc -device lists used to
build each binary, never from aotwheel's output."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from _imports_util import package_modules, static_imports

from _check_util import child_env, fat_binary, run_cli
from _cuda_util import VADD, VSCALE, nvcc_out, source
from conftest import CLANG, LLVM_SPIRV

REPO = Path(__file__).resolve().parents[1]
H100 = REPO / "tests" / "data" / "cuda-h100"
# The fat binary: -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
# -gencode arch=compute_90a,code=sm_90a  ->  cubins sm_80, sm_90, sm_90a and PTX compute_90.
GENCODE = ("-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=[sm_90,compute_90]",
           "-gencode=arch=compute_90a,code=sm_90a")


@pytest.fixture(scope="module")
def libk(nvcc: str) -> Path:
    return nvcc_out("libk_issue12.so", "-shared", "-Xcompiler", "-fPIC", *GENCODE,
                    str(source("vadd.cu", VADD)), str(source("vscale.cu", VSCALE)))


# ---- the report: schema 2 -------------------------------------------------------------------


def test_fat_binary_summary_names_native_cubins_and_ptx_fallback(libk: Path) -> None:
    from aotwheel.cli.inspect import render
    from aotwheel.inspector import inspect

    report = inspect(libk)
    [fr] = report.files
    assert [t.name for t in fr.native_targets if t.vendor == "nvidia"] and all(t.format == "cubin" for t in fr.native_targets)
    assert sorted({t.name for t in fr.native_targets}) == ["sm_80", "sm_90", "sm_90a"]
    assert {t.vendor for t in fr.native_targets} == {"nvidia"}
    assert fr.ir == ["ptx compute_90"]
    text = render(report)
    summary = [line.strip() for line in text.splitlines() if line.strip().startswith("native:")]
    assert summary == ["native: sm_80, sm_90, sm_90a · JIT fallback: PTX compute_90"]


def test_json_is_schema_2_with_every_vendor(libk: Path) -> None:
    proc = run_cli(["inspect", str(libk), "--json"], child_env())
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 2
    [f] = doc["files"]
    assert sorted({(t["vendor"], t["name"]) for t in f["native_targets"]}) == [("nvidia", "sm_80"), ("nvidia", "sm_90"), ("nvidia", "sm_90a")]
    assert f["ir"] == ["ptx compute_90"]


def test_intel_json_keeps_its_fields_and_adds_vendor() -> None:
    # The schema-1 fields (issue 4's contract) must all still be there: additions only.
    proc = run_cli(["inspect", str(fat_binary("pvc,acm-g10")), "--json"], child_env())
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 2 and set(doc) == {"schema", "path", "files"}
    [f] = doc["files"]
    assert {"path", "native_targets", "ir", "images", "kernels", "kind", "kernels_by_triple", "warnings", "cuda"} <= set(f)
    assert f["ir"] == ["spirv"]
    for t in f["native_targets"]:
        assert {"name", "ip", "member", "format", "size", "image", "generic", "core", "product", "rebuildable"} <= set(t)
        assert t["vendor"] == "intel"
    assert sorted(t["name"] for t in f["native_targets"]) == ["acm-g10", "pvc"]


# ---- "More faults", each reproduced -----------------------------------------------------------


def test_cuda_only_library_on_an_intel_device_is_unsupported_saying_why(fresh) -> None:
    from aotwheel import UnsupportedDeviceError, check, ensure

    lib = H100 / "libkern_sm_90.so"
    [v] = check(lib, devices="pvc", policy="ignore")
    assert (v.device, v.verdict, v.rule, v.vendor) == ("pvc", "unsupported", "other-vendor", "intel")
    assert "only NVIDIA: sm_90" in v.reason
    # The Intel backend's remedy: add the device, keep what the binary has.
    assert v.remedy == "rebuild with USE_AOT_DEVLIST=sm_90,pvc"
    with pytest.raises(UnsupportedDeviceError, match="pvc cannot run"):
        ensure(lib, devices="pvc", policy="ignore")


def test_intel_only_binary_on_an_nvidia_device_is_unsupported(fresh) -> None:
    from aotwheel import check

    [v] = check(fat_binary("pvc,acm-g10"), devices="sm_90", policy="ignore")
    assert (v.device, v.verdict, v.rule, v.vendor) == ("sm_90", "unsupported", "other-vendor", "nvidia")
    assert "Intel: pvc, acm-g10, SPIR-V" in v.reason
    assert v.remedy == "rebuild with USE_AOT_DEVLIST=pvc,acm-g10,sm_90"


def test_cli_check_cross_vendor_exits_1() -> None:
    proc = run_cli(["check", str(H100 / "libkern_sm_90.so"), "--device", "pvc"], child_env())
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("pvc (12.60.7): unsupported") and "other-vendor" in proc.stdout


def test_ensure_remedy_comes_from_the_vendor_that_owns_the_device(fresh) -> None:
    from aotwheel import UnsupportedDeviceError, check, ensure

    lib = H100 / "libkern_sm_90.so"  # one sm_90 cubin, no PTX (cuobjdump.txt)
    [v] = check(lib, devices="sm_80", policy="ignore")
    assert v.verdict == "unsupported" and v.remedy == "rebuild with USE_AOT_DEVLIST=sm_90,sm_80"
    with pytest.raises(UnsupportedDeviceError) as info:
        ensure(lib, devices="sm_80", policy="ignore")
    text = str(info.value)
    assert "USE_AOT_DEVLIST=sm_90,sm_80" in text and "SPIR-V" not in text


def test_reset_memo_clears_the_cuda_warnings_too(fresh) -> None:
    from aotwheel import JITWarning, check

    lib = H100 / "libkern_ptx.so"  # PTX only: JIT on any GPU
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(lib, devices="sm_90")
        check(lib, devices="sm_90")
        fresh.reset_memo()
        check(lib, devices="sm_90")
    assert len([w for w in caught if issubclass(w.category, JITWarning)]) == 2


def test_cli_warning_is_one_clean_line() -> None:
    proc = run_cli(["check", str(H100 / "libkern_ptx.so"), "--device", "sm_90"], child_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("aotwheel: warning: libkern_ptx.so: sm_90 (cc 9.0) will JIT-compile")
    assert "JITWarning" not in proc.stderr and ".py:" not in proc.stderr


def test_cli_jit_error_policy_exits_1_and_bad_input_2() -> None:
    lib = str(H100 / "libkern_ptx.so")
    rejected = run_cli(["check", lib, "--device", "sm_90", "--jit", "error"], child_env())
    assert rejected.returncode == 1 and rejected.stderr.startswith("aotwheel: error: ") and "JIT-compile" in rejected.stderr
    bad = run_cli(["check", lib, "--device", "sm90"], child_env())
    assert bad.returncode == 2 and "sm_90" in bad.stderr
    missing = run_cli(["inspect", str(REPO / "no-such-file.so")], child_env())
    assert missing.returncode == 2


def test_cli_device_is_not_written_to_the_environment(monkeypatch, capsys) -> None:
    import os

    from aotwheel.cli import main

    monkeypatch.delenv("AOTWHEEL_DEVICE", raising=False)
    assert main(["check", str(H100 / "libkern_sm_90.so"), "--device", "sm_90", "--json"]) == 0
    assert "AOTWHEEL_DEVICE" not in os.environ
    doc = json.loads(capsys.readouterr().out)
    assert [(v["device"], v["verdict"], v["vendor"]) for v in doc["verdicts"]] == [("sm_90", "native", "nvidia")]


def test_every_command_has_json() -> None:
    from aotwheel.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = dict(sub.choices)  # type: ignore[attr-defined]
    assert {"resolve", "inspect", "check", "devices", "selftest", "build"} <= set(commands)
    def leaves(name, p):  # `aotwheel build toolchain|cache|warm`: every leaf command
        subs = [a for a in p._actions if a.__class__.__name__ == "_SubParsersAction"]
        if not subs:
            yield name, p
        for s in subs:
            for child, cp in s.choices.items():
                yield from leaves(f"{name} {child}", cp)

    for name, p in commands.items():
        for leaf, lp in leaves(name, p):
            assert any("--json" in a.option_strings for a in lp._actions), leaf


def test_mixed_report_reads_as_one_list(fresh, libk: Path, tmp_path: Path) -> None:
    # A directory with an Intel fat binary and a CUDA library: one check, every pair a verdict.
    from aotwheel import check

    (tmp_path / "intel.bin").write_bytes(fat_binary("pvc,acm-g10").read_bytes())
    (tmp_path / "libk.so").write_bytes(libk.read_bytes())
    got = sorted((Path(v.binary or "").name, v.device, v.verdict) for v in check(tmp_path, devices="pvc,sm_90", policy="ignore"))
    assert got == [("intel.bin", "pvc", "native"), ("intel.bin", "sm_90", "unsupported"),
                   ("libk.so", "pvc", "unsupported"), ("libk.so", "sm_90", "native")]


# ---- configuration ------------------------------------------------------------------------------


def test_config_reads_a_passed_mapping_and_never_writes() -> None:
    import os

    from aotwheel import config
    from aotwheel.errors import AotwheelError

    before = dict(os.environ)
    c = config.read({"USE_AOT_DEVLIST": "", "USE_AOT_JIT_FALLBACK": "off", "AOTWHEEL_JIT": "Error", "AOTWHEEL_DEVICE": "sm_90"})
    assert (c.devlist, c.jit_fallback, c.jit, c.device) == ("pvc,ats-m150", False, "error", "sm_90")
    assert config.read({}) == config.Config()
    assert dict(os.environ) == before
    with pytest.raises(AotwheelError, match="AOTWHEEL_JIT='loud'"):
        config.read({"AOTWHEEL_JIT": "loud"})
    names = [v.name for v in config.all_variables()]
    # aotwheel's own names, and PyTorch's TORCH_XPU_ARCH_LIST (read after USE_AOT_DEVLIST, never written)
    assert len(names) == len(set(names)) and all(n.startswith(("USE_AOT_", "AOTWHEEL_")) or n == "TORCH_XPU_ARCH_LIST" for n in names)
    assert config.read({"USE_AOT_DEVLIST": " ", "TORCH_XPU_ARCH_LIST": "pvc,bmg"}).devlist == "pvc,bmg"


def test_no_python_module_writes_aotwheel_variables_to_the_environment() -> None:
    # Only the OpenCL loader's own OCL_ICD_VENDORS may be set (documented in cli/check.py).
    for path in (REPO / "python" / "aotwheel").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ":
                        assert ast.unparse(t.slice) not in ("'AOTWHEEL_DEVICE'", "'AOTWHEEL_JIT'", "'USE_AOT_DEVLIST'"), path


# ---- import graph -------------------------------------------------------------------------------


def _import_graph() -> dict[str, set[str]]:
    """Every aotwheel import that runs, at module level or inside functions (lazy imports still
    form cycles at run time; those under ``if TYPE_CHECKING:`` never run: the types of
    backends/protocol.py and backends/capabilities.py name each other there), plus the registries'
    edges to the backends and readers they import by name. An import of a module's own parent
    package is not an edge (Python imports parents first anyway)."""
    edges = static_imports(run_time=True)
    from aotwheel import backends
    from aotwheel.backends import readers

    edges["aotwheel.backends"] |= {backends._VENDORS[n]["backend"] for n in backends.names()}
    edges["aotwheel.backends"] |= {backends.settings(n).__name__ for n in backends.names()}
    edges["aotwheel.backends.readers"] |= set(readers.modules().values())
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    edges = _import_graph()
    # The graph is real: the two cycles were made of these edges.
    assert "aotwheel.runtime" in edges and "aotwheel.probe.override" in edges
    assert _cycles(edges) == []


def test_the_run_time_graph_leaves_out_only_type_checking_imports() -> None:
    every, run_time = static_imports(), static_imports(run_time=True)
    assert "aotwheel.backends.protocol" in every["aotwheel.backends.capabilities"]  # a type's import
    assert "aotwheel.backends.protocol" not in run_time["aotwheel.backends.capabilities"]
    assert "aotwheel.results" in run_time["aotwheel.backends.intel.judge"]  # a module-level import
    assert "aotwheel.backends.intel.judge" in run_time["aotwheel.backends.intel.backend"]  # one inside a method


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    skip = {"aotwheel.__main__", "aotwheel.buildsteps.__main__"}  # run the CLI when imported
    names = sorted(n for n in package_modules() if n not in skip)
    code = ("import importlib, subprocess, sys\n"
            f"names = {names!r}\n"
            "bad = [n for n in names if subprocess.run([sys.executable, '-c', f'import {n}'], capture_output=True).returncode]\n"
            "print(bad)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_backends_registry_is_the_only_vendor_switch() -> None:
    from aotwheel import backends
    from aotwheel.probe import ProbedDevice

    assert backends.names() == ("intel", "nvidia", "amd")
    intel, nvidia, amd = backends.get("intel"), backends.get("nvidia"), backends.get("amd")
    assert backends.for_token("gfx90a") is amd and backends.for_token("gfx90a:xnack-") is amd
    assert backends.for_device(ProbedDevice(name="AMD gfx90a", backend="override", vendor="amd", catalog="gfx90a")) is amd
    # An AMD CPU seen through Intel's CPU OpenCL runtime runs SPIR-V by the Intel/OpenCL rules.
    assert backends.for_device(ProbedDevice(name="AMD EPYC", backend="opencl", kind="cpu", vendor="amd")) is intel
    assert backends.for_token("sm_90") is nvidia and backends.for_token("pvc") is intel
    assert backends.for_token("12.60.7") is intel and backends.for_token("bogus") is None
    gpu = ProbedDevice(name="H100", backend="cuda", vendor="nvidia", catalog="sm_90")
    assert backends.for_device(gpu) is nvidia
    cpu = ProbedDevice(name="cpu", backend="opencl", kind="cpu", vendor="any")
    assert backends.for_device(cpu) is intel  # SPIR-V on any OpenCL device follows the Intel/OpenCL rules
    # The core modules never import a vendor package: they go through the registry.
    edges = _import_graph()
    for core in ("aotwheel.runtime", "aotwheel.cli.check", "aotwheel.cli.inspect", "aotwheel.report", "aotwheel.model"):
        assert not [e for e in edges[core] if e.startswith("aotwheel.backends.")], core


def test_this_repository_built_for_intel_and_nvidia_reads_as_one_list(fresh, tmp_path: Path, builds: None, nvcc: str) -> None:
    # The mixed extension: aotwheel._kernels built with USE_AOT_DEVLIST=pvc,ats-m150,sm_90
    # by the repository's own CMakeLists.txt (ocloc for the Intel devices, nvcc for sm_90).
    from aotwheel import check
    from aotwheel.inspector import inspect
    from aotwheel.report import summary

    from conftest import require, run_tool

    require("cmake", "ninja", "ocloc", CLANG, LLVM_SPIRV)
    env = {**child_env(), "AOTWHEEL_CACHE_DIR": str(tmp_path / "cache"), "AOTWHEEL_NVCC": nvcc}
    run_tool(["cmake", "-S", str(REPO), "-B", str(tmp_path / "b"), "-G", "Ninja", f"-DPython_EXECUTABLE={sys.executable}",
              "-DUSE_AOT_DEVLIST=pvc,ats-m150,sm_90"], env=env)
    run_tool(["ninja", "-C", str(tmp_path / "b")], env=env)
    [so] = (tmp_path / "b").glob("_kernels*.so")
    [fr] = inspect(so).files
    # ats-m150 is an alias of acm-g10 (catalog); one list, Intel names first in devlist order, then CUDA.
    assert fr.target_names() == ["pvc", "acm-g10", "sm_90"]
    assert {t.vendor for t in fr.native_targets} == {"intel", "nvidia"}
    assert summary(fr).startswith("native: pvc, acm-g10, sm_90 · JIT fallback: SPIR-V")
    got = {v.device: (v.verdict, v.vendor) for v in check(so, devices="pvc,sm_90,sm_80", policy="ignore")}
    assert got == {"pvc": ("native", "intel"), "sm_90": ("native", "nvidia"), "sm_80": ("unsupported", "nvidia")}
