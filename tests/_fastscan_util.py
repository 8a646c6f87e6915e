"""The libFuzzer harness of aotwheel._fastscan's C core: build it, seed it from real binaries, run
it (tests/test_fuzz_fastscan.py for the short run, fuzz/fastscan_long.py for the long one)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import _fuzz_util as fu
from conftest import CLANG, LLVM_SPIRV, REPO  # noqa: F401

SOURCE = REPO / "fuzz" / "fastscan_fuzzer.c"
CORE = REPO / "csrc" / "fastscan_core.h"
CLANG = CLANG
FLAGS = ("-g", "-O1", "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all")
_SEEDS = (fu.fat_zebin_seed, fu.fat_seed, fu.zebin_seed, fu.legacy_seed, fu.generic_ir_seed, fu.zstd_seed)
_MAGIC = (0xBA55ED50).to_bytes(4, "little")  # an NVIDIA fat binary container (docs/formats.md §5)


def build(dest: Path) -> Path:
    """The fuzzer binary at ``dest`` (clang-15 with libclang_rt.fuzzer: libclang-common-15-dev)."""
    if shutil.which(CLANG) is None:
        raise fu.MissingTool(f"needs {CLANG} to build the fastscan fuzzer (ci/setup.sh installs it)")
    proc = subprocess.run([CLANG, *FLAGS, f"-I{CORE.parent}", str(SOURCE), "-o", str(dest)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise fu.MissingTool(f"{CLANG} could not build the fuzzer (libclang-common-15-dev missing?): {proc.stderr[-1500:]}")
    return dest


def seed_corpus(dest: Path, *, cuda: bool = True) -> list[Path]:
    """Real ocloc output (fat binaries in both formats, a bare zebin, a legacy binary, generic_ir),
    a real zstd frame (fs_zstd_facts), a real ``.tgtsym`` section and, with ``cuda`` and where nvcc
    is installed, a real nvcc fat binary alone and after chance container magic (fs_fatbin_*),
    copied into ``dest``."""
    from aotwheel.formats.elf import open_elf
    from aotwheel.formats.region import Region

    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for make in _SEEDS:
        src = make()
        out.append(Path(shutil.copyfile(src, dest / src.name)))
    fatbin = None
    if cuda:
        try:  # nvcc's fat binary (fs_fatbin_*), alone and after chance magic: optional, nvcc comes from PyPI
            fatbin = fu.cuda_fatbin_seed().read_bytes()
        except fu.MissingTool:
            fatbin = None
    if fatbin is not None:
        out += [dest / "vadd.fatbin", dest / "chance_then_fatbin.bin"]
        out[-2].write_bytes(fatbin)
        # a bad version, a header claiming 1 TiB of entries, then the real containers
        out[-1].write_bytes(_MAGIC + struct.pack("<HHQ", 7, 16, 64) + bytes(64) + _MAGIC + struct.pack("<HHQ", 1, 16, 1 << 40) + fatbin)
    so = fu.host_so_seed().read_bytes()
    view = open_elf(Region(so, "seed"))
    sec = view.section(".tgtsym")
    if sec is not None:
        out.append(dest / "tgtsym.bin")
        out[-1].write_bytes(bytes(view.data(sec)))
    return out


@dataclass(frozen=True)
class Run:
    returncode: int
    execs: int
    cov: int  # edges covered (libFuzzer's "cov:")
    ft: int  # features
    corpus: int  # inputs in the corpus at the end
    seconds: int
    output: str

    @property
    def findings(self) -> list[str]:
        """Sanitizer or assertion reports (libFuzzer stops at the first)."""
        return re.findall(r"^(?:==\d+==ERROR: .*|SUMMARY: .*|.*Assertion .* failed.*)$", self.output, re.M)


def run(fuzzer: Path, corpus: Path, artifacts: Path, *args: str, timeout: float = 3600) -> Run:
    """Run the fuzzer over ``corpus`` (new inputs are added to it); crashes go to ``artifacts``."""
    artifacts.mkdir(parents=True, exist_ok=True)
    cmd = [str(fuzzer), f"-artifact_prefix={artifacts}/", "-print_final_stats=1", *args, str(corpus)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    text = proc.stdout + proc.stderr
    last = re.findall(r"#(\d+)\s+(?:DONE|pulse|NEW|REDUCE|INITED)\s+cov: (\d+) ft: (\d+) corp: (\d+)", text)
    execs = re.search(r"stat::number_of_executed_units:\s*(\d+)", text)
    seconds = re.search(r"Done \d+ runs in (\d+) second", text)
    n, cov, ft, corp = last[-1] if last else ("0", "0", "0", "0")
    return Run(proc.returncode, int(execs.group(1)) if execs else int(n), int(cov), int(ft), int(corp),
               int(seconds.group(1)) if seconds else 0, text)
