"""`aotwheel variant` names a bad AOTWHEEL_DEVICE as `aotwheel check` does (issue 37 item 6): it
used to exit 0 with the JIT-only answer. The install-time provider plugin stays silent (an install
never fails because of it) but says why in its log."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from _build_util import PYTHONPATH


def _cli(*args: str, device: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": PYTHONPATH, "AOTWHEEL_DEVICE": device}
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("device", ["garbage", "pvc,nonsense", "native"])
def test_variant_refuses_a_bad_device_override_with_checks_line(device, tmp_path):
    binary = tmp_path / "empty.so"
    binary.write_bytes(b"")
    check = _cli("check", str(binary), device=device)
    variant = _cli("variant", device=device)
    assert check.returncode == variant.returncode == 2 and variant.stdout == ""
    lines = variant.stderr.strip().splitlines()
    assert len(lines) == 1 and lines == check.stderr.strip().splitlines(), (check.stderr, variant.stderr)
    assert "AOTWHEEL_DEVICE" in lines[0]


def test_variant_with_a_good_override_lists_its_values():
    proc = _cli("variant", device="pvc")
    assert proc.returncode == 0 and "spirv" in proc.stdout


def test_the_provider_plugin_stays_silent_but_logs_why(monkeypatch, caplog, capfd):
    from aotwheel import variants

    monkeypatch.setenv("AOTWHEEL_DEVICE", "garbage")
    with caplog.at_level(logging.WARNING, logger="aotwheel.variants"):
        configs = variants.IntelGpuPlugin.get_supported_configs()
    assert [c.values for c in configs] == [[variants.JIT_VALUE]]
    assert capfd.readouterr().err == ""
    (record,) = [r for r in caplog.records if r.name == "aotwheel.variants"]
    assert "garbage" in record.getMessage() and variants.JIT_VALUE in record.getMessage()
