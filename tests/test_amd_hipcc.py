"""The installed hipcc as aotwheel asks it (``--version`` and one ``-###`` dry run), against
what the tools themselves say; whether it builds a processor is decided by the real hipcc (a
compile of the HIP kernel for it) wherever a test needs to know.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


def _aotwheel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("USE_AOT_", "AOTWHEEL_HIPCC"))}
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, env={**full, **(env or {})},
                          timeout=120, check=False)


def test_resolve_toolchain_hipcc_asks_the_installed_hipcc() -> None:
    """``aotwheel resolve --toolchain hipcc``: the list's AMD targets against what the installed
    hipcc's device libraries serve (Debian 12's 5.2 stops at gfx1036: gfx1100 is one line naming
    the fix); the Intel part of a mixed list is not hipcc's to check."""
    from aotwheel.backends.amd.hipcc import find_hipcc, query

    ok = _aotwheel("resolve", "gfx90a:xnack+,gfx1030,pvc", "--toolchain", "hipcc")
    assert ok.returncode == 0, ok.stderr
    assert "hipcc --offload-arch=gfx90a:xnack+ --offload-arch=gfx1030" in ok.stdout
    facts = query(find_hipcc(), ["gfx90a"])
    if "gfx1100" in facts.processors:
        pytest.skip(f"this hipcc ({facts.version}) builds gfx1100")
    bad = _aotwheel("resolve", "gfx90a,gfx1100", "--toolchain", "hipcc")
    assert bad.returncode == 2 and bad.stdout == ""
    [line] = bad.stderr.splitlines()
    assert line.startswith(f"aotwheel: error: hipcc {facts.version} (clang {facts.clang_version}) at {facts.path} cannot build gfx1100: ")
    assert line.endswith("drop gfx1100 from USE_AOT_DEVLIST")


def test_resolve_toolchain_hipcc_without_hipcc(tmp_path: Path) -> None:
    bad = _aotwheel("resolve", "gfx90a", "--toolchain", "hipcc", "--hipcc", str(tmp_path / "hipcc"))
    assert bad.returncode == 2
    [line] = bad.stderr.splitlines()
    assert f"hipcc from the explicit path ({tmp_path / 'hipcc'}) is not an executable file" in line and "apt-get install hipcc" in line


def test_build_toolchain_reports_hipcc() -> None:
    """``aotwheel build toolchain --devlist gfx90a --json``: hipcc's version and the processors its
    device libraries serve, as -### and the library folder say; ``resolve --list`` names AMD's
    target ids."""
    from aotwheel.backends.amd.hipcc import find_hipcc, query

    facts = query(find_hipcc(), ["gfx90a"])
    proc = _aotwheel("build", "toolchain", "--devlist", "gfx90a", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["hipcc"], doc["hipcc_version"], doc["hipcc_clang_version"]) == (facts.path, facts.version, facts.clang_version)
    assert set(doc["hipcc_processors"]) == facts.processors and "gfx90a" in facts.processors
    listed = _aotwheel("resolve", "--list").stdout
    assert "AMD target ids (hipcc --offload-arch; features :sramecc+ :sramecc-, :xnack+ :xnack-): gfx600" in listed

