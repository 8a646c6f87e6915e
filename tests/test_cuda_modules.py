"""Verdicts per kernel set: a library whose statically linked module cannot load is named.

xgboost 1.7.6 (pinned PyPI wheel, 200 MB): ``libxgboost.so``'s ``.nv_fatbin`` holds 41 containers
from its own sources (cubins sm_50..sm_80 and compute_80 PTX each) and one device-linked module
without a source name and without PTX (its NCCL kernels). The CUDA runtime registers every
container as a module, so on sm_90 the PTX modules JIT while that one cannot load. Expected values
come from an independent walk of the section's bytes (readelf for the section, the layout of
REFERENCE §5), and the kernel count from readelf on the cubin that cuobjdump extracts.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from _cuda_util import cuobjdump, run
from _inspect_util import CACHE, REPO, fetch

pytestmark = pytest.mark.usefixtures("large_binaries", "nvcc")

WHEEL = ("xgboost", "1.7.6", "xgboost-1.7.6-py3-none-manylinux2014_x86_64.whl",
         "b1d5db49b199152d62bd9217c98760207d3de86d2b9d243260c573ffe638f80a")


@pytest.fixture(scope="module")
def lib() -> Path:
    out = CACHE / "xgboost-1.7.6" / "libxgboost.so"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(fetch(*WHEEL)) as zf:
            out.write_bytes(zf.read("xgboost/lib/libxgboost.so"))
    return out


def nv_fatbin_containers(path: Path) -> list[list[tuple[int, int]]]:
    """[(kind, arch)] of every entry, per container of .nv_fatbin (readelf gives the section)."""
    m = re.search(r"\]\s+\.nv_fatbin\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", run(["readelf", "-SW", str(path)]).stdout)
    assert m, "no .nv_fatbin"
    with open(path, "rb") as f:
        f.seek(int(m[1], 16))
        data = f.read(int(m[2], 16))
    out, at = [], 0
    while at + 16 <= len(data):
        if data[at : at + 4] != b"\x50\xed\x55\xba":
            at += 8  # zero padding between containers
            continue
        (size,) = struct.unpack_from("<Q", data, at + 8)
        entries, off = [], at + 16
        while off < at + 16 + size:
            kind, _, hsize, esize = struct.unpack_from("<HHIQ", data, off)
            (arch,) = struct.unpack_from("<I", data, off + 28)
            entries.append((kind, arch))
            off += hsize + esize
        out.append(entries)
        at += 16 + size
    return out


def _check(path: Path, device: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "aotwheel", "check", str(path), "--device", device, "--jit", "ignore", *extra],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def test_the_module_that_cannot_load_on_sm_90_is_named(lib: Path) -> None:
    containers = nv_fatbin_containers(lib)
    # NVIDIA's rules by hand: on 9.0 a container loads with a 9.x cubin or PTX of arch <= 90.
    cannot = [c for c in containers if not any(k == 2 and a // 10 == 9 for k, a in c) and not any(k == 1 and a <= 90 for k, a in c)]
    assert len(containers) == 42 and len(cannot) == 1
    cubins = ", ".join(f"sm_{a}" for a in sorted({a for k, a in cannot[0] if k == 2}))
    proc = _check(lib, "sm_90")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("sm_90 (cc 9.0): jit, 1 module unsupported compute_80 [rule ptx-jit]"), proc.stdout
    assert "1 module cannot load on compute capability 9.0: an unnamed module of 1 container" in proc.stdout
    assert f"(cubins {cubins}, no PTX)" in proc.stdout
    [row] = json.loads(_check(lib, "sm_90", "--json").stdout)["verdicts"]
    assert row["verdict"] == "jit" and len(row["unsupported_modules"]) == 1
    [row] = json.loads(_check(lib, "sm_80", "--json").stdout)["verdicts"]  # every container has an sm_80 cubin
    assert row["verdict"] == "native" and row["unsupported_modules"] == []


def test_deep_inspect_names_the_modules_kernels(lib: Path, tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", "--deep", "--json", str(lib)], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    modules = json.loads(proc.stdout)["files"][0]["cuda_modules"]
    assert [(m["containers"], bool(m["sources"])) for m in modules] == [(41, True), (1, False)]
    unnamed = modules[1]
    # cuobjdump names the device-linked module's cubins libxgboost.<n>.sm_XY.cubin; extract one.
    listed = [ln.split()[-1] for ln in run([str(cuobjdump()), "--list-elf", str(lib)]).stdout.splitlines() if ln.startswith("ELF")]
    name = next(n for n in listed if n.startswith("libxgboost.") and n.endswith(".sm_70.cubin"))
    run([str(cuobjdump()), "-xelf", name, str(lib)], cwd=tmp_path)
    symbols = run(["readelf", "-sW", str(tmp_path / name)]).stdout
    entry = [ln.split()[-1] for ln in symbols.splitlines() if " FUNC " in ln and "[<other>: 10]" in ln]  # STO_CUDA_ENTRY
    assert unnamed["kernels"] == len(entry) and set(unnamed["kernel_sample"]) <= set(entry)
    assert all("ncclKernel" in k for k in entry)
