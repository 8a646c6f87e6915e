"""The installed hipcc as aotwheel asks it (``--version`` and one ``-###`` dry run), against
what the tools themselves say; whether it builds a processor is decided by the real hipcc (a
compile of the HIP kernel for it) wherever a test needs to know.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("hipcc") is None,
                                reason="hipcc is not installed (ci/setup.sh --test installs it in both lanes)")
HIP = REPO / "csrc" / "hip" / "elementwise.hip"


def hipcc_builds(processor: str, tmp_path: Path) -> bool:
    proc = subprocess.run(["hipcc", f"--offload-arch={processor}", "--genco", str(HIP), "-o", str(tmp_path / f"{processor}.co")],
                          capture_output=True, text=True, env=dict(os.environ, HIP_PLATFORM="amd"), timeout=300, check=False)
    return proc.returncode == 0


def test_the_facts_hipcc_gives_even_with_another_platform_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HIP_PLATFORM=nvidia in the environment: aotwheel still asks hipcc as an AMD compiler, and
    what it reads agrees with the tools themselves (the bundler beside the clang that -### names,
    the device libraries that hold the ISA library of a processor hipcc builds)."""
    from aotwheel.backends.amd.hipcc import find_hipcc, query

    monkeypatch.setenv("HIP_PLATFORM", "nvidia")
    facts = query(find_hipcc(), ["gfx90a"])
    assert facts.path == os.path.realpath(shutil.which("hipcc") or "")
    assert Path(facts.bundler).name == "clang-offload-bundler" and Path(facts.bundler).parent == Path(facts.clang).parent
    version = subprocess.run([facts.clang, "--version"], capture_output=True, text=True, check=True).stdout
    assert f"clang version {facts.clang_version}" in version
    assert hipcc_builds("gfx90a", tmp_path) and "gfx90a" in facts.processors
    assert Path(facts.device_libs, "oclc_isa_version_90a.bc").is_file()


def test_a_processor_its_device_libraries_do_not_serve_is_one_line(tmp_path: Path) -> None:
    """require_processors, configure's check, on the facts of the real hipcc: a processor the real
    hipcc fails to build is refused with one line naming the fix (skips where hipcc builds it)."""
    from aotwheel.backends.amd.hipcc import find_hipcc, query, require_processors
    from aotwheel.errors import ToolchainError

    if hipcc_builds("gfx1100", tmp_path):
        pytest.skip("this hipcc builds gfx1100 (a ROCm newer than Debian 12's 5.2)")
    facts = query(find_hipcc(), ["gfx90a", "gfx1100"])
    require_processors(facts, ["gfx90a:xnack-", "gfx1030"])  # both built by Debian 12's hipcc: no error
    with pytest.raises(ToolchainError) as refused:
        require_processors(facts, ["gfx90a", "gfx1100"])
    line = str(refused.value)
    assert "\n" not in line and "cannot build gfx1100" in line and "drop gfx1100 from USE_AOT_DEVLIST" in line
