"""Helpers for the build tests: real tools, an ocloc wrapper that logs its runs, and reading
embedded images back with pyelftools (independently of aotwheel's own code)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from conftest import CLANG, LLVM_SPIRV, REPO, require, unzstd  # noqa: F401  # noqa: F401 (re-exported to the build tests)
from conftest import run_tool as run

PYTHONPATH = str(REPO / "python")


def compile_spirv(source: Path, out: Path) -> bytes:
    """SPIR-V straight from clang-15 + llvm-spirv-15 (not through aotwheel)."""
    bc = out.with_suffix(".bc")
    run([CLANG, "-cl-std=CL2.0", "-target", "spir64", "-O2", "-emit-llvm", "-c", str(source), "-o", str(bc)])
    run([LLVM_SPIRV, str(bc), "-o", str(out)])
    return out.read_bytes()


def planned_ocloc_edges(work: Path) -> list[str]:
    """The ocloc edges of a build's plan (``<work>/plan.json``, written at configure), in the order
    CMake adds them: ``<stem>=<device>,<device>...`` each."""
    import json

    plan = json.loads((work / "plan.json").read_text())
    return [f"{Path(e['source']).name.split('.')[0]}={','.join(n['device'] for n in e['data']['natives'])}"
            for e in plan["edges"] if e["step"] == "ocloc"]


def ocloc_ip(device: str) -> str:
    """The IP version ocloc itself reports for a device name (`ocloc ids <name>`)."""
    out = run(["ocloc", "ids", device]).stdout.split()
    ips = [w for w in out if w.count(".") == 2 and w.replace(".", "").isdigit()]
    assert len(ips) == 1, out
    return ips[0]


def ocloc_logger(directory: Path) -> tuple[Path, Path]:
    """An executable that appends its arguments to a log, then execs the real ocloc."""
    return tool_logger(directory, "ocloc")


def tool_logger(directory: Path, name: str) -> tuple[Path, Path]:
    """An executable ``directory/name`` that appends its arguments to ``directory/<name>-runs.log``,
    then execs the real tool ``name`` (ocloc, clang-15, llvm-spirv-15); returns (wrapper, log)."""
    real = shutil.which(name)
    assert real
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}-runs.log"
    wrapper = directory / name
    wrapper.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(' '.join(sys.argv[1:]) + '\\n')\n"
        f"os.execv({real!r}, [{real!r}] + sys.argv[1:])\n"
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper, log


def compile_runs(log: Path) -> list[str]:
    """Runs logged by :func:`tool_logger` that compiled (not the ``--version`` of discovery)."""
    if not log.exists():
        return []
    return [l for l in log.read_text().splitlines() if l.strip() != "--version"]


def logged_runs(log: Path, subcommand: str = "compile") -> list[str]:
    if not log.exists():
        return []
    return [l for l in log.read_text().splitlines() if l.split(" ", 1)[0] == subcommand]


def other_pythons() -> list[str]:
    """Installed CPython 3.10+ interpreters other than this one (pyenv's or on PATH)."""
    import glob

    found = []
    here = os.path.realpath(sys.executable)
    for minor in range(10, 15):
        candidates = [shutil.which(f"python3.{minor}") or ""]
        candidates += glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"))
        for c in candidates:
            if not c or os.path.realpath(c) == here:
                continue
            probe = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] >= (3, 10))"],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and probe.stdout.strip() == "True":
                found.append(c)
                break
    return found


