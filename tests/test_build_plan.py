"""The typed build plan between the configure steps and CMake (buildsteps/plan.py): what a vendor's
plan carries per edge, the digest that reruns exactly the changed edges, and the one-line errors
of a step run against a stale plan. No tool runs here (test_cuda_build and test_build_cmake build
real plans through CMake)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aotwheel.backends.intel.buildsteps.plan import build_plan as intel_plan
from aotwheel.backends.nvidia.plan import build_plan as nvidia_plan
from aotwheel.backends.nvidia.plan import image_record
from aotwheel.backends.nvidia.targets import parse_cuda_target
from aotwheel.buildsteps.edge import edge_digest, load_edge
from aotwheel.errors import AotwheelError

REPO = Path(__file__).resolve().parents[1]
STEPS = REPO / "python" / "aotwheel" / "buildsteps" / "__main__.py"


def _nvidia(work: Path, tokens: list[str], options: tuple[str, ...] = ()) -> dict:
    targets = tuple(parse_cuda_target(t) for t in tokens)
    plan = nvidia_plan(name="k", work=work, sources=["/src/a.cl", "/src/b.cu"], targets=targets, toolchain=str(work / "cuda.json"),
                       header="/h/aotwheel_portable.h", settings=str(work / "remote-settings"), options=options)
    plan.write(work / "plan.json")
    return json.loads((work / "plan.json").read_text())


def test_nvidia_edges_carry_target_kind_arch_and_the_fatbinary_members(tmp_path: Path) -> None:
    doc = _nvidia(tmp_path, ["sm_90a", "compute_80"], options=("-O3",))
    assert doc["schema"] == 1 and doc["vendor"] == "nvidia" and doc["targets"] == ["sm_90a", "compute_80"]
    compile_a = {e["id"]: e for e in doc["edges"] if e["step"] == "compile" and e["source"] == "/src/a.cl"}
    # nvcc's spellings, written out here: sm_90a is a cubin of arch 90 compiled from compute_90a PTX.
    assert compile_a["a.sm_90a"]["data"] == {"target": "sm_90a", "kind": "cubin", "arch": 90, "virtual": "compute_90a",
                                             "options": ["-O3"]}
    assert compile_a["a.compute_80"]["data"]["kind"] == "ptx" and compile_a["a.compute_80"]["data"]["arch"] == 80
    assert compile_a["a.sm_90a"]["outputs"] == [str(tmp_path / "a.sm_90a.cubin")]
    assert compile_a["a.compute_80"]["outputs"] == [str(tmp_path / "a.compute_80.ptx")]
    assert compile_a["a.sm_90a"]["depfile"] == str(tmp_path / "a.sm_90a.cubin.d")
    # fatbinary --image3 fields: kind=elf for a cubin, sm=<arch><suffix>.
    fat_b = next(e for e in doc["edges"] if e["id"] == "b.fatbin")
    assert [(m["kind"], m["sm"]) for m in fat_b["data"]["members"]] == [("elf", "90a"), ("ptx", "80")]
    assert fat_b["outputs"] == [str(tmp_path / "b.fatbin")] and doc["outputs"] == [str(tmp_path / "a.fatbin"), fat_b["outputs"][0]]
    assert set(fat_b["inputs"]) >= {str(tmp_path / "b.sm_90a.cubin"), str(tmp_path / "b.compute_80.ptx")}


def test_the_manifest_record_lists_each_sources_fatbin_and_members(tmp_path: Path) -> None:
    targets = (parse_cuda_target("sm_90"),)
    plan = nvidia_plan(name="k", work=tmp_path, sources=["/src/a.cl"], targets=targets, toolchain="t", header="h")
    assert image_record(plan) == {"images": [{"source": "a.cl", "fatbin": str(tmp_path / "a.fatbin"),
                                              "members": [{"target": "sm_90", "kind": "cubin", "path": str(tmp_path / "a.sm_90.cubin")}]}]}


def test_a_changed_option_changes_the_digest_of_exactly_the_edges_that_use_it(tmp_path: Path) -> None:
    before = _nvidia(tmp_path / "a", ["sm_90"])
    after = _nvidia(tmp_path / "a", ["sm_90"], options=("-lineinfo",))
    changed = {e["id"] for e, f in zip(before["edges"], after["edges"]) if e["digest"] != f["digest"]}
    assert changed == {"a.sm_90", "b.sm_90"}  # the nvcc edges; the fatbinary edges run no nvcc option
    assert all(e["digest"] == edge_digest(e) for e in after["edges"])


def test_an_edge_refuses_a_plan_rewritten_since_cmake_saw_it(tmp_path: Path) -> None:
    doc = _nvidia(tmp_path, ["sm_90"])
    plan = str(tmp_path / "plan.json")
    edge = doc["edges"][0]
    assert load_edge(plan, edge["id"], edge["digest"])[1] == edge
    with pytest.raises(AotwheelError, match="changed since CMake generated edge 'a.sm_90'; re-run CMake configure"):
        load_edge(plan, edge["id"], "0" * 16)
    with pytest.raises(AotwheelError, match="has no edge 'nope'; re-run CMake configure"):
        load_edge(plan, "nope")


def test_two_sources_with_one_stem_are_refused(tmp_path: Path) -> None:
    with pytest.raises(AotwheelError, match="two SOURCES share the name 'a'"):
        nvidia_plan(name="k", work=tmp_path, sources=["/x/a.cl", "/y/a.cu"], targets=(parse_cuda_target("sm_90"),),
                    toolchain="t", header="h")


def test_intel_plan_one_edge_per_source_or_a_fatbin_edge_after_split_groups(tmp_path: Path) -> None:
    devices = [("pvc", "12.60.7"), ("acm-g10", "12.55.8")]
    groups = {"a": [["pvc", "acm-g10"]], "b": [["acm-g10"], ["pvc"]]}
    plan = intel_plan(name="k", work=tmp_path, sources=["/s/a.cl", "/s/b.cl"], devices=devices, groups=groups,
                      toolchain="tc.json", settings="rs", ir=True, options="-x", cost_prefix="proj/k")
    steps = [(e.step, e.id) for e in plan.edges]
    # Source by source, as ninja gets them: SPIR-V, its ocloc edges, then a split source's fat binary.
    assert steps == [("spirv", "a.spirv"), ("ocloc", "a.ocloc1"), ("spirv", "b.spirv"), ("ocloc", "b.ocloc1"),
                     ("ocloc", "b.ocloc2"), ("fatbin", "b.fatbin")]
    one = plan.edges[1]
    assert one.outputs == (str(tmp_path / "a.pvc.bin"), str(tmp_path / "a.acm-g10.bin"), str(tmp_path / "a.fatbin"),
                           str(tmp_path / "a.fatbin.json"))
    assert one.data.ir and one.data.fatbin and one.data.cost_id == "proj/k/a" and one.pool == "ocloc"
    assert [(n.device, n.ip) for n in one.data.natives] == devices
    fat = plan.edges[-1].data
    assert [n.device for n in fat.natives] == ["pvc", "acm-g10"]  # devlist order, whatever the groups
    assert [(i.triple, i.source) for i in plan.images] == [("spir64_gen", "a.cl"), ("spir64_gen", "b.cl"),
                                                           ("spir64", "a.cl"), ("spir64", "b.cl")]


def test_a_shard_plan_has_no_edge_for_another_shards_source(tmp_path: Path) -> None:
    plan = intel_plan(name="k", work=tmp_path, sources=["/s/a.cl", "/s/b.cl"], devices=[("pvc", "12.60.7")],
                      groups={"b": [["pvc"]]}, toolchain="tc.json")
    assert {e.source for e in plan.edges} == {"/s/b.cl"} and plan.outputs == (str(tmp_path / "b.fatbin"),)


def _step(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(STEPS), *args], capture_output=True, text=True)


def test_step_errors_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    stale = _step("nvidia", "compile", "--plan", str(tmp_path / "missing.json"), "--edge", "a.sm_90")
    assert stale.returncode == 2 and stale.stderr.count("\n") == 1
    assert stale.stderr.startswith("aotwheel: error: cannot read the build plan") and "re-run CMake configure" in stale.stderr
    # A registered vendor that builds nothing (every vendor of this checkout builds): one line too.
    from aotwheel import backends
    from aotwheel.buildsteps.__main__ import main

    monkeypatch.setattr(backends, "_VENDORS", dict(backends._VENDORS))
    backends.register("xdev", backend="xdev.backend", settings="xdev.variables")
    assert main(["xdev", "configure"]) == 2
    assert capsys.readouterr().err == "aotwheel: error: the xdev backend has no build steps; build its device code with that vendor's own tools\n"
