"""`aotwheel inspect <pip package name>`: a distribution whose binaries live outside any importable
package (Intel's CPU OpenCL runtime keeps libintelocl.so in <prefix>/lib) is found through its
installed RECORD, as pip itself lists it."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from aotwheel.errors import InspectError
from aotwheel.inspector import inspect

DIST = "intel-opencl-rt"  # installed by ci/setup.sh for the JIT tests


def _recorded_binaries(name: str) -> set[str]:
    """Every file pip recorded for the distribution, read independently of aotwheel."""
    dist = metadata.distribution(name)
    return {str(Path(str(dist.locate_file(f))).resolve()) for f in dist.files or ()}


def test_distribution_name_reports_its_recorded_binaries():
    try:
        recorded = _recorded_binaries(DIST)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{DIST} is not installed (bash ci/setup.sh installs it)")
    report = inspect(DIST)
    assert report.path == DIST
    got = {str(Path(f.path).resolve()) for f in report.files}
    assert any(p.endswith("libintelocl.so") or "libintelocl.so." in p for p in got)
    assert got <= recorded and got  # nothing outside the distribution's RECORD


def test_cli_accepts_a_distribution_name():
    try:
        metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{DIST} is not installed (bash ci/setup.sh installs it)")
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", DIST, "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["path"] == DIST


def test_unknown_name_is_one_line_naming_the_forms():
    with pytest.raises(InspectError) as exc:
        inspect("no-such-distribution-aotwheel-test")
    msg = str(exc.value)
    assert "\n" not in msg and "pip package name" in msg