def build_env(cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["AOTWHEEL_CACHE_DIR"] = str(cache)
    env.pop("USE_AOT_DEVLIST", None)
    env.pop("USE_AOT_JIT_FALLBACK", None)
    env.pop("USE_AOT_COMPRESS", None)  # aotwheel's default (ON) unless a test says otherwise
    env.pop("USE_AOT_MIN_DRIVER", None)  # the default floor unless a test states one
    env.update(extra)
    return env


@dataclass
class Embedded:
    triple: str        # section name suffix after "__CLANG_OFFLOAD_BUNDLE__sycl-"
    vaddr: int
    data: bytes        # as embedded: one zstd frame with COMPRESS ON (the default)

    @property
    def image(self) -> bytes:
        """The image a COMPRESS ON (default) build embedded, decompressed by zstandard itself."""
        return unzstd(self.data)


def embedded_images(so: Path) -> list[Embedded]:
    """Images listed in ``.tgtimg`` ({u64 vaddr, u64 size}), resolving R_X86_64_RELATIVE addends."""
    import struct

    from elftools.elf.elffile import ELFFile
    from elftools.elf.relocation import RelocationSection

    with open(so, "rb") as f:
        elf = ELFFile(f)
        tgt = elf.get_section_by_name(".tgtimg")
        assert tgt is not None, "no .tgtimg section"
        raw = tgt.data()
        relocs: dict[int, int] = {}
        for sec in elf.iter_sections():
            if isinstance(sec, RelocationSection) and sec.is_RELA():
                for r in sec.iter_relocations():
                    relocs[r["r_offset"]] = r["r_addend"]
        out = []
        for i in range(0, len(raw), 16):
            vaddr, size = struct.unpack_from("<QQ", raw, i)
            vaddr = relocs.get(tgt["sh_addr"] + i, vaddr)
            for sec in elf.iter_sections():
                if sec["sh_addr"] <= vaddr < sec["sh_addr"] + sec["sh_size"] and sec["sh_type"] != "SHT_NOBITS":
                    off = vaddr - sec["sh_addr"]
                    out.append(Embedded(sec.name.removeprefix("__CLANG_OFFLOAD_BUNDLE__sycl-"), vaddr,
                                        sec.data()[off : off + size]))
                    break
            else:
                raise AssertionError(f".tgtimg entry {i // 16} points to {vaddr:#x}, inside no section")
        return out


def tgtsym_names(so: Path) -> list[str]:
    from elftools.elf.elffile import ELFFile

    with open(so, "rb") as f:
        sec = ELFFile(f).get_section_by_name(".tgtsym")
        assert sec is not None, "no .tgtsym section"
        return [s.decode() for s in sec.data().split(b"\0") if s]


def ar_members(path: Path) -> list[str]:
    """Member names as GNU ar lists them."""
    return run(["ar", "t", str(path)]).stdout.split()


def ar_extract(path: Path, member: str, dest: Path) -> bytes:
    data = subprocess.run(["ar", "p", str(path), member], capture_output=True, check=True).stdout
    dest.write_bytes(data)
    return data


def disassemble(binary: Path, device: str, iga_platform: str, workdir: Path) -> dict[str, str]:
    """Per-kernel ISA text: `ocloc disasm` splits the kernel heaps, `iga64` disassembles them."""
    dump = workdir / f"dis-{binary.name}"
    run(["ocloc", "disasm", "-file", str(binary), "-device", device, "-dump", str(dump)])
    out = {}
    for heap in sorted(dump.glob("*_KernelHeap.dat")):
        text = run(["iga64", "-d", f"-p={iga_platform}", str(heap)]).stdout
        out[heap.name.removesuffix("_KernelHeap.dat")] = text
    zebin = binary.read_bytes()[18:20] == (205).to_bytes(2, "little")  # e_machine EM_INTELGT (docs/formats.md §3)
    if not out and ((dump / "sections.txt").is_file() or zebin):
        # ocloc 26's disasm of a zebin lists its sections but writes no kernel assembly without its
        # IGA library, and 22.43's writes nothing for a zebin: each .text.<kernel> section is the
        # kernel's code, disassembled here by iga64 (IGC's .text.Intel_Symbol_Table_Void_Program
        # stub is no kernel).
        from elftools.elf.elffile import ELFFile

        with open(binary, "rb") as f:
            for sec in ELFFile(f).iter_sections():
                if sec.name.startswith(".text.") and sec.data_size and sec.name != ".text.Intel_Symbol_Table_Void_Program":
                    heap = workdir / f"{binary.name}.{sec.name[6:]}.isa"
                    heap.write_bytes(sec.data())
                    out[sec.name[6:]] = run(["iga64", "-d", f"-p={iga_platform}", str(heap)]).stdout
    return out
