"""A wheel published with an older aotwheel keeps working with this one (issue 29, item 5).

The package is examples/downstream as commit ``OLD`` had it, built by that commit's aotwheel
(``git archive`` of the commit, pip-installed into a folder; the example built with pip against
it, as test_downstream builds against the current one), so its ``_aot.py`` is the old template:
it imports ``aotwheel.inspector``, ``aotwheel.backends.intel.rules`` and ``aotwheel.runtime``
directly. The wheel is then pip-installed and loaded by a child interpreter whose aotwheel is
the current one. What it must answer comes from the wheel's own ``_aot_manifest.json`` (the
targets the old build wrote) and from the current ``aotwheel.check`` on the same file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _aotdemo_util import require_tools
from _check_util import aotwheel_pythonpath, child_env, run_python
from conftest import REPO, ocloc_writes_legacy_images

OLD = "2c6fd81"  # main before the architecture step: _aot.py imports the internals named above
DEVLIST = "pvc,acm-g10"  # two targets keep the order meaningful; ocloc builds each in seconds
DEVICES = "pvc,acm-g10,acm-g11,tgllp,cpu"


def _run(cmd: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


@pytest.fixture(scope="session")
def published(tmp_path_factory: pytest.TempPathFactory, builds: None) -> Path:
    """A site folder holding aotdemo built by commit OLD's aotwheel for DEVLIST (once per session)."""
    require_tools()
    if shutil.which("git") is None or subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{OLD}^{{commit}}"],
                                                     capture_output=True).returncode != 0:
        pytest.skip(f"needs git and commit {OLD} in {REPO} (a shallow clone lacks it: git fetch --unshallow)")
    root = tmp_path_factory.mktemp("published")
    tar = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", OLD], capture_output=True, check=True).stdout
    (root / "old").mkdir()
    subprocess.run(["tar", "-x", "-C", str(root / "old")], input=tar, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_"))}
    env["AOTWHEEL_CACHE_DIR"] = str(root / "cache")  # nothing from earlier builds: the old steps run
    pip = [sys.executable, "-m", "pip"]
    _run([*pip, "install", "--no-deps", "--no-build-isolation", "--no-cache-dir", "--target", str(root / "old-aotwheel"),
          "-C", f"build-dir={root / 'b1'}", str(root / "old")], {**env, "USE_AOT_DEVLIST": "none"})
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-cache-dir", "-w", str(root / "wheels"),
          "-C", f"build-dir={root / 'b2'}", str(root / "old" / "examples" / "downstream")],
         {**env, "USE_AOT_DEVLIST": DEVLIST, "PYTHONPATH": str(root / "old-aotwheel")})
    [wheel] = (root / "wheels").glob("aotdemo-*.whl")
    _run([*pip, "install", "--no-deps", "--no-cache-dir", "--target", str(root / "site"), str(wheel)], env)
    return root / "site"


def _load(site: Path, code: str, **extra: str) -> dict:
    """Run ``code`` (it prints one JSON line last) with the installed wheel and the current aotwheel."""
    env = child_env(**extra)
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}{os.pathsep}{site}"
    proc = run_python("import json, aotdemo._aot as a, aotwheel\n" + code, env, cwd=site.parent)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_wheel_carries_the_old_hook(published: Path) -> None:
    hook = (published / "aotdemo" / "_aot.py").read_text()
    assert "from aotwheel.backends.intel.rules import target_names" in hook and "aotwheel.aot" not in hook


def test_old_hook_targets_are_the_manifests_with_the_current_aotwheel(published: Path) -> None:
    manifest = json.loads((published / "aotdemo" / "_aot_manifest.json").read_text())
    built = [m["device"] for img in manifest["images"] for m in img.get("members", []) if m["device"]]
    assert built == DEVLIST.split(",")  # what the old build says it built
    got = _load(published, "print(json.dumps({'aotwheel': aotwheel.__file__, 'targets': a.targets()}))")
    assert Path(got["aotwheel"]).resolve() == Path(aotwheel_pythonpath(), "aotwheel", "__init__.py").resolve()  # the current one
    assert got["targets"] == built


def test_old_hook_check_gives_the_current_verdicts(published: Path) -> None:
    code = ("so = a._path()\n"
            f"old = [v.to_dict() for v in a.check(devices={DEVICES!r})]\n"
            f"new = [v.to_dict() for v in aotwheel.check(so, devices={DEVICES!r})]\n"
            "print(json.dumps({'old': old, 'new': new}))")
    got = _load(published, code, AOTWHEEL_JIT="ignore")
    assert got["old"] == got["new"]
    verdicts = {v["device"]: v["verdict"] for v in got["old"]}
    reasons = {v["device"]: v["reason"] for v in got["old"]}
    if ocloc_writes_legacy_images():
        # Built for the first two by an aotwheel whose ocloc 22.43 wrote legacy images: compute-runtime
        # 26.18 and newer rebuild those from SPIR-V (issue 35, proven in tests/test_driver_images.py),
        # so with no driver release known the verdict is the newest driver's, and names what older ones do.
        assert (verdicts["pvc"], verdicts["acm-g10"], verdicts["tgllp"]) == ("jit", "jit", "jit")
        for built in ("pvc", "acm-g10"):
            assert "compute-runtime 26.18 and newer: older drivers give native" in reasons[built], reasons[built]
    else:
        # A newer ocloc (the sid lane's 26.x) wrote zebins, which every driver runs natively.
        assert (verdicts["pvc"], verdicts["acm-g10"], verdicts["tgllp"]) == ("native", "native", "jit")
        for built in ("pvc", "acm-g10"):
            assert "older drivers give" not in reasons[built], reasons[built]
    assert "older drivers give" not in reasons["tgllp"], reasons["tgllp"]
    assert set(verdicts) == set(DEVICES.split(","))


def test_old_hook_ensure_follows_the_current_jit_policy(published: Path) -> None:
    code = ("try:\n    a.ensure()\n    print(json.dumps('no error'))\n"
            "except aotwheel.JITError as exc:\n    print(json.dumps(str(exc)))")
    message = _load(published, code, AOTWHEEL_DEVICE="tgllp", AOTWHEEL_JIT="error")
    assert message.startswith("_demo.abi3.so: tgllp will JIT-compile") and "AOTWHEEL_JIT=error is set" in message
    if ocloc_writes_legacy_images():
        # pvc has a (legacy) image: JIT on today's drivers, which AOTWHEEL_JIT=error refuses too, naming it
        refused = _load(published, code, AOTWHEEL_DEVICE="pvc", AOTWHEEL_JIT="error")
        assert refused.startswith("_demo.abi3.so: pvc will JIT-compile") and "26.18" in refused, refused
        ok = _load(published, "print(json.dumps([v.verdict for v in a.ensure()]))", AOTWHEEL_DEVICE="pvc", AOTWHEEL_JIT="ignore")
        assert ok == ["jit"]
    else:  # a zebin for pvc: native, so even AOTWHEEL_JIT=error lets it load
        ok = _load(published, "print(json.dumps([v.verdict for v in a.ensure()]))", AOTWHEEL_DEVICE="pvc", AOTWHEEL_JIT="error")
        assert ok == ["native"]
