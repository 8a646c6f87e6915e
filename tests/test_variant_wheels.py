"""Issue 24: the wheel matrix as wheel variants, and which one variantlib installs where.

examples/downstream is built for real (CMake + ocloc through ``pip wheel``) for the matrix's
``pvc``, ``pvc,ats-m150`` and ``none`` device lists by ``ci/matrix.py build --wheel-variants``,
which labels the wheels with :func:`aotwheel.variants.label_wheels` and writes variantlib's
index JSON. Each variant wheel is then checked with ``variantlib analyze-wheel`` and the
selection is variantlib's own (``variantlib.api.get_variants_by_priority``, which loads
aotwheel's provider by the ``plugin-api`` the metadata names), run once per overridden device.
IP versions are docs/formats.md §2's: pvc 12.60.7, acm-g10 = ats-m150 12.55.8.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from _aotdemo_util import REPO, copy_example

pytestmark = pytest.mark.usefixtures("builds")

pytest.importorskip("variantlib", reason="variantlib is not installed (ci/setup.sh installs variantlib[cli]==0.2.2)")

MATRIX = REPO / "ci" / "matrix.py"
VARIANTLIB = Path(sys.executable).with_name("variantlib")
SELECT = """
import json, sys
from variantlib.api import get_variants_by_priority
print(json.dumps([v.label for v in get_variants_by_priority(variants_json=json.load(open(sys.argv[1])))]))
"""


def _env(site: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_DEVICE"))}
    env["PYTHONPATH"] = str(site)  # this checkout's aotwheel, provider plugin included
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def matrix(installed_aotwheel: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """``ci/matrix.py build --wheel-variants`` of the three matrix entries: report per devlist."""
    tmp = tmp_path_factory.mktemp("variant-matrix")
    project = copy_example(tmp / "aotdemo")
    proc = subprocess.run([sys.executable, str(MATRIX), "build", "--project", str(project), "--variant", "pvc",
                           "--variant", "pvc,ats-m150", "--variant", "none", "--out", str(tmp / "out"),
                           "--wheel-variants", "--json"], capture_output=True, text=True, env=_env(installed_aotwheel), timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return {r["variant"]: r for r in json.loads(proc.stdout)}


def _select(site: Path, index: Path, device: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", SELECT, str(index)], capture_output=True, text=True,
                          env=_env(site, AOTWHEEL_DEVICE=device), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_variant_wheels_are_labelled_by_their_native_targets(matrix: dict[str, dict]) -> None:
    assert matrix["pvc"]["variant_properties"] == ["aotwheel_intel :: image :: 12.60.7"]
    assert sorted(matrix["pvc,ats-m150"]["variant_properties"]) == [
        "aotwheel_intel :: image :: 12.55.8", "aotwheel_intel :: image :: 12.60.7"]
    assert matrix["none"]["variant_properties"] == []  # the null variant
    names = {d: Path(r["variant_wheel"]).name for d, r in matrix.items()}
    assert names["none"] == "aotdemo-0.1.0-cp310-abi3-linux_x86_64-null.whl"
    assert names["pvc"] == "aotdemo-0.1.0-cp310-abi3-linux_x86_64-pvc.whl"
    assert names["pvc,ats-m150"].startswith("aotdemo-0.1.0-cp310-abi3-linux_x86_64-pvc_")


def test_variant_wheels_are_accepted_by_variantlib_analyze_wheel(matrix: dict[str, dict]) -> None:
    for devlist, report in matrix.items():
        wheel = Path(report["variant_wheel"])
        proc = subprocess.run([str(VARIANTLIB), "analyze-wheel", "-i", str(wheel)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        label = wheel.stem.rsplit("-", 1)[1]
        assert f"Variant: `{label}`" in proc.stdout, devlist
        printed = [line for line in proc.stdout.splitlines() if " :: " in line]
        assert sorted(printed) == sorted(report["variant_properties"]), devlist
    shown = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", matrix["none"]["variant_wheel"]],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "wheel variant null: no properties (the null variant" in shown.stdout, shown.stderr


def test_variant_wheels_keep_the_wheel_and_a_true_record(matrix: dict[str, dict]) -> None:
    """Same files as the wheel pip built, plus variant.json, hashed in RECORD like every file."""
    for report in matrix.values():
        with zipfile.ZipFile(report["wheel"]) as a, zipfile.ZipFile(report["variant_wheel"]) as b:
            added = set(b.namelist()) - set(a.namelist())
            assert added == {"aotdemo-0.1.0.dist-info/variant.json"}
            assert set(a.namelist()) <= set(b.namelist())
            for name in a.namelist():
                if not name.endswith("RECORD"):
                    assert a.read(name) == b.read(name), name
            record = {line.split(",")[0]: line.split(",")[1] for line in b.read("aotdemo-0.1.0.dist-info/RECORD").decode().splitlines()}
            for name in b.namelist():
                if name.endswith("RECORD"):
                    continue
                digest = base64.urlsafe_b64encode(hashlib.sha256(b.read(name)).digest()).rstrip(b"=").decode()
                assert record[name] == f"sha256={digest}", name


def test_variant_index_json_names_aotwheels_provider(matrix: dict[str, dict]) -> None:
    index = Path(matrix["pvc"]["variant_wheel"]).parent / "aotdemo-0.1.0-variants.json"
    data = json.loads(index.read_text())
    assert data["providers"] == {"aotwheel_intel": {"plugin-api": "aotwheel.variants:IntelGpuPlugin", "requires": ["aotwheel>=0.1.0"]}}
    assert data["default-priorities"]["namespace"] == ["aotwheel_intel"]
    labels = {Path(r["variant_wheel"]).stem.rsplit("-", 1)[1] for r in matrix.values()}
    assert set(data["variants"]) == labels


def test_variantlib_selects_the_wheel_each_device_runs_natively(installed_aotwheel: Path, matrix: dict[str, dict]) -> None:
    """variantlib's own ordering with aotwheel's provider answering for an overridden device.

    - pvc: both the pvc and the pvc,ats-m150 wheels carry a 12.60.7 image and rank equal; variantlib
      breaks ties by label, and ``pvc`` sorts before ``pvc_...``: the pvc wheel.
    - acm-g11 (12.56.5): rules.py models compute-runtime's fat-binary lookup -- filters 64.12.56.5,
      64.12.56 and 64.dg2, then (25.44+) the fallback products of dg2, of which there are none.
      aotwheel names the acm-g10 image 64.12.55.8, which no filter finds, so the driver JITs the
      SPIR-V whichever wheel is installed: the JIT-only (null) wheel, the smallest.
    - acm-g10: only the pvc,ats-m150 wheel runs it natively.
    - a CPU-only machine: the JIT-only wheel.
    """
    index = Path(matrix["pvc"]["variant_wheel"]).parent / "aotdemo-0.1.0-variants.json"
    label = {d: Path(r["variant_wheel"]).stem.rsplit("-", 1)[1] for d, r in matrix.items()}
    assert _select(installed_aotwheel, index, "pvc") == [label["pvc"], label["pvc,ats-m150"], "null"]
    assert _select(installed_aotwheel, index, "acm-g11") == ["null"]
    assert _select(installed_aotwheel, index, "acm-g10") == [label["pvc,ats-m150"], "null"]
    assert _select(installed_aotwheel, index, "cpu") == ["null"]


def test_variant_labelling_refuses_two_wheels_with_the_same_targets(installed_aotwheel: Path, matrix: dict[str, dict],
                                                                    tmp_path: Path) -> None:
    wheel = matrix["pvc"]["wheel"]
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "variant", "-o", str(tmp_path / "v"), wheel, wheel],
                          capture_output=True, text=True, env=_env(installed_aotwheel), timeout=300)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aotwheel: error: ") and "same native targets" in lines[0]
    assert not (tmp_path / "v").exists()  # nothing half-written
    bad = subprocess.run([sys.executable, "-m", "aotwheel", "variant", "-o", str(tmp_path / "v"), matrix["pvc"]["variant_wheel"]],
                         capture_output=True, text=True, env=_env(installed_aotwheel), timeout=300)
    assert bad.returncode == 2 and "already a variant wheel" in bad.stderr


@pytest.mark.parametrize(("device", "devlist"), [("cpu", "none"), ("pvc", "pvc"), ("acm-g10", "pvc,ats-m150")])
def test_variant_picker_installs_the_wheel_that_suits_this_machine(installed_aotwheel: Path, matrix: dict[str, dict],
                                                                   tmp_path: Path, device: str, devlist: str) -> None:
    """`aotwheel variant --pick DIR --install` (issue 41 item 7): variantlib's order with aotwheel's
    provider (the device overridden), the first variant whose wheel DIR holds, handed to pip under
    its plain wheel name into a fresh venv. The CPU gets the JIT-only (null) wheel."""
    import venv

    from _aotdemo_util import FAT_SECTION, section_names

    folder = Path(matrix["pvc"]["variant_wheel"]).parent
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = target / "bin" / "python"
    # PIP_NO_DEPS: aotdemo's dependencies (aotwheel[opencl], numpy) are not what this test is about.
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "variant", "--pick", str(folder), "--install", "--python", str(python)],
                          capture_output=True, text=True, env=_env(installed_aotwheel, AOTWHEEL_DEVICE=device, PIP_NO_DEPS="1"), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == matrix[devlist]["variant_wheel"], proc.stdout  # the path it picked, then pip's lines
    site = next((target / "lib").glob("python3*/site-packages"))
    installed = json.loads((site / "aotdemo-0.1.0.dist-info" / "variant.json").read_text())
    with zipfile.ZipFile(matrix[devlist]["variant_wheel"]) as zf:
        assert installed == json.loads(zf.read("aotdemo-0.1.0.dist-info/variant.json"))
    so = next((site / "aotdemo").glob("_demo*.so"))
    assert (FAT_SECTION in section_names(so)) == (devlist != "none")  # the JIT-only wheel has no native images


def test_variant_picker_without_an_index_is_one_line(installed_aotwheel: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "variant", "--pick", str(tmp_path)], capture_output=True, text=True,
                          env=_env(installed_aotwheel), timeout=300)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"aotwheel: error: {tmp_path} holds 0 *-variants.json files; pass the one to pick from "
        "(variantlib generate-index-json -d DIR writes it)"], proc.stderr


def test_variant_picker_replaces_another_variant_of_the_same_version(installed_aotwheel: Path, matrix: dict[str, dict],
                                                                     tmp_path: Path) -> None:
    import venv

    from _aotdemo_util import FAT_SECTION, section_names

    folder = Path(matrix["pvc"]["variant_wheel"]).parent
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(target)
    python = target / "bin" / "python"
    for device in ("pvc", "cpu"):  # the machine's GPU went away: the JIT-only wheel replaces the pvc one
        proc = subprocess.run([sys.executable, "-m", "aotwheel", "variant", "--pick", str(folder), "--install", "--python", str(python)],
                              capture_output=True, text=True, env=_env(installed_aotwheel, AOTWHEEL_DEVICE=device, PIP_NO_DEPS="1"), timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    so = next(next((target / "lib").glob("python3*/site-packages")).joinpath("aotdemo").glob("_demo*.so"))
    assert FAT_SECTION not in section_names(so)
