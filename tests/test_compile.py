"""``aotwheel compile`` / ``aotwheel.compile_spirv`` against Debian's real ocloc on real SPIR-V
(clang-15 + llvm-spirv-15): members equal ``ocloc compile -device a,b``'s, the device-code cache
serves a second run, ``--grf auto`` reacts to ocloc's own spill warnings, and every bad input is
one line, exit 2, nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from _build_util import PYTHONPATH, REPO, ar_extract, ar_members, build_env, compile_spirv, logged_runs, ocloc_logger, require, run
from conftest import CLANG, LLVM_SPIRV, ocloc_formats, ocloc_output, ocloc_zebin_args, unbuildable_devices

KERNELS = REPO / "csrc" / "kernels"

# Enough live values that IGC cannot keep them in 128 registers: ocloc 22.43 warns
# "kernel spill  compiled SIMD32 allocated 128 regs and spilled around 248" for pvc, and the
# 256-GRF build of the same kernel does not spill.
SPILLING_KERNEL = """
__kernel void spill(__global const float *in, __global float *out, int n) {
    int gid = get_global_id(0);
    float acc[96];
    #pragma unroll
    for (int i = 0; i < 96; ++i) acc[i] = in[(gid * 7 + i * 13) % n];
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
        #pragma unroll
        for (int i = 0; i < 96; ++i) acc[i] = acc[i] * acc[(i * 31 + r) % 96] + acc[(i + 1) % 96];
    }
    float s = 0.0f;
    #pragma unroll
    for (int i = 0; i < 96; ++i) s += acc[i] * (float)i;
    out[gid] = s;
}
"""


@pytest.fixture(scope="module")
def spv(tmp_path_factory) -> Path:
    require(CLANG, LLVM_SPIRV, "ocloc")
    out = tmp_path_factory.mktemp("spv") / "elementwise.spv"
    compile_spirv(KERNELS / "elementwise.cl", out)
    return out


@pytest.fixture(scope="module")
def spilling_spv(tmp_path_factory) -> Path:
    require(CLANG, LLVM_SPIRV, "ocloc")
    d = tmp_path_factory.mktemp("spill")
    (d / "spill.cl").write_text(SPILLING_KERNEL)
    compile_spirv(d / "spill.cl", d / "spill.spv")
    return d / "spill.spv"


# What IPEX (cmake/gpu/SYCL.cmake, one -options string) and torch-xpu-ops pass to ocloc on every
# AOT build, written from their sources (docs/formats.md quotes the lines): aotwheel compile passes
# them by default, so a byte-for-byte reference run of ocloc gets them too.
FIELD = "-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels -cl-intel-greater-than-4GB-buffer-required"


def aotwheel(*args: str, cwd: Path, cache: Path, ocloc: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = build_env(cache, PYTHONPATH=PYTHONPATH)
    if ocloc is not None:
        env["AOTWHEEL_OCLOC"] = str(ocloc)
    return subprocess.run([sys.executable, "-m", "aotwheel", *args], cwd=cwd, env=env, capture_output=True, text=True)


def ocloc_fat(spv: Path, devices: str, cwd: Path, *extra: str) -> Path:
    # A multi-device compile writes the ar named by -output into the cwd.
    # aotwheel writes zebin on every ocloc that offers --format zebin (22.43's own default is legacy).
    fmt = [] if "--format" in extra else ocloc_zebin_args()
    run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", devices, "-output", "ref", *fmt, *extra], cwd=cwd)
    return cwd / "ref"


def members(path: Path, dest: Path) -> dict[str, bytes]:
    """Every non-padding member, read back with GNU ar (not with aotwheel's reader)."""
    dest.mkdir(exist_ok=True)
    return {m: ar_extract(path, m, dest / m) for m in ar_members(path) if not m.startswith("pad_")}


def test_fat_binary_equals_ocloc_multi_device_member_by_member(spv, tmp_path):
    out = tmp_path / "k.ar"
    proc = aotwheel("compile", str(spv), "-d", "pvc,acm-g10,tgllp", "-o", str(out), cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    ref = ocloc_fat(spv, "pvc,acm-g10,tgllp", tmp_path, "-options", FIELD)
    ours, theirs = members(out, tmp_path / "ours"), members(ref, tmp_path / "theirs")
    assert list(ours) == list(theirs) == ["64.12.60.7", "64.12.55.8", "64.12.0.0", "generic_ir"]
    for name in theirs:
        assert ours[name] == theirs[name], name
    assert out.read_bytes() == ref.read_bytes()


def test_options_and_no_jit_match_ocloc_with_the_same_flags(spv, tmp_path):
    out = tmp_path / "k.ar"
    proc = aotwheel("compile", str(spv), "-d", "acm-g11,pvc", "--no-jit", "--options", "-cl-fast-relaxed-math -cl-mad-enable",
                    "-o", str(out), cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    ref = ocloc_fat(spv, "acm-g11,pvc", tmp_path, "-exclude_ir", "-options", f"{FIELD} -cl-fast-relaxed-math -cl-mad-enable")
    ours, theirs = members(out, tmp_path / "ours"), members(ref, tmp_path / "theirs")
    assert "generic_ir" not in ours and list(ours) == list(theirs)
    assert ours == theirs
    # and the options did change the code (else this test could not tell them apart)
    (tmp_path / "plain").mkdir()
    plain = ocloc_fat(spv, "acm-g11,pvc", tmp_path / "plain", "-exclude_ir", "-options", FIELD)
    assert members(plain, tmp_path / "plain_m") != theirs


def test_python_api_takes_a_devlist_and_aliases(spv, tmp_path, monkeypatch):
    from aotwheel import compile_spirv, resolve

    monkeypatch.setenv("AOTWHEEL_CACHE_DIR", str(tmp_path / "c"))
    by_alias = compile_spirv(spv.read_bytes(), "ats-m150, xe-hpc")
    by_devlist = compile_spirv(spv.read_bytes(), resolve("acm-g10,pvc"))
    ref = ocloc_fat(spv, "acm-g10,pvc", tmp_path, "-options", FIELD)
    assert by_alias == by_devlist == ref.read_bytes()
    # field_defaults=False: exactly what a plain `ocloc -device a,b` writes.
    (tmp_path / "plain").mkdir()
    plain = ocloc_fat(spv, "acm-g10,pvc", tmp_path / "plain")
    assert compile_spirv(spv.read_bytes(), "acm-g10,pvc", field_defaults=False) == plain.read_bytes() != ref.read_bytes()


def test_second_run_is_served_by_the_cache_without_ocloc(spv, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    cache = tmp_path / "cache"
    first = aotwheel("compile", str(spv), "-d", "pvc,acm-g10", "-o", str(tmp_path / "a.ar"), "--json", cwd=tmp_path, cache=cache, ocloc=wrapper)
    assert first.returncode == 0, first.stderr
    builds = [r for r in logged_runs(log) if "-spirv_input" in r]  # not the --help/query tool probes
    assert sorted(r.split(" -device ")[1].split()[0] for r in builds) == ["acm-g10", "pvc"]  # one job per device
    assert {d["cache_hit"] for d in json.loads(first.stdout)["devices"]} == {False}
    second = aotwheel("compile", str(spv), "-d", "pvc,acm-g10", "-o", str(tmp_path / "b.ar"), "--json", cwd=tmp_path, cache=cache, ocloc=wrapper)
    assert second.returncode == 0, second.stderr
    assert len([r for r in logged_runs(log) if "-spirv_input" in r]) == 2  # no new build
    assert {d["cache_hit"] for d in json.loads(second.stdout)["devices"]} == {True}
    assert (tmp_path / "a.ar").read_bytes() == (tmp_path / "b.ar").read_bytes()


def test_format_dir_writes_one_native_binary_per_device(spv, tmp_path):
    out = tmp_path / "bins"
    proc = aotwheel("compile", str(spv), "-d", "pvc,acm-g10", "--format", "dir", "-o", str(out), cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["acm-g10.bin", "generic_ir.spv", "pvc.bin"]
    assert (out / "generic_ir.spv").read_bytes() == spv.read_bytes()
    for device in ("pvc", "acm-g10"):
        single = tmp_path / f"single-{device}"
        run(["ocloc", "compile", "-file", str(spv), "-spirv_input", "-device", device, "-output", "x",
             "-out_dir", str(single), "-output_no_suffix", "-exclude_ir", *ocloc_zebin_args(), "-options", FIELD])
        assert (out / f"{device}.bin").read_bytes() == ocloc_output(single, "x").read_bytes()


def test_grf_auto_rebuilds_the_spilling_device_with_large_grf(spilling_spv, tmp_path):
    # What ocloc itself says about this kernel, straight from ocloc:
    small = subprocess.run(["ocloc", "compile", "-file", str(spilling_spv), "-spirv_input", "-device", "pvc", "-output", "s",
                            "-out_dir", str(tmp_path), "-output_no_suffix", "-exclude_ir", *ocloc_zebin_args()], capture_output=True, text=True)
    assert small.returncode == 0 and "spilled" in small.stdout + small.stderr
    large = subprocess.run(["ocloc", "compile", "-file", str(spilling_spv), "-spirv_input", "-device", "pvc", "-output", "l",
                            "-out_dir", str(tmp_path), "-output_no_suffix", "-exclude_ir", *ocloc_zebin_args(), "-options",
                            "-cl-intel-256-GRF-per-thread"],
                           capture_output=True, text=True)
    assert large.returncode == 0 and "spilled" not in large.stdout + large.stderr

    out = tmp_path / "auto.ar"
    # --no-field-defaults: the field's -cl-intel-enable-auto-large-GRF-mode avoids these spills
    # itself (test_field_defaults_pick_large_grf_for_the_spilling_kernel), so --grf is tested alone.
    proc = aotwheel("compile", str(spilling_spv), "-d", "pvc", "--grf", "auto", "--json", "--no-field-defaults", "-o", str(out),
                    cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    (dev,) = json.loads(proc.stdout)["devices"]
    assert dev["grf"] == "large" and dev["spills"] == []
    assert dev["retried_after_spills"] and dev["retried_after_spills"][0]["kernel"] == "spill"
    assert members(out, tmp_path / "m")["64.12.60.7"] == ocloc_output(tmp_path, "l").read_bytes()
    # The text report says so too, also when the cache serves both builds (the log is cached).
    again = aotwheel("compile", str(spilling_spv), "-d", "pvc", "--grf", "auto", "--no-field-defaults", "-o", str(out),
                     cwd=tmp_path, cache=tmp_path / "c")
    assert again.returncode == 0 and "then -cl-intel-256-GRF-per-thread: 256 registers, no spills (kept)" in again.stdout
    assert "cache hit" in again.stdout
    # --grf small keeps the spilling build and reports its spills.
    kept = aotwheel("compile", str(spilling_spv), "-d", "pvc", "--json", "--no-field-defaults", "-o", str(out),
                    cwd=tmp_path, cache=tmp_path / "c")
    (dev,) = json.loads(kept.stdout)["devices"]
    assert dev["grf"] == "small" and dev["spills"] and not dev["retried_after_spills"]
    assert members(out, tmp_path / "m2")["64.12.60.7"] == ocloc_output(tmp_path, "s").read_bytes()


def test_field_defaults_pick_large_grf_for_the_spilling_kernel(spilling_spv, tmp_path):
    # ocloc 22.43 itself, with the field's options: no spill warning (auto large GRF chose 256
    # registers), where the plain build above spills; aotwheel compile reports the same.
    ref = subprocess.run(["ocloc", "compile", "-file", str(spilling_spv), "-spirv_input", "-device", "pvc", "-output", "f",
                          "-out_dir", str(tmp_path), "-output_no_suffix", "-exclude_ir", *ocloc_zebin_args(), "-options", FIELD],
                         capture_output=True, text=True)
    assert ref.returncode == 0 and "spilled" not in ref.stdout + ref.stderr
    out = tmp_path / "k.ar"
    proc = aotwheel("compile", str(spilling_spv), "-d", "pvc", "--json", "-o", str(out), cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    (dev,) = json.loads(proc.stdout)["devices"]
    assert dev["spills"] == [] and json.loads(proc.stdout)["options"] == FIELD
    assert members(out, tmp_path / "m")["64.12.60.7"] == ocloc_output(tmp_path, "f").read_bytes()


def test_grf_auto_leaves_a_kernel_without_spills_alone(spv, tmp_path):
    proc = aotwheel("compile", str(spv), "-d", "pvc", "--grf", "auto", "--json", "-o", str(tmp_path / "k.ar"), cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    (dev,) = json.loads(proc.stdout)["devices"]
    assert dev["grf"] == "small" and not dev["retried_after_spills"]


@pytest.mark.parametrize("case, devlist, content", [
    ("not spir-v", "pvc", b"\x7fELF" + bytes(60)),
    ("truncated spir-v", "pvc", b"\x03\x02\x23\x07\x00\x00"),
    ("unknown device", "pvcc", None),
    ("this ocloc cannot build it", "<too new>", None),  # Debian 12's 22.43: bmg-g21
    ("nvidia target", "pvc,sm_90", None),
    ("separators only", " , ", None),
])
def test_bad_input_is_one_line_exit_2_nothing_written(spv, tmp_path, case, devlist, content):
    if devlist == "<too new>":
        missing = unbuildable_devices()
        if not missing:
            pytest.skip("the installed ocloc builds every catalog device with a known first release")
        devlist = missing[0]
    src = spv
    if content is not None:
        src = tmp_path / "bad.spv"
        src.write_bytes(content)
    for fmt, out in (("fatbin", tmp_path / "out.ar"), ("dir", tmp_path / "outdir")):
        proc = aotwheel("compile", str(src), "-d", devlist, "--format", fmt, "-o", str(out), cwd=tmp_path, cache=tmp_path / "c")
        assert proc.returncode == 2, (case, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("aotwheel: error: "), (case, proc.stderr)
        assert not out.exists(), case


def _elf_kind(image: bytes) -> str:
    """zebin (e_machine 205, EM_INTELGT) or legacy (e_type 0xFF04), read from the ELF header here
    (docs/formats.md §3), not through aotwheel."""
    e_type, e_machine = int.from_bytes(image[16:18], "little"), int.from_bytes(image[18:20], "little")
    return "zebin" if e_machine == 205 else "legacy" if e_type == 0xFF04 else f"e_type {e_type:#x}"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_legacy_images_only_when_asked_and_only_where_ocloc_writes_them(spv, tmp_path, how):
    default = tmp_path / "z.ar"
    assert aotwheel("compile", str(spv), "-d", "pvc,acm-g10", "-o", str(default), cwd=tmp_path, cache=tmp_path / "c").returncode == 0
    assert {_elf_kind(data) for name, data in members(default, tmp_path / "z").items() if name != "generic_ir"} == {"zebin"}
    out = tmp_path / "l.ar"
    args, env = (["--legacy-images"], {}) if how == "flag" else ([], {"USE_AOT_IMAGE_FORMAT": "legacy"})
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", "pvc,acm-g10", "-o", str(out), *args], cwd=tmp_path,
                          env={**build_env(tmp_path / "c", PYTHONPATH=PYTHONPATH), **env}, capture_output=True, text=True)
    if "patchtokens" in ocloc_formats():  # Debian 12's ocloc 22.43: --format patchtokens, also its own default
        assert proc.returncode == 0, proc.stderr
        ours = members(out, tmp_path / "ours")
        assert {_elf_kind(data) for name, data in ours.items() if name != "generic_ir"} == {"legacy"}
        ref = tmp_path / "ref"
        ref.mkdir()
        assert ours == members(ocloc_fat(spv, "pvc,acm-g10", ref, "--format", "patchtokens", "-options", FIELD), tmp_path / "theirs")
    else:  # ocloc 26.x writes zebin only: one line saying so, nothing written
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        asked = "--legacy-images" if how == "flag" else "USE_AOT_IMAGE_FORMAT=legacy"
        assert len(lines) == 1 and "writes zebin images only" in lines[0] and lines[0].startswith(f"aotwheel: error: {asked}:"), proc.stderr
        assert not out.exists()


def test_an_unknown_image_format_is_one_line(spv, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", "pvc", "-o", str(tmp_path / "x.ar")], cwd=tmp_path,
                          env={**build_env(tmp_path / "c", PYTHONPATH=PYTHONPATH), "USE_AOT_IMAGE_FORMAT": "patchtokens"},
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "aotwheel: error: USE_AOT_IMAGE_FORMAT='patchtokens' is not an image format; use zebin (the default) or legacy"]
    assert not (tmp_path / "x.ar").exists()


def test_fp64_poisoned_kernels_are_named_per_device(tmp_path):
    require(CLANG, LLVM_SPIRV, "ocloc")
    (tmp_path / "k.cl").write_text("__kernel void axpy64(double a, __global double *y) { y[get_global_id(0)] *= a; }\n"
                                   "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }\n")
    compile_spirv(tmp_path / "k.cl", tmp_path / "k.spv")
    for _ in range(2):  # built, then from the cache: the report reads the image itself
        proc = aotwheel("compile", str(tmp_path / "k.spv"), "-d", "pvc,ats-m150", "--json", "-o", str(tmp_path / "k.ar"), cwd=tmp_path,
                        cache=tmp_path / "c")
        assert proc.returncode == 0, proc.stderr
        assert {d["device"]: d["poisoned"] for d in json.loads(proc.stdout)["devices"]} == {"pvc": [], "acm-g10": ["axpy64"]}
    text = aotwheel("compile", str(tmp_path / "k.spv"), "-d", "ats-m150", "-o", str(tmp_path / "k.ar"), cwd=tmp_path, cache=tmp_path / "c")
    assert "poisoned (return without computing): axpy64" in text.stdout
    # What ocloc itself said while building it for acm-g10 (its log, not aotwheel's reading):
    ref = subprocess.run(["ocloc", "compile", "-file", str(tmp_path / "k.spv"), "-spirv_input", "-device", "acm-g10", "-output", "r",
                          "-out_dir", str(tmp_path / "r"), "-output_no_suffix", *ocloc_zebin_args(), "-options", FIELD],
                         capture_output=True, text=True)
    assert "Removing unsupported FP64 function: 'axpy64'" in ref.stdout + ref.stderr


def test_spirv_that_ocloc_rejects_is_one_line_naming_the_device(tmp_path):
    require("ocloc")
    # A valid SPIR-V header followed by garbage words: the magic check passes, ocloc fails.
    bad = tmp_path / "garbage.spv"
    bad.write_bytes(b"\x03\x02\x23\x07" + b"\x00\x00\x01\x00" + bytes(12) + b"\xff" * 64)
    proc = aotwheel("compile", str(bad), "-d", "pvc", "-o", str(tmp_path / "o.ar"), cwd=tmp_path, cache=tmp_path / "c")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pvc" in lines[0] and "ocloc failed" in lines[0], proc.stderr
    assert not (tmp_path / "o.ar").exists()


def test_jobs_cap_runs_devices_one_at_a_time(spv, tmp_path):
    # Each ocloc run logs its start and end; with -j 1 (or AOTWHEEL_OCLOC_JOBS=1) no two overlap.
    import os
    import shutil
    import stat

    real = shutil.which("ocloc")
    log = tmp_path / "spans.log"
    wrapper = tmp_path / "ocloc"
    wrapper.write_text(f"#!{sys.executable}\nimport subprocess, sys, time\n"
                       f"t0 = time.monotonic(); rc = subprocess.call([{real!r}] + sys.argv[1:])\n"
                       f"open({str(log)!r}, 'a').write(f'{{t0}} {{time.monotonic()}} {{\" \".join(sys.argv[1:])}}\\n')\n"
                       "sys.exit(rc)\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    for args, env_jobs in ((["-j", "1"], None), ([], "1")):
        log.unlink(missing_ok=True)
        env_extra = {"AOTWHEEL_OCLOC_JOBS": env_jobs} if env_jobs else {}
        proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", "pvc,acm-g10,tgllp", *args,
                               "-o", str(tmp_path / "k.ar")], cwd=tmp_path, capture_output=True, text=True,
                              env={**build_env(tmp_path / "off", PYTHONPATH=PYTHONPATH, AOTWHEEL_OCLOC=str(wrapper)),
                                   "AOTWHEEL_CACHE_DIR": "off", **env_extra})
        assert proc.returncode == 0, proc.stderr
        spans = sorted(tuple(map(float, l.split()[:2])) for l in log.read_text().splitlines() if "-spirv_input" in l)
        assert len(spans) == 3
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    bad = aotwheel("compile", str(spv), "-d", "pvc", "-o", str(tmp_path / "x.ar"), cwd=tmp_path, cache=tmp_path / "c")
    assert bad.returncode == 0
    env = build_env(tmp_path / "c", PYTHONPATH=PYTHONPATH, AOTWHEEL_OCLOC_JOBS="many")
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "compile", str(spv), "-d", "pvc", "-o", str(tmp_path / "y.ar")],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 2 and "AOTWHEEL_OCLOC_JOBS" in proc.stderr and not (tmp_path / "y.ar").exists()
    assert os.path.exists(tmp_path / "x.ar")
