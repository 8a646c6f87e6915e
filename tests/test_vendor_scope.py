"""A vendor is one folder (issue 40): the change that made AMD build (hipcc, ``gfx*`` in
USE_AOT_DEVLIST) touched only the AMD package, its CMake file, its tests, docs, ci/setup.sh and
the HIP kernel in csrc/ -- nothing of the core. Read from git history, not from the code: the
files that differ between the commit before the AMD change (``BASE``, recorded here) and the last
commit of that change (the newest commit whose subject starts with ``amd:``).
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess

import pytest

from conftest import REPO

# main as the AMD branch last merged it ("Merge small"): the narrow Backend, one record system,
# CMake by vendor, the buildsteps names -- issue 40's core, before the AMD build code on top of it.
BASE = "ff224c268d1975febd0400884609dc105ed3b93b"
MARK = "amd:"  # the subject prefix of the AMD change's commits

# What the AMD change may touch, and why each place is the vendor's own.
SCOPE = {
    "python/aotwheel/backends/amd/*": "the AMD package",
    "cmake/aotwheel-amd.cmake": "its CMake file",
    "python/aotwheel/backends/__init__.py": "the registry entry naming AMD's build module (its lines only: LINES)",
    "tests/test_amd*.py": "its tests",
    "tests/test_vendor_scope.py": "this test",
    "tests/test_ci_setup.py": "ci/setup.sh's test: the main job asks for no hipcc",
    "tests/test_layering.py": "the registry entry's vendor words it allows (its lines only: LINES)",
    "tests/test_backend_protocol.py": "its assertion that AMD has no build module (its lines only: LINES)",
    "tests/test_build_plan.py": "its 'no build steps' line was asked of AMD; now of a registered vendor that builds nothing",
    "docs/*.md": "docs",
    "README.md": "docs",
    "ci/setup.sh": "installs hipcc in both lanes' test packages",
    "csrc/hip/*": "the HIP kernel",
    "CMakeLists.txt": "this repository's own build calls aotwheel_add_hip_device_code() for the HIP kernel",
}
# Core files the change may touch only in lines that name the AMD package.
LINES = {"python/aotwheel/backends/__init__.py": "aotwheel.backends.amd.", "tests/test_layering.py": "aotwheel.backends.amd.",
         "tests/test_backend_protocol.py": "amd"}


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=120, check=False)


def test_the_amd_change_touches_only_the_amd_vendor() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout (the history is what this test reads)")
    if _git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone: the commit before the AMD change is not in its history (git fetch --unshallow)")
    if _git("cat-file", "-e", f"{BASE}^{{commit}}").returncode != 0:
        pytest.skip(f"commit {BASE[:12]} (before the AMD change) is not in this clone's history")
    assert _git("merge-base", "--is-ancestor", BASE, "HEAD").returncode == 0, f"{BASE[:12]} is not an ancestor of HEAD"
    since = _git("log", "--format=%H %s", f"{BASE}..HEAD").stdout.splitlines()  # newest first
    head = next((line.split(" ", 1)[0] for line in since if line.split(" ", 1)[-1].startswith(MARK)), "")
    assert head, f"no commit whose subject starts with '{MARK}' after {BASE[:12]}"
    changed = _git("diff", "--name-only", BASE, head).stdout.split()
    assert any(fnmatch.fnmatch(f, "python/aotwheel/backends/amd/*") for f in changed), changed  # the change is there at all
    outside = [f for f in changed if not any(fnmatch.fnmatch(f, pattern) for pattern in SCOPE)]
    assert outside == [], f"the AMD change touched files outside the AMD vendor's scope: {outside}"
    for path, word in LINES.items():
        diff = _git("diff", "--unified=0", BASE, head, "--", path).stdout.splitlines()
        lines = [ln for ln in diff if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        assert all(word in ln for ln in lines), f"{path}: the AMD change touched lines that do not name {word!r}: {lines}"
