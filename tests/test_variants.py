"""aotwheel's Intel GPU wheel-variant provider (issue 24), asked through variantlib's own CLI.

``variantlib analyze-platform`` finds plugins by the ``variant_plugins`` entry point of the
installed aotwheel and runs them in a subprocess, so these tests prove the registration, the
protocol and the answers together. IP versions are docs/formats.md §2's (pvc 12.60.7, acm-g11
12.56.5); "spirv" is the JIT-only value the provider always lists last.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("variantlib", reason="variantlib is not installed (ci/setup.sh installs variantlib[cli]==0.2.2)")

VARIANTLIB = Path(sys.executable).with_name("variantlib")


def _platform_values(device: str | None) -> list[str]:
    """The ``aotwheel_intel :: image`` values variantlib's analyze-platform prints, in order."""
    env = {k: v for k, v in os.environ.items() if k != "AOTWHEEL_DEVICE"}
    if device is not None:
        env["AOTWHEEL_DEVICE"] = device
    proc = subprocess.run([str(VARIANTLIB), "analyze-platform"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Provider Config: `aotwheel_intel`" in proc.stdout, proc.stdout + proc.stderr
    m = re.search(r"image :: (\[.*?\])", proc.stdout)
    assert m, proc.stdout
    return list(ast.literal_eval(m[1]))


def test_variant_provider_pvc_lists_its_ip_then_spirv() -> None:
    assert _platform_values("pvc") == ["12.60.7", "spirv"]


def test_variant_provider_acm_g11_lists_only_its_own_ip() -> None:
    """rules.py: on acm-g11 (product dg2) the driver's filters look for members 64.12.56.5, 64.12.56
    and 64.dg2; an aotwheel fat binary names its acm-g10 image 64.12.55.8, which none matches, and
    the 25.44 fallback pass names no other product for dg2 -- so 12.55.8 is not offered."""
    assert _platform_values("acm-g11") == ["12.56.5", "spirv"]


def test_variant_provider_several_gpus_exact_ips_first() -> None:
    assert _platform_values("acm-g11,pvc") == ["12.56.5", "12.60.7", "spirv"]


def test_variant_provider_cpu_only_or_broken_probe_means_jit_only() -> None:
    assert _platform_values("cpu") == ["spirv"]
    assert _platform_values("sm_90") == ["spirv"]  # an NVIDIA GPU is not this provider's business
    # A malformed override is a probe error: the provider still answers (an install never fails).
    assert _platform_values("no-such-gpu") == ["spirv"]


def test_variant_provider_all_configs_cover_the_catalog() -> None:
    proc = subprocess.run([str(VARIANTLIB), "plugins", "get-configs", "--all", "-n", "aotwheel_intel"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (config,) = json.loads(proc.stdout)["aotwheel_intel"]
    assert config["name"] == "image" and config["multi_value"] is True
    values = config["values"]
    assert {"12.60.7", "12.55.8", "12.56.5", "20.1.0"} <= set(values) and values[-1] == "spirv"
    assert all(re.fullmatch(r"[a-z0-9_.]+", v) for v in values)  # variantlib's value grammar


def test_variant_provider_keeps_import_aotwheel_light() -> None:
    code = "import sys, aotwheel; print(sorted(m for m in sys.modules if m.startswith(('aotwheel.variants', 'variantlib'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_variant_nvidia_values_use_nvidia_providers_vocabulary() -> None:
    """NVIDIA's provider (wheelnext/nvidia-variant-provider) names cubins ``<NN>_real`` and PTX
    ``<NN>_virtual`` under ``nvidia :: sm_arch``; arch-specific cubins (sm_90a) have no value there."""
    from aotwheel.backends.nvidia.variants import value as _nvidia_value

    assert _nvidia_value("sm_90", virtual=False) == "90_real"
    assert _nvidia_value("sm_120", virtual=False) == "120_real"
    assert _nvidia_value("compute_80", virtual=True) == "80_virtual"
    assert _nvidia_value("sm_90a", virtual=False) is None


def _wheel(dest: Path, tag: str, so: Path) -> Path:
    """A minimal real wheel (METADATA, WHEEL, RECORD with true hashes) carrying one library."""
    import base64
    import hashlib
    import zipfile

    files = {
        "kern/__init__.py": b"",
        "kern/libkern.so": so.read_bytes(),
        "kern-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: kern\nVersion: 1.0\n",
        "kern-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n",
    }
    record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n"
                     for n, d in files.items()) + "kern-1.0.dist-info/RECORD,,\n"
    path = dest / tag / "kern-1.0-py3-none-linux_x86_64.whl"
    path.parent.mkdir(parents=True)
    with zipfile.ZipFile(path, "w") as zf:
        for n, d in files.items():
            zf.writestr(n, d)
        zf.writestr("kern-1.0.dist-info/RECORD", record)
    return path


def test_variant_labels_nvidia_wheels_in_nvidias_vocabulary(tmp_path: Path) -> None:
    """tests/data/cuda-h100 holds real nvcc builds; its cuobjdump.txt lists sm_90 cubins for
    libkern_sm_90.so, sm_80 cubins + sm_80 PTX for libkern_sm_80-ptx.so, PTX only for libkern_ptx.so."""
    from aotwheel.variants import label_wheels

    data = Path(__file__).parent / "data" / "cuda-h100"
    wheels = [_wheel(tmp_path / "in", tag, data / f"libkern_{tag}.so") for tag in ("sm_90", "sm_80-ptx", "ptx")]
    out = tmp_path / "variants"
    results = label_wheels(wheels, out)
    assert [sorted(r.properties) for r in results] == [
        ["nvidia :: sm_arch :: 90_real"],
        ["nvidia :: sm_arch :: 80_real", "nvidia :: sm_arch :: 80_virtual"],
        ["nvidia :: sm_arch :: 80_virtual"],
    ]
    assert [r.label for r in results][:2] == ["sm_90", "sm_80"]
    for r in results:
        proc = subprocess.run([str(VARIANTLIB), "analyze-wheel", "-i", str(r.output)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and f"Variant: `{r.label}`" in proc.stdout, proc.stderr
    proc = subprocess.run([str(VARIANTLIB), "generate-index-json", "-d", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    index = json.loads((out / "kern-1.0-variants.json").read_text())
    assert index["providers"]["nvidia"] == {"plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
                                            "requires": ["nvidia-variant-provider"]}
    assert index["default-priorities"]["namespace"] == ["aotwheel_intel", "nvidia"]
    assert len(index["variants"]) == 3
    # aotwheel inspect shows the label and properties of a variant wheel (issue 24 item 4).
    shown = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", str(results[1].output)], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "wheel variant sm_80: nvidia :: sm_arch :: 80_real; nvidia :: sm_arch :: 80_virtual" in shown.stdout.splitlines()
