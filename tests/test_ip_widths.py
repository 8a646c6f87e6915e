"""Numbers are checked against their fields' widths (issue 37 item 5): an IP version given as a
decimal u32 that is wider than 32 bits, or with its reserved bits set, or a dotted one whose fields
overflow their bits, names no device (4345462784 = 2**32 + 12.10.0 resolved to dg1, and
USE_AOT_DEVLIST=4346281991 built a pvc wheel). The expected IPs are ocloc's own (`ocloc ids`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from aotwheel.backends.intel.catalog import load_catalog
from aotwheel.backends.intel.probes.torchxpu import ip_from_sycl_architecture

from _build_util import PYTHONPATH, ocloc_ip


def _resolve(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**{k: v for k, v in os.environ.items() if k not in ("USE_AOT_DEVLIST", "TORCH_XPU_ARCH_LIST")},
            "PYTHONPATH": PYTHONPATH, **env}
    return subprocess.run([sys.executable, "-m", "aotwheel", "resolve", *args], capture_output=True, text=True,
                          env=full, timeout=60)


def _u32(dotted: str) -> int:
    arch, release, revision = (int(x) for x in dotted.split("."))
    return arch << 22 | release << 14 | revision


@pytest.fixture(scope="module")
def ips() -> dict[str, str]:
    try:
        return {d: ocloc_ip(d) for d in ("dg1", "pvc")}
    except Exception as exc:
        pytest.skip(f"needs ocloc ids: {exc}")


@pytest.mark.parametrize("device,extra", [("dg1", 1 << 32), ("pvc", 1 << 32), ("pvc", 1 << 6), ("dg1", 0xFF << 6)])
def test_a_wrapping_decimal_ip_is_refused_with_one_line(device, extra, ips):
    value = _u32(ips[device]) + extra
    for proc in (_resolve(str(value)), _resolve(USE_AOT_DEVLIST=str(value))):
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and proc.stdout == "", proc.stdout + proc.stderr
        assert str(value) in lines[0] and "not an IP version" in lines[0] and device not in proc.stdout
    ok = _resolve(str(_u32(ips[device])))  # the value itself still names the device
    assert ok.returncode == 0 and device in ok.stdout


@pytest.mark.parametrize("text", ["12.256.0", "12.60.64", "1024.0.0"])
def test_a_dotted_ip_with_a_field_over_its_bits_is_refused(text):
    proc = _resolve(text)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "at most 1023.255.63" in proc.stderr


def test_readers_of_u32_ips_refuse_wider_values(ips):
    catalog = load_catalog()
    pvc = _u32(ips["pvc"])
    assert catalog.by_ip(pvc).name == "pvc"
    assert catalog.by_ip(pvc + (1 << 32)) is None and catalog.by_ip(pvc | 1 << 6) is None
    # torch's architecture enum: 64 bits, the IP in bits 8..39 (vendor byte 0 for Intel GPUs)
    assert ip_from_sycl_architecture(pvc << 8) == ips["pvc"]
    assert ip_from_sycl_architecture((pvc | 1 << 6) << 8) is None
