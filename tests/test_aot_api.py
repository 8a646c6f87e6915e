"""The generated ``_aot.py`` and ``aotwheel.aot``, the one part of aotwheel it imports.

Without aotwheel the answers are empty and nothing is said; with an aotwheel whose run-time API
cannot be imported (a module of it missing, an aotwheel from before ``aotwheel.aot``, one older
than the API version the file needs) the answers are empty and one ``RuntimeWarning`` names the
cause. Those aotwheels are real copies of the installed package with one file removed or edited.
The package's extension is a real ocloc fat binary (tests/_check_util.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import aotwheel
from aotwheel import aot, hook

from _check_util import fat_binary, single_binary
from conftest import REPO

DATA = REPO / "tests" / "data"


def _package(root: Path, binary: Path) -> Path:
    """``demo`` with ``_kernels`` = ``binary`` and the ``_aot.py`` this aotwheel renders."""
    pkg = root / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    shutil.copy(binary, pkg / "_kernels.abi3.so")
    (pkg / "_aot.py").write_text(hook.render("_kernels", "demo"))
    return root


def _aotwheel_copy(root: Path, drop: str | None = None, api: int | None = None) -> Path:
    """A folder holding a copy of the installed aotwheel, ``drop`` (a file in it) removed and
    ``aot.API_VERSION`` set to ``api``."""
    dest = root / "aotwheel"
    shutil.copytree(Path(aotwheel.__file__).parent, dest, ignore=shutil.ignore_patterns("__pycache__"))
    if drop:
        (dest / drop).unlink()
    if api is not None:
        text = (dest / "aot.py").read_text()
        (dest / "aot.py").write_text(text.replace(f"API_VERSION = {aot.API_VERSION}\n", f"API_VERSION = {api}\n"))
    return root


CODE = """
import json, sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import demo._aot as a
    answers = [list(a.targets()), [v.verdict for v in a.check()], [v.verdict for v in a.ensure()], list(a.targets())]
print(json.dumps({"answers": answers, "warnings": [(w.category.__name__, str(w.message), w.filename) for w in caught],
                  "aotwheel": "aotwheel" in sys.modules}))
"""


def _run(*paths: Path) -> dict:
    """CODE in an interpreter that sees only ``paths`` and the standard library (-S -I), the
    device named pvc."""
    code = f"import sys\nsys.path[:0] = {[str(p) for p in paths]!r}\n{CODE}"
    env = {**os.environ, "AOTWHEEL_DEVICE": "pvc", "AOTWHEEL_JIT": "ignore"}  # no probing
    proc = subprocess.run([sys.executable, "-S", "-I", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _package(tmp_path_factory.mktemp("pkg"), fat_binary("pvc,acm-g10"))


def test_without_aotwheel_answers_are_empty_and_silent(package: Path) -> None:
    got = _run(package)
    assert got == {"answers": [[], [], [], []], "warnings": [], "aotwheel": False}


def test_a_module_missing_inside_aotwheel_warns_once_and_names_it(package: Path, tmp_path: Path) -> None:
    got = _run(package, _aotwheel_copy(tmp_path, drop="inspector.py"))
    assert got["answers"] == [[], [], [], []]
    [(category, message, where)] = got["warnings"]  # once per process, not per call
    assert category == "RuntimeWarning"
    assert message.startswith("demo._aot: aotwheel is installed but importing aotwheel.aot failed (ModuleNotFoundError: ")
    assert "aotwheel.inspector" in message and message.endswith("reinstall it: pip install -U aotwheel")
    assert where == "<string>"  # points at the caller of targets(), not into _aot.py


def test_an_aotwheel_from_before_the_api_warns(package: Path, tmp_path: Path) -> None:
    got = _run(package, _aotwheel_copy(tmp_path, drop="aot.py"))
    assert got["answers"] == [[], [], [], []]
    [(_, message, _)] = got["warnings"]
    assert "importing aotwheel.aot failed (ModuleNotFoundError: No module named 'aotwheel.aot')" in message


def test_an_aotwheel_older_than_the_files_api_warns(package: Path, tmp_path: Path) -> None:
    got = _run(package, _aotwheel_copy(tmp_path, api=aot.API_VERSION - 1))
    [(_, message, _)] = got["warnings"]
    assert f"its run-time API is version {aot.API_VERSION - 1} and this file needs {aot.API_VERSION}" in message


def test_the_hook_calls_the_api_of_this_aotwheel(package: Path, tmp_path: Path) -> None:
    # The same copy, unharmed: targets() are the ar members ocloc wrote (docs/formats.md §2 names).
    got = _run(package, _aotwheel_copy(tmp_path))
    assert got == {"answers": [["pvc", "acm-g10"], ["native"], ["native"], ["pvc", "acm-g10"]], "warnings": [], "aotwheel": True}
    assert f"API = {aot.API_VERSION}  #" in (package / "demo" / "_aot.py").read_text()


def test_api_targets_name_each_vendors_native_code_once() -> None:
    # ar members 64.12.60.7 / 64.12.55.8 (ocloc); four sm_80 cubins and their PTX (cuobjdump.txt there)
    assert aot.targets(str(fat_binary("pvc,acm-g10"))) == ("pvc", "acm-g10")
    assert aot.targets(str(single_binary("pvc"))) == ("pvc",)
    assert aot.targets(str(DATA / "cuda-h100" / "libkern_sm_80-ptx.so")) == ("sm_80",)  # PTX is no target
    assert aot.targets(str(DATA / "cuda-h100" / "libkern_ptx.so")) == ()
