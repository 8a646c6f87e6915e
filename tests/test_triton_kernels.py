"""Issue 38: real Triton-XPU kernels (tests/data/triton, written by triton-xpu 3.3.0b1 through
tests/data/triton/make_fixtures.py; no Triton needed here) through ``aotwheel compile`` and
``aotwheel.compile_triton``, against the installed ocloc (Debian 12's 22.43, sid's 26.27).

Every expected image is ocloc's own, run here by hand with the kernel's ``build_flags`` as
Triton's ``make_spv`` passes them (its native path: ``ocloc compile -file k.spv -spirv_input
-device pvc -options "<build_flags>"``, rebuilt with ``-cl-intel-256-GRF-per-thread`` appended when
ocloc's log says ``spilled``), with ``-output`` for Triton's ``-o`` (which ocloc 22.43 refuses),
``-exclude_ir`` as aotwheel's members (generic_ir holds the SPIR-V once), and the image format the
report says aotwheel wrote. Register counts come from ocloc's ``disasm`` dump (legacy images) or
from ``.ze_info`` read with pyelftools and PyYAML (zebin), never from aotwheel's reader.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import PYTHONPATH, REPO, ar_extract, build_env
from _build_util import ar_members as ar_listing
from conftest import ocloc_output, ocloc_writes_legacy_images, require

FIXTURES = REPO / "tests" / "data" / "triton"
LARGE = "-cl-intel-256-GRF-per-thread"
IP = {"pvc": "12.60.7", "dg2": "12.55.8"}
DEVICE = {"pvc": "pvc", "dg2": "acm-g10"}  # ocloc's name of each target


def kernel(target: str, label: str) -> tuple[Path, dict[str, object]]:
    """A fixture kernel's .spv and its metadata, by the generator's label."""
    entry = json.loads((FIXTURES / target / "index.json").read_text())[label]
    base = FIXTURES / target / entry
    return base.with_suffix(".spv"), json.loads(base.with_suffix(".json").read_text())


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require("ocloc")
    return tmp_path_factory.mktemp("triton-cache")  # shared: a kernel compiled once is a cache hit after


def aotwheel(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], cwd=cwd, env=build_env(cache, PYTHONPATH=PYTHONPATH),
                          capture_output=True, text=True, timeout=900)


def format_args(report: dict[str, object]) -> list[str]:
    """ocloc's arguments for the image format aotwheel's report says it wrote (none: ocloc's default)."""
    return ["--format", "zebin"] if report.get("image_format") == "zebin" else []


def by_hand(spv: Path, device: str, options: str, out: Path, fmt: list[str], name: str = "x") -> tuple[bytes, str]:
    """One device's image and log from ocloc itself."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-options", options,
                           *fmt, "-exclude_ir", "-output", name, "-out_dir", str(out), "-output_no_suffix"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ocloc_output(out, name).read_bytes(), proc.stdout + proc.stderr


def tritons_build(spv: Path, device: str, flags: str, out: Path, fmt: list[str]) -> tuple[bytes, str]:
    """Triton's make_spv native path, written out from triton/backends/intel/compiler.py (3.3.0b1):
    build with build_flags; if the log says 'spilled' and the flags lack 256 GRF, append it and rebuild."""
    image, log = by_hand(spv, device, flags, out, fmt, "first")
    if "spilled" in log and LARGE not in flags:
        return by_hand(spv, device, f"{flags} {LARGE}", out, fmt, "retry")[0], f"{flags} {LARGE}"
    return image, flags


def ar_members(path: Path) -> list[str]:
    """Member names as GNU ar lists them, less ocloc's alignment padding (pad_N)."""
    return [m for m in ar_listing(path) if not m.startswith("pad_")]


def member(path: Path, name: str, dest: Path) -> bytes:
    """An ar member read back with GNU ar (not aotwheel's reader)."""
    dest.mkdir(parents=True, exist_ok=True)
    return ar_extract(path, name, dest / name)


def allocated(image: bytes, device: str, work: Path) -> dict[str, int]:
    """Registers per kernel as ocloc's own tools show them: zebin's .ze_info (pyelftools + YAML),
    or the execution-environment token of ``ocloc disasm``'s PTM.txt for a legacy image."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "image.bin").write_bytes(image)
    if image[18:20] == (205).to_bytes(2, "little"):  # e_machine EM_INTELGT: zebin
        import yaml
        from elftools.elf.elffile import ELFFile

        with (work / "image.bin").open("rb") as f:
            info = yaml.safe_load(ELFFile(f).get_section_by_name(".ze_info").data())
        return {k["name"]: k["execution_env"]["grf_count"] for k in info["kernels"] if k["name"] != "Intel_Symbol_Table_Void_Program"}
    proc = subprocess.run(["ocloc", "disasm", "-file", str(work / "image.bin"), "-device", device, "-dump", str(work / "dump")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out: dict[str, int] = {}
    for block in (work / "dump" / "PTM.txt").read_text().split("Kernel #")[1:]:
        name = re.search(r"KernelName (\S+)", block)[1]  # type: ignore[index]
        env = re.search(r"Token 23\n\s*4 Size \d+\n\s*Hex ([0-9a-f ]+)", block)  # PATCH_TOKEN_EXECUTION_ENVIRONMENT
        if name != "Intel_Symbol_Table_Void_Program" and env:
            payload = [int(b, 16) for b in env[1].split()]
            out[name] = int.from_bytes(bytes(payload[80:84]), "little")  # NumGRFRequired
    return out


CASES = [("pvc", label) for label in ("add_kernel", "softmax_kernel", "matmul_kernel", "matmul_block_ptr_kernel", "large_grf_kernel")]
CASES += [("dg2", label) for label in ("add_kernel", "softmax_kernel", "matmul_kernel")]


def test_fixtures_are_triton_xpu_kernels_with_their_metadata() -> None:
    for target in ("pvc", "dg2"):
        index = json.loads((FIXTURES / target / "index.json").read_text())
        assert sorted(index) == ["add_kernel", "large_grf_kernel", "matmul_block_ptr_kernel", "matmul_kernel", "softmax_kernel"]
        for label in index:
            spv, meta = kernel(target, label)
            assert spv.read_bytes()[:4] == b"\x03\x02\x23\x07", spv
            assert meta["triton_version"] == "3.3.0b1" and meta["target"]["backend"] == "xpu"  # type: ignore[index]
            assert meta["target"]["arch"]["version"] == IP[target]  # type: ignore[index]
    assert kernel("pvc", "matmul_block_ptr_kernel")[1]["build_flags"] == LARGE  # grf_mode="large"
    assert kernel("pvc", "matmul_kernel")[1]["threads_per_warp"] == 16  # DPAS on pvc: sub-group 16
    assert kernel("dg2", "matmul_kernel")[1]["threads_per_warp"] == 32


def ocloc_argv_logger(directory: Path) -> tuple[Path, Path]:
    """An ocloc that appends its exact argv (JSON, one line a run) to a log, then runs the real one."""
    real = shutil.which("ocloc")
    assert real
    directory.mkdir(parents=True, exist_ok=True)
    log, wrapper = directory / "argv.jsonl", directory / "ocloc"
    wrapper.write_text(f"#!{sys.executable}\nimport json, os, sys\nwith open({str(log)!r}, 'a') as f:\n"
                       "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
                       f"os.execv({real!r}, [{real!r}] + sys.argv[1:])\n")
    wrapper.chmod(0o755)
    return wrapper, log


def structure(image: bytes, device: str, work: Path) -> object:
    """What ocloc 22.43 reproduces of an image it does not reproduce byte for byte: a legacy
    image's patch tokens as ``ocloc disasm`` prints them (execution environment, registers,
    arguments) without the checksums and code sizes; a zebin's section names and its ``.ze_info``."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "image.bin").write_bytes(image)
    if image[18:20] == (205).to_bytes(2, "little"):
        from elftools.elf.elffile import ELFFile

        with (work / "image.bin").open("rb") as f:
            elf = ELFFile(f)
            return [sec.name for sec in elf.iter_sections()], elf.get_section_by_name(".ze_info").data()
    proc = subprocess.run(["ocloc", "disasm", "-file", str(work / "image.bin"), "-device", device, "-dump", str(work / "dump")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    varying = ("CheckSum", "KernelHeapSize", "KernelUnpaddedSize")  # the code's size varies between identical runs too
    return [line for line in (work / "dump" / "PTM.txt").read_text().splitlines() if not any(v in line for v in varying)]


def assert_same_as_ocloc(ours: bytes, spv: Path, device: str, options: str, work: Path, fmt: list[str],
                         known: bytes | None = None) -> None:
    """``ours`` is what ocloc writes for these arguments, byte for byte. Debian's ocloc 22.43 does
    not reproduce its own output on the block-pointer kernels (identical runs differ in the
    symbol-table entry's state heap and the checksums, and in the kernel's code, now and then: three
    runs may agree and a fourth differ), so there an image that equals none of three runs must
    equal them in everything ocloc does reproduce (docs/formats.md §12). Every other kernel, and
    every kernel on a newer ocloc, must equal ocloc's image byte for byte."""
    runs = []
    for i in range(3):
        theirs = known if i == 0 and known is not None else by_hand(spv, device, options, work, fmt, f"again{i}")[0]
        if theirs == ours:
            return
        runs.append(theirs)
    varies = spv.stem == "matmul_block_ptr_kernel" and ocloc_writes_legacy_images()
    assert varies, "aotwheel's image differs from ocloc's, on a kernel and ocloc release that reproduce their output"
    for theirs in runs:
        assert structure(ours, device, work / "ours") == structure(theirs, device, work / "theirs")


@pytest.mark.parametrize("target, label", CASES)
def test_kernel_is_built_with_tritons_own_ocloc_command(target: str, label: str, tmp_path: Path) -> None:
    spv, meta = kernel(target, label)
    wrapper, log = ocloc_argv_logger(tmp_path / "bin")
    out = tmp_path / "k.ar"
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "--json", "--no-jit", "-o", str(out)],  # no -d: its target
                          cwd=tmp_path, capture_output=True, text=True, timeout=900,
                          env=build_env(tmp_path / "cache", PYTHONPATH=PYTHONPATH, AOTWHEEL_OCLOC=str(wrapper)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # built for the GPU it was specialised for: no warning
    (report,) = json.loads(proc.stdout)["kernels"]
    assert report["target_ip"] == IP[target] and report["options"] == meta["build_flags"]  # no field defaults
    expected, flags = tritons_build(spv, DEVICE[target], str(meta["build_flags"]), tmp_path / "ref", format_args(report))
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    builds = [r for r in runs if r[:1] == ["compile"] and "-file" in r]  # not `ocloc compile --help`
    # Triton's command and retry, exactly: the last build's -options is Triton's final flags text
    # (empty flags: aotwheel passes no -options, as ocloc's default is empty options)
    passed = [r[r.index("-options") + 1] if "-options" in r else "" for r in builds]
    assert passed == [str(meta["build_flags"])] + ([flags] if flags != meta["build_flags"] else [])
    assert {r[r.index("-device") + 1] for r in builds} == {DEVICE[target]}
    assert ar_members(out) == [f"64.{IP[target]}"]
    ours = member(out, f"64.{IP[target]}", tmp_path / "m")
    assert_same_as_ocloc(ours, spv, DEVICE[target], flags, tmp_path / "again", format_args(report), known=expected)
    assert allocated(ours, DEVICE[target], tmp_path / "r1") == allocated(expected, DEVICE[target], tmp_path / "r2")


def test_fat_binary_for_two_devices_equals_ocloc_and_the_other_device_is_reported(tmp_path: Path, cache: Path) -> None:
    spv, _meta = kernel("pvc", "add_kernel")
    out = tmp_path / "add.ar"
    proc = aotwheel("compile", str(spv), "-d", "pvc,acm-g10", "--json", "-o", str(out), cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    (warning,) = proc.stderr.splitlines()
    assert warning.startswith("aotwheel: warning: Triton kernel add_kernel") and "12.60.7" in warning and "acm-g10" in warning
    (report,) = json.loads(proc.stdout)["kernels"]
    assert report["mismatched_devices"] == ["acm-g10"]
    # Triton's flags for this kernel are empty: ocloc -device pvc,acm-g10 -options '' writes the same ar.
    subprocess.run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", "pvc,acm-g10", "-options", "",
                    *format_args(report), "-output", "ref"], cwd=tmp_path, capture_output=True, check=True, timeout=600)
    assert out.read_bytes() == (tmp_path / "ref").read_bytes()
    # dg2's SPIR-V for pvc: reported the same way
    dg2, _ = kernel("dg2", "add_kernel")
    proc = aotwheel("compile", str(dg2), "-d", "pvc", "-o", str(tmp_path / "dg2.ar"), cwd=tmp_path, cache=cache)
    assert proc.returncode == 0 and "specialised for 12.55.8" in proc.stderr and "not for pvc" in proc.stderr


def test_strict_target_refuses_a_mismatch_with_one_line_and_writes_nothing(tmp_path: Path, cache: Path) -> None:
    spv, _ = kernel("pvc", "softmax_kernel")
    proc = aotwheel("compile", str(spv), "-d", "acm-g10", "--strict-target", "-o", str(tmp_path / "k.ar"), cwd=tmp_path, cache=cache)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("aotwheel: error:") and "softmax_kernel" in line and "acm-g10" in line and "--strict-target" in line
    assert list(tmp_path.iterdir()) == []


def test_options_with_a_leading_dash_in_both_spellings(tmp_path: Path, cache: Path) -> None:
    """The form --help shows, `--options "-cl-fast-relaxed-math"`, and `--options=...`: the same build,
    Triton's flags then these, equal to ocloc's."""
    spv, _ = kernel("pvc", "add_kernel")
    images = []
    for n, form in enumerate((["--options", "-cl-fast-relaxed-math"], ["--options=-cl-fast-relaxed-math"])):
        out = tmp_path / f"k{n}.ar"
        proc = aotwheel("compile", str(spv), *form, "--json", "--no-jit", "-o", str(out), cwd=tmp_path, cache=cache)
        assert proc.returncode == 0, proc.stderr
        (report,) = json.loads(proc.stdout)["kernels"]
        assert report["options"] == "-cl-fast-relaxed-math"  # Triton's empty build_flags, then the option
        images.append(member(out, "64.12.60.7", tmp_path / f"m{n}"))
    assert images[0] == images[1]
    assert_same_as_ocloc(images[0], spv, "pvc", "-cl-fast-relaxed-math", tmp_path / "ref", format_args(report))
    bare = tmp_path / "bare" / "k.spv"  # a bare SPIR-V module: the field defaults, then the option
    bare.parent.mkdir()
    shutil.copyfile(spv, bare)
    proc = aotwheel("compile", str(bare), "-d", "pvc", "--options", "-cl-fast-relaxed-math", "--json", "-o", str(tmp_path / "b.ar"),
                    cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["options"].endswith(" -cl-fast-relaxed-math")


def test_grf_report_is_what_ocloc_allocated(tmp_path: Path, cache: Path) -> None:
    # grf_mode="large": build_flags pin 256 registers
    spv, meta = kernel("pvc", "matmul_block_ptr_kernel")
    proc = aotwheel("compile", str(spv), "--json", "--no-jit", "-o", str(tmp_path / "k.ar"), cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    (report,) = json.loads(proc.stdout)["kernels"]
    (dev,) = report["devices"]
    image, _ = by_hand(spv, "pvc", str(meta["build_flags"]), tmp_path / "ref", format_args(report))
    theirs = allocated(image, "pvc", tmp_path / "dump")
    assert theirs == {"matmul_block_ptr_kernel": 256}
    assert dev["kernel_registers"] == theirs and dev["registers"] == 256 and dev["grf"] == "large"
    assert len(dev["tried"]) == 1  # 256 already: no larger register file to retry with, spills or not

    # The same SPIR-V alone (not a Triton input): the field defaults' -cl-intel-enable-auto-large-GRF-mode
    # lets ocloc choose; the report says what it chose, and so does the text line.
    bare = tmp_path / "bare" / "large.spv"
    bare.parent.mkdir()
    shutil.copyfile(kernel("pvc", "large_grf_kernel")[0], bare)
    proc = aotwheel("compile", str(bare), "-d", "pvc", "--json", "-o", str(tmp_path / "bare.ar"), cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    (dev,) = report["devices"]
    image, _ = by_hand(bare, "pvc", report["options"], tmp_path / "ref-bare", format_args(report))
    theirs = allocated(image, "pvc", tmp_path / "dump-bare")
    assert dev["kernel_registers"] == theirs and dev["registers"] == max(theirs.values())
    text = aotwheel("compile", str(bare), "-d", "pvc", "-o", str(tmp_path / "bare.ar"), cwd=tmp_path, cache=cache)
    assert f"({max(theirs.values())} registers)" in text.stdout

    # --options with a leading dash, both spellings: 256 registers, reported as large
    for form in (["--options", LARGE], [f"--options={LARGE}"]):
        proc = aotwheel("compile", str(bare), "-d", "pvc", *form, "--json", "-o", str(tmp_path / "l.ar"), cwd=tmp_path, cache=cache)
        assert proc.returncode == 0, proc.stderr
        (dev,) = json.loads(proc.stdout)["devices"]
        assert dev["registers"] == 256 and dev["grf"] == "large" and json.loads(proc.stdout)["options"].endswith(LARGE)


def test_grf_auto_rebuilds_only_where_ocloc_spilled_and_more_registers_are_possible(tmp_path: Path, cache: Path) -> None:
    spv, meta = kernel("pvc", "large_grf_kernel")
    assert meta["build_flags"] == ""  # Triton's default grf_mode: no GRF option
    proc = aotwheel("compile", str(spv), "--json", "--no-jit", "-o", str(tmp_path / "k.ar"), cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    (report,) = json.loads(proc.stdout)["kernels"]
    (dev,) = report["devices"]
    first, log = by_hand(spv, "pvc", "", tmp_path / "ref", format_args(report))
    if "spilled" in log:  # ocloc 26.27: "compiled SIMD16 allocated 128 regs and spilled around 98"
        large, _ = by_hand(spv, "pvc", f" {LARGE}", tmp_path / "ref", format_args(report), "large")  # Triton appends " " + option
        assert [t["added_option"] for t in dev["tried"]] == ["", LARGE] and dev["tried"][1]["kept"]
        assert dev["tried"][0]["registers"] == max(allocated(first, "pvc", tmp_path / "d1").values())
        assert dev["registers"] == max(allocated(large, "pvc", tmp_path / "d2").values()) == 256
        assert_same_as_ocloc(member(tmp_path / "k.ar", "64.12.60.7", tmp_path / "m"), spv, "pvc", f" {LARGE}", tmp_path / "a", format_args(report))
    else:  # ocloc 22.43 reports no spill for it: nothing to retry
        assert [t["added_option"] for t in dev["tried"]] == [""] and dev["tried"][0]["spills"] == []
        assert_same_as_ocloc(member(tmp_path / "k.ar", "64.12.60.7", tmp_path / "m"), spv, "pvc", "", tmp_path / "a", format_args(report))

    # GRF pinned small by the options: spills or not, never rebuilt with 256
    mm, _ = kernel("pvc", "matmul_kernel")
    proc = aotwheel("compile", str(mm), "--options=-cl-intel-128-GRF-per-thread", "--json", "--no-jit", "-o", str(tmp_path / "s.ar"),
                    cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    (dev,) = json.loads(proc.stdout)["kernels"][0]["devices"]
    _, log = by_hand(mm, "pvc", "-cl-intel-128-GRF-per-thread", tmp_path / "ref-small", format_args(json.loads(proc.stdout)["kernels"][0]))
    assert len(dev["tried"]) == 1 and dev["registers"] == 128
    assert ("spilled" in log) == bool(dev["spills"]) == ("pin -cl-intel-128-GRF-per-thread" in dev["note"])


def test_a_folder_of_kernels_gives_one_fat_binary_per_kernel_and_a_manifest(tmp_path: Path, cache: Path) -> None:
    out = tmp_path / "aot"
    proc = aotwheel("compile", str(FIXTURES / "pvc"), "-o", str(out), cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    index = json.loads((FIXTURES / "pvc" / "index.json").read_text())
    manifest = json.loads((out / "aotwheel-triton.json").read_text())
    assert sorted(k["fatbinary"] for k in manifest["kernels"]) == sorted(f"{e}.ar" for e in index.values())
    for entry in index.values():
        fat = out / f"{entry}.ar"
        assert ar_members(fat) == ["64.12.60.7", "generic_ir"]
        assert (out / f"{entry}.json").read_bytes() == (FIXTURES / "pvc" / f"{entry}.json").read_bytes()
    # the same folder again: every device a cache hit, the output replaced whole
    again = aotwheel("compile", str(FIXTURES / "pvc"), "-o", str(out), cwd=tmp_path, cache=cache)
    assert again.returncode == 0 and again.stdout.count("cache hit") == len(index) and "compiled" not in again.stdout


def test_python_api_for_a_packaging_script(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import aotwheel

    monkeypatch.setenv("AOTWHEEL_CACHE_DIR", str(cache))
    paths = [kernel("pvc", "add_kernel")[0], kernel("dg2", "softmax_kernel")[0]]
    builds = aotwheel.compile_triton(paths, output=str(tmp_path / "aot"))
    assert [(b.kernel.name, b.kernel.target_ip) for b in builds] == [("add_kernel", "12.60.7"), ("softmax_kernel", "12.55.8")]
    cli = aotwheel_cli_fat(paths[1], tmp_path, cache)
    assert builds[1].result.fatbinary == cli
    manifest = json.loads((tmp_path / "aot" / "aotwheel-triton.json").read_text())
    assert [k["name"] for k in manifest["kernels"]] == ["add_kernel", "softmax_kernel"]


def aotwheel_cli_fat(spv: Path, tmp_path: Path, cache: Path) -> bytes:
    proc = aotwheel("compile", str(spv), "-o", str(tmp_path / "cli.ar"), cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    return (tmp_path / "cli.ar").read_bytes()


def test_inspect_of_the_fat_binary_counts_members_and_kernels(tmp_path: Path, cache: Path) -> None:
    spv, _ = kernel("pvc", "add_kernel")
    out = tmp_path / "add.ar"
    assert aotwheel("compile", str(spv), "-d", "pvc,acm-g10", "-o", str(out), cwd=tmp_path, cache=cache).returncode == 0
    proc = aotwheel("inspect", str(out), cwd=tmp_path, cache=cache)
    assert proc.returncode == 0, proc.stderr
    members = ar_members(out)  # GNU ar: 64.12.60.7, 64.12.55.8, generic_ir (padding is no member the summary counts)
    lines = proc.stdout.splitlines()
    assert lines[1] == f"  {len(members)} archive members: 2 with native code, 1 IR for JIT (SPIR-V)"
    assert lines[-1].endswith("· 1 distinct kernel function")  # Triton writes one kernel per module


@pytest.mark.parametrize("case", ["empty folder", "not json", "no spv beside", "cuda kernel", "dir format for a folder"])
def test_bad_triton_input_is_one_line_exit_2_nothing_written(case: str, tmp_path: Path, cache: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    spv, meta = kernel("pvc", "add_kernel")
    args = [str(src)]
    if case == "not json":
        (src / "add_kernel.json").write_text("{not json")
        shutil.copyfile(spv, src / "add_kernel.spv")
    elif case == "no spv beside":
        (src / "add_kernel.json").write_text(json.dumps(meta))
        args = [str(src / "add_kernel.json")]
    elif case == "cuda kernel":
        (src / "add_kernel.json").write_text(json.dumps({**meta, "target": {"backend": "cuda", "arch": 90, "warp_size": 32}}))
        shutil.copyfile(spv, src / "add_kernel.spv")
    elif case == "dir format for a folder":
        shutil.copytree(spv.parent, src / spv.parent.name)
        args += ["--format", "dir"]
    proc = aotwheel("compile", *args, "-o", str(tmp_path / "out"), cwd=tmp_path, cache=cache)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("aotwheel: error:")
    assert not (tmp_path / "out").exists()
