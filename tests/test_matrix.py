"""ci/ wheel matrix: cibuildwheel config, hosted workflow and the local runner (ci/matrix.py).

The local runner builds examples/downstream against an installed aotwheel for two variants;
its printed sizes and targets are checked against the wheel files (os.stat) and binutils
(objcopy + ar), with IP versions from docs/formats.md §2.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from _aotdemo_util import FAT_SECTION, PVC_MEMBER, REPO, SPIRV_SECTION, ar_members, copy_example, section_bytes, section_names, unpack, unzstd

pytestmark = pytest.mark.usefixtures("builds")

MATRIX = REPO / "ci" / "matrix.py"
CIBW_CONFIG = REPO / "ci" / "cibuildwheel.toml"
WORKFLOW = REPO / "ci" / "workflows" / "wheels.yml"


def _matrix(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(MATRIX), *args], capture_output=True, text=True, env=env, timeout=900)


def test_matrix_variants_are_the_issue_s_devlists() -> None:
    proc = _matrix("github-matrix")
    assert proc.returncode == 0, proc.stderr
    include = json.loads(proc.stdout)["include"]
    assert [e["devlist"] for e in include] == ["pvc", "pvc,ats-m150", "none"]
    slugs = [e["slug"] for e in include]
    assert len(set(slugs)) == len(slugs)
    assert all(re.fullmatch(r"[a-z0-9._-]+", s) for s in slugs)
    assert {e["jit_fallback"] for e in include} <= {"ON", "OFF"}


def test_matrix_cibuildwheel_config_is_one_abi3_build() -> None:
    config = tomllib.loads(CIBW_CONFIG.read_text())["tool"]["cibuildwheel"]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["tool"]["scikit-build"]["wheel"]["py-api"] == "cp310"
    # built by 3.11 (the C scanner needs the 3.11 limited API), tagged cp310-abi3 by py-api
    assert config["build"].startswith("cp311-")
    assert {"USE_AOT_DEVLIST", "USE_AOT_JIT_FALLBACK"} <= set(config["environment-pass"])
    repair = config["repair-wheel-command"]
    assert "--exclude libze_loader.so.1" in repair[-1] and repair[0] == "PYTHONPATH={project}/python python -m aotwheel build cache"
    before_all = config["before-all"].split()[-1].replace("{project}/", "")
    assert (REPO / before_all).is_file()


def test_matrix_cibuildwheel_accepts_the_config() -> None:
    cibw = shutil.which("cibuildwheel")
    if cibw is None:
        pytest.skip("cibuildwheel is not installed (pip install cibuildwheel)")
    proc = subprocess.run([cibw, "--print-build-identifiers", "--platform", "linux", "--config-file", str(CIBW_CONFIG)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr  # cibuildwheel rejects unknown options
    assert proc.stdout.split() == ["cp311-manylinux_x86_64"]


def test_matrix_workflow_uses_the_runner_and_the_config() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    text = WORKFLOW.read_text()
    wf = yaml.safe_load(text)
    jobs = wf["jobs"]
    plan_runs = " ".join(step.get("run", "") for step in jobs["plan"]["steps"])
    assert "python ci/matrix.py github-matrix" in plan_runs
    wheels = jobs["wheels"]
    assert wheels["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert wheels["env"]["USE_AOT_DEVLIST"] == "${{ matrix.devlist }}"
    cibw = [s for s in wheels["steps"] if str(s.get("uses", "")).startswith("pypa/cibuildwheel@")]
    assert len(cibw) == 1 and cibw[0]["with"]["config-file"] == "ci/cibuildwheel.toml"
    # Issue 30 item 5: no bazel-remote URL suggested (it cannot store our objects); the remote
    # cache's outcome is printed where a CI user looks: the device-code jobs' `aotwheel build cache`
    # and the wheel job's `aotwheel inspect` of the wheel ("built with N remote-cache failures").
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    assert "bazel-remote URL" not in header and "e.g. a bazel-remote" not in header
    runs = {name: " ".join(str(step.get("run", "")) for step in job["steps"]) for name, job in jobs.items()}
    assert "aotwheel build cache" in runs["device-code"] and "python -m aotwheel inspect wheelhouse/" in runs["wheels"]
    # Every ci/matrix.py subcommand the workflow calls exists.
    for sub in set(re.findall(r"python ci/matrix\.py ([a-z-]+)", text)):
        assert _matrix(sub, "--help").returncode == 0, sub


def test_matrix_rejects_a_bad_variant_before_building(tmp_path: Path) -> None:
    proc = _matrix("build", "--variant", "pvc", "--variant", "pvc;touch pwned", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("matrix: error: ")
    assert not (tmp_path / "out").exists()


def test_matrix_local_build_prints_size_and_targets(installed_aotwheel: Path, tmp_path: Path) -> None:
    project = copy_example(tmp_path / "aotdemo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    env["PYTHONPATH"] = str(installed_aotwheel)
    out = tmp_path / "out"
    proc = _matrix("build", "--project", str(project), "--variant", "pvc", "--variant", "none", "--out", str(out), "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reports = {r["variant"]: r for r in json.loads(proc.stdout)}
    assert set(reports) == {"pvc", "none"}

    for variant, report in reports.items():
        wheel = Path(report["wheel"])
        assert wheel.parent == out / variant
        assert report["size"] == wheel.stat().st_size
        assert report["problems"] == []
        assert report["ir"] == ["spirv"]

    pvc_so = unpack(Path(reports["pvc"]["wheel"]), tmp_path / "pvc") / "aotdemo" / "_demo.abi3.so"
    assert ar_members(unzstd(section_bytes(pvc_so, FAT_SECTION, tmp_path)), tmp_path) == [PVC_MEMBER, "generic_ir"]  # COMPRESS ON (default)
    assert reports["pvc"]["targets"] == ["pvc (12.60.7)"]

    none_so = unpack(Path(reports["none"]["wheel"]), tmp_path / "none") / "aotdemo" / "_demo.abi3.so"
    assert FAT_SECTION not in section_names(none_so) and SPIRV_SECTION in section_names(none_so)
    assert reports["none"]["targets"] == []

    # The human table says the same, and --expect catches a wheel built for another list.
    table = _matrix("report", "--expect", "pvc", reports["pvc"]["wheel"], env=env)
    assert table.returncode == 0, table.stderr
    assert f"{reports['pvc']['size']:,}" in table.stdout and "pvc (12.60.7)" in table.stdout
    wrong = _matrix("report", "--expect", "pvc,ats-m150", reports["pvc"]["wheel"], env=env)
    assert wrong.returncode == 1
    assert "expected ['acm-g10', 'pvc']" in wrong.stdout


def test_matrix_check_installed_compares_with_the_devlist(installed_aotwheel: Path) -> None:
    # cibuildwheel's test-command: the installed aotwheel (built with USE_AOT_DEVLIST=none by the
    # fixture) must carry SPIR-V and no native target.
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    env["PYTHONPATH"] = str(installed_aotwheel)
    ok = _matrix("check-installed", "--json", env={**env, "USE_AOT_DEVLIST": "none"})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (report,) = json.loads(ok.stdout)
    assert report["targets"] == [] and report["ir"] == ["spirv"]
    assert Path(report["wheel"]).resolve() == (installed_aotwheel / "aotwheel").resolve()
    wrong = _matrix("check-installed", "--expect", "pvc", env=env)
    assert wrong.returncode == 1
    assert "expected ['pvc']" in wrong.stdout


def test_matrix_build_out_is_ignored_by_git(tmp_path: Path) -> None:
    """Issue 30 item 8: `python3 ci/matrix.py build --out OUT` in a clone leaves OUT out of git status
    (here a build of a project that is not there: OUT is made before the first pip wheel fails)."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    proc = _matrix("build", "--variant", "pvc", "--project", str(tmp_path / "missing"), "--out", str(clone / "OUT"))
    assert proc.returncode != 0 and (clone / "OUT" / "pvc").is_dir(), proc.stderr[-2000:]
    (clone / "OUT" / "pvc" / "x.whl").write_bytes(b"wheel")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone, capture_output=True, text=True, check=True)
    assert status.stdout == ""
