"""examples/downstream built against an installed aotwheel, like a user's package would be.

aotwheel is pip-installed into a --target directory; the example is then built by pip +
scikit-build-core with --no-build-isolation and that directory on PYTHONPATH, so CMake's
find_package(aotwheel CONFIG) finds it through the "cmake.root" entry point. The wheel is
checked with readelf / objcopy / ar and by importing the built module; its images are embedded
compressed (COMPRESS ON, aotwheel's default) and decompressed by the zstandard library itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _aotdemo_util import (
    ACM_G10_MEMBER,
    FAT_SECTION,
    PVC_MEMBER,
    SPIRV_MAGIC,
    SPIRV_SECTION,
    ar_members,
    copy_example,
    section_bytes,
    section_names,
    unpack,
    unzstd,
)

pytestmark = pytest.mark.usefixtures("builds")


def _build(site: Path, tmp_path: Path, *, devlist: str | None, config: tuple[str, ...] = (),
           **extra_env: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    project = copy_example(tmp_path / "aotdemo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_") and k != "TORCH_XPU_ARCH_LIST"}
    env.update(extra_env)
    env["PYTHONPATH"] = str(site)  # the installed aotwheel only, not this checkout's python/
    if devlist is not None:
        env["USE_AOT_DEVLIST"] = devlist
    build_dir = tmp_path / "build"
    cmd = [sys.executable, "-m", "pip", "wheel", str(project), "--no-deps", "--no-build-isolation", "--no-cache-dir",
           "-w", str(tmp_path / "wheels"), "-C", f"build-dir={build_dir}", *config]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    return proc, build_dir


def _only_wheel(tmp_path: Path) -> Path:
    wheels = list((tmp_path / "wheels").glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_downstream_default_devlist_against_installed_aotwheel(installed_aotwheel: Path, tmp_path: Path) -> None:
    site = installed_aotwheel
    assert (site / "aotwheel" / "cmake" / "aotwheel-config.cmake").is_file()
    proc, build_dir = _build(site, tmp_path, devlist=None)  # empty define: the resolver's default, pvc,ats-m150
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]

    # CMake found the installed aotwheel's config file, not the source checkout's.
    cache = (build_dir / "CMakeCache.txt").read_text()
    found = [line.split("=", 1)[1] for line in cache.splitlines() if line.startswith("aotwheel_DIR:")]
    assert found and Path(found[0]).resolve() == (site / "aotwheel" / "cmake").resolve()

    wheel = _only_wheel(tmp_path)
    assert wheel.name == "aotdemo-0.1.0-cp310-abi3-linux_x86_64.whl"
    unpacked = unpack(wheel, tmp_path / "unpacked")
    so = unpacked / "aotdemo" / "_demo.abi3.so"
    assert {FAT_SECTION, SPIRV_SECTION, ".tgtimg", ".tgtsym"} <= set(section_names(so))
    fat = section_bytes(so, FAT_SECTION, tmp_path)  # one zstd frame: COMPRESS ON is the default
    assert sorted(ar_members(unzstd(fat), tmp_path)) == sorted([PVC_MEMBER, ACM_G10_MEMBER, "generic_ir"])
    assert not (unpacked / "aotdemo" / "_demo.c").exists()  # sources stay out of the wheel

    code = "import aotdemo, json; print(json.dumps([(t, s, b.hex()) for t, s, b in aotdemo.images()]))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(unpacked)}, check=True)
    found = json.loads(run.stdout)
    assert {s for _, s, _ in found} == {"saxpy.cl"}  # (triple, source, bytes): the loader's contract
    images = [(t, bytes.fromhex(h)) for t, _, h in found]
    assert [(t, unzstd(b)[:4]) for t, b in images] == [("spir64_gen", b"!<ar"), ("spir64", SPIRV_MAGIC)]
    assert images[0][1] == fat


def test_downstream_none_from_environment_is_spirv_only(installed_aotwheel: Path, tmp_path: Path) -> None:
    proc, _ = _build(installed_aotwheel, tmp_path, devlist="none")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    so = unpack(_only_wheel(tmp_path), tmp_path / "u") / "aotdemo" / "_demo.abi3.so"
    names = section_names(so)
    assert FAT_SECTION not in names
    assert unzstd(section_bytes(so, SPIRV_SECTION, tmp_path)).startswith(SPIRV_MAGIC)


def test_downstream_config_setting_define_overrides_environment(installed_aotwheel: Path, tmp_path: Path) -> None:
    proc, _ = _build(installed_aotwheel, tmp_path, devlist="none", config=("-C", "cmake.define.USE_AOT_DEVLIST=ats-m150"))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    so = unpack(_only_wheel(tmp_path), tmp_path / "u") / "aotdemo" / "_demo.abi3.so"
    assert ar_members(unzstd(section_bytes(so, FAT_SECTION, tmp_path)), tmp_path) == [ACM_G10_MEMBER, "generic_ir"]


def test_downstream_empty_devlist_is_unset_then_torch_xpu_arch_list(installed_aotwheel: Path, tmp_path: Path) -> None:
    # The example's { env = "USE_AOT_DEVLIST", default = "" } define passes the empty value: the
    # resolver's chain goes on to TORCH_XPU_ARCH_LIST (issue 26; issue 30 item 4 stopped here).
    proc, _ = _build(installed_aotwheel, tmp_path, devlist="", TORCH_XPU_ARCH_LIST="pvc")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    so = unpack(_only_wheel(tmp_path), tmp_path / "u") / "aotdemo" / "_demo.abi3.so"
    assert ar_members(unzstd(section_bytes(so, FAT_SECTION, tmp_path)), tmp_path) == [PVC_MEMBER, "generic_ir"]


def test_downstream_hostile_devlist_stops_the_build(installed_aotwheel: Path, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    proc, _ = _build(installed_aotwheel, tmp_path, devlist=f"pvc;touch {pwned}")
    assert proc.returncode != 0
    assert "aotwheel_resolve_devlist: " in proc.stdout + proc.stderr
    assert not pwned.exists()
    assert not any((tmp_path / "wheels").glob("*.whl"))
