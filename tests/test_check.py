"""aotwheel.check / ensure, JITWarning and the AOTWHEEL_JIT policy, `aotwheel check` on Intel's
real CPU OpenCL runtime, and the generated <pkg>/_aot.py hook."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

from _check_util import (
    ACM_G10_MEMBER,
    CACHE,
    PVC_MEMBER,
    TINY_KERNEL,
    ar_members,
    child_env,
    fat_binary,
    opencl_cpu_env,
    run_cli,
    run_python,
    single_binary,
    spirv,
)


def test_jit_warning_once_per_device_and_binary(fresh):
    import aotwheel

    fat = fat_binary("pvc,acm-g10")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = aotwheel.check(fat, devices="acm-g11")
        second = aotwheel.check(fat, devices="acm-g11")
    assert [v.verdict for v in first] == ["jit"] and [v.verdict for v in second] == ["jit"]
    jit = [w for w in caught if issubclass(w.category, aotwheel.JITWarning)]
    assert len(jit) == 1
    text = str(jit[0].message)
    # Actionable: the device, what is embedded, and the devlist that would cover it.
    assert "acm-g11" in text and "pvc, acm-g10" in text and "USE_AOT_DEVLIST=pvc,acm-g10,acm-g11" in text
    assert issubclass(aotwheel.JITWarning, RuntimeWarning)


def test_rebuild_advice_says_when_a_target_needs_a_newer_ocloc(fresh):
    import aotwheel

    fat = fat_binary("pvc,acm-g10")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        aotwheel.check(fat, devices="bmg-g21,acm-g11")
    by_device = {("bmg-g21" in str(w.message)): str(w.message) for w in caught if issubclass(w.category, aotwheel.JITWarning)}
    # docs/formats.md §10: Battlemage is first built by ocloc 24.31 (Debian 12's 22.43 cannot); Alchemist is not.
    assert "USE_AOT_DEVLIST=pvc,acm-g10,bmg-g21 (bmg-g21 needs ocloc 24.31 or newer to build" in by_device[True]
    assert "USE_AOT_DEVLIST=pvc,acm-g10,acm-g11 to ship" in by_device[False] and "needs ocloc" not in by_device[False]


def test_native_device_gives_no_warning(fresh):
    import aotwheel

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (v,) = aotwheel.check(fat_binary("pvc,acm-g10"), devices="pvc")
    assert (v.verdict, v.image) == ("native", PVC_MEMBER)
    assert not [w for w in caught if issubclass(w.category, aotwheel.JITWarning)]


def test_policy_error_raises_every_time_and_ignore_silences(fresh, monkeypatch):
    import aotwheel
    from aotwheel.runtime import JITError

    fat = fat_binary("pvc,acm-g10")
    monkeypatch.setenv("AOTWHEEL_JIT", "error")
    for _ in range(2):
        with pytest.raises(JITError, match="acm-g11") as exc:
            aotwheel.check(fat, devices="acm-g11")
        # With the error policy already set, the advice is how to allow the JIT, not to set it again.
        assert str(exc.value).endswith("AOTWHEEL_JIT=error is set: set AOTWHEEL_JIT=warn (or ignore) to allow the JIT")
        assert "AOTWHEEL_JIT=error to fail" not in str(exc.value)
    monkeypatch.setenv("AOTWHEEL_JIT", "ignore")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert aotwheel.check(fat, devices="acm-g11")[0].verdict == "jit"
    assert not caught
    monkeypatch.setenv("AOTWHEEL_JIT", "loud")
    with pytest.raises(aotwheel.AotwheelError, match="warn, error, ignore"):
        aotwheel.check(fat, devices="acm-g11")


def test_unsupported_raises_only_on_use(fresh):
    import aotwheel
    from aotwheel.runtime import UnsupportedDeviceError, ensure

    only_pvc = single_binary("pvc")
    verdicts = aotwheel.check(only_pvc, devices="bmg-g21,pvc")  # checking never raises
    assert [(v.device, v.verdict) for v in verdicts] == [("bmg-g21", "unsupported"), ("pvc", "native")]
    assert ensure(only_pvc, "pvc", devices="bmg-g21,pvc")
    with pytest.raises(UnsupportedDeviceError, match="USE_AOT_DEVLIST=pvc,bmg-g21"):
        ensure(only_pvc, "bmg-g21", devices="bmg-g21,pvc")
    with pytest.raises(UnsupportedDeviceError):
        ensure(only_pvc, devices="bmg-g21")  # no device here can run it


def test_check_accepts_module_name_and_reports_missing_binary(fresh):
    import aotwheel

    with pytest.raises(aotwheel.AotwheelError, match="no such file"):
        aotwheel.check(str(CACHE / "does-not-exist.so"), devices="pvc")


# --- the command line on the real CPU runtime ------------------------------------------------

def test_cli_check_lists_cpu_as_jit_and_warns_once():
    """A SPIR-V (spir64) binary: the CPU runtime builds it at first use (issue 14: the runtime gives
    a CPU spir64 images, never a GPU fat binary's generic_ir)."""
    env = opencl_cpu_env()
    spv = spirv(TINY_KERNEL, "tiny")
    proc = run_cli(["check", str(spv), "--json"], env)
    assert proc.returncode == 0, proc.stderr
    verdicts = json.loads(proc.stdout)["verdicts"]
    cpus = [v for v in verdicts if v["kind"] == "cpu"]
    assert cpus and all(v["verdict"] == "jit" and v["image"] == "spirv" and v["rule"] == "cpu-ir" for v in cpus)
    # One clean line per warning (issue 12): no Python warning machinery (category, file:line).
    lines = proc.stderr.splitlines()
    assert len(lines) == len(cpus) and all(line.startswith("aotwheel: warning: ") for line in lines)
    assert "JITWarning" not in proc.stderr and ".py:" not in proc.stderr


def test_cli_check_gpu_fat_binary_is_unsupported_on_the_cpu_runtime():
    """Only spir64_gen code (a GPU fat binary with generic_ir): nothing the runtime gives a CPU."""
    env = opencl_cpu_env()
    proc = run_cli(["check", str(fat_binary("pvc,acm-g10")), "--json"], env)
    assert proc.returncode == 1, proc.stderr
    cpus = [v for v in json.loads(proc.stdout)["verdicts"] if v["kind"] == "cpu"]
    assert cpus and all((v["verdict"], v["rule"]) == ("unsupported", "cpu-no-image") for v in cpus)
    assert "JITWarning" not in proc.stderr


def test_cli_check_policy_error_and_ignore_on_cpu_runtime():
    env = opencl_cpu_env()
    spv = str(spirv(TINY_KERNEL, "tiny"))
    proc = run_cli(["check", spv], {**env, "AOTWHEEL_JIT": "error"})
    # Exit 1: a verdict the policy rejects (2 is for bad input; issue 12's documented exit codes).
    assert proc.returncode == 1 and proc.stderr.startswith("aotwheel: error: ") and proc.stderr.count("\n") == 1
    proc = run_cli(["check", spv], {**env, "AOTWHEEL_JIT": "ignore"})
    assert proc.returncode == 0 and "JITWarning" not in proc.stderr and ": jit spirv" in proc.stdout


@pytest.mark.parametrize("device, verdict, rule, rc", [
    ("pvc", "native", "exact-ip", 0),
    ("acm-g11", "jit", "ir", 0),
])
def test_cli_check_device_override(device, verdict, rule, rc):
    proc = run_cli(["check", str(fat_binary("pvc,acm-g10")), "--json", "--jit", "ignore"], child_env(AOTWHEEL_DEVICE=device))
    assert proc.returncode == rc, proc.stderr
    (v,) = json.loads(proc.stdout)["verdicts"]
    assert (v["verdict"], v["rule"]) == (verdict, rule)


def test_cli_check_xe2_hpg_on_pvc_only_no_ir_is_unsupported_exit_1():
    proc = run_cli(["check", str(single_binary("pvc")), "--device", "xe2-hpg"], child_env())
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(": unsupported" in line and "[rule no-match]" in line for line in lines)


def _damaged(tmp_path):
    """Files no inspection can succeed on: missing, junk bytes, and a sparse 8 GiB file behind an
    ELF magic (reading it would take long; failing on the device must not read it at all)."""
    junk = tmp_path / "junk.so"
    junk.write_bytes(b"not a binary at all")
    huge = tmp_path / "huge.so"
    with open(huge, "wb") as f:
        f.write(b"\x7fELF\x02\x01\x01")
        f.truncate(8 << 30)
    return [str(tmp_path / "missing.so"), str(junk), str(huge)]


def test_cli_check_device_typo_fails_before_the_binary_is_read(tmp_path):
    """A typo'd --device is the error, whatever the binary: one line that names the flag (not
    the library's keyword `devices`), exit 2 (bad input)."""
    for binary in _damaged(tmp_path):
        proc = run_cli(["check", binary, "--device", "pvcc"], child_env())
        assert proc.returncode == 2, (binary, proc.stderr)
        assert proc.stderr.splitlines() == [proc.stderr.strip()], proc.stderr  # one line
        assert proc.stderr.startswith("aotwheel: error: --device: unknown device 'pvcc'"), proc.stderr
        assert "pvc" in proc.stderr.split("did you mean", 1)[1] and "devices:" not in proc.stderr
        assert proc.stdout == ""
    # the same for AOTWHEEL_DEVICE, named as such, and for another vendor's grammar
    proc = run_cli(["check", str(tmp_path / "missing.so")], child_env(AOTWHEEL_DEVICE="sm90"))
    assert proc.returncode == 2 and proc.stderr.startswith("aotwheel: error: AOTWHEEL_DEVICE: 'sm90'"), proc.stderr
    proc = run_cli(["check", str(tmp_path / "junk.so"), "--device", "sm_9o"], child_env())
    assert proc.returncode == 2 and proc.stderr.startswith("aotwheel: error: --device: ") and "sm_90" in proc.stderr


def test_check_parses_devices_before_reading_the_binary(fresh, tmp_path):
    import aotwheel

    for binary in _damaged(tmp_path):
        with pytest.raises(aotwheel.DevlistError, match="^devices: unknown device 'pvcc'"):
            aotwheel.check(binary, devices="pvcc")


# --- the generated hook ----------------------------------------------------------------------

def _package(tmp_path, binary) -> str:
    """A package directory `demo` whose extension `_kernels` is the given device binary, with
    _aot.py written by `python -m aotwheel.hook` (find_spec locates it by suffix, nothing loads it)."""
    pkg = tmp_path / "demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(binary, pkg / "_kernels.abi3.so")
    proc = run_python("import sys; from aotwheel.hook import main; sys.exit(main(sys.argv[1:]))".replace(
        "sys.argv[1:]", repr(["--extension", "_kernels", "--package", "demo", "--out", str(pkg / "_aot.py")])), child_env())
    assert proc.returncode == 0, proc.stderr
    return str(tmp_path)


def test_hook_import_is_free_and_targets_match_ar(tmp_path):
    fat = fat_binary("pvc,acm-g10")
    root = _package(tmp_path, fat)
    empty = CACHE / "empty_vendors"
    empty.mkdir(parents=True, exist_ok=True)
    env = child_env(OCL_ICD_VENDORS=str(empty), LD_LIBRARY_PATH=str(empty))
    env["PYTHONPATH"] = root + ":" + env["PYTHONPATH"]
    code = ("import sys, json; import demo._aot as aot\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('aotwheel') or m in ('pyopencl', 'ctypes'))\n"
            "print(json.dumps({'loaded': loaded, 'targets': list(aot.targets())}))")
    proc = run_python(code, env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # Importing _aot loads nothing; targets() reads the binary: names for 64.12.60.7 / 64.12.55.8.
    assert [m for m in data["loaded"] if m in ("pyopencl", "ctypes", "aotwheel.runtime", "aotwheel.probe")] == []
    assert {PVC_MEMBER, ACM_G10_MEMBER} <= set(ar_members(fat))
    assert data["targets"] == ["pvc", "acm-g10"]


def test_hook_check_warns_and_ensure_raises_for_unsupported(tmp_path):
    root = _package(tmp_path, single_binary("pvc"))
    env = child_env(AOTWHEEL_DEVICE="bmg-g21")
    env["PYTHONPATH"] = root + ":" + env["PYTHONPATH"]
    code = ("import demo._aot as aot\n"
            "print([v.verdict for v in aot.check()])\n"
            "from aotwheel.runtime import UnsupportedDeviceError\n"
            "try:\n    aot.ensure()\nexcept UnsupportedDeviceError as e:\n    print('raised:', e)")
    proc = run_python(code, env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == "['unsupported']" and out[1].startswith("raised:") and "bmg-g21" in out[1]


def test_hook_rejects_names_that_are_not_python_identifiers(tmp_path):
    from aotwheel.errors import AotwheelError
    from aotwheel.hook import main, render

    with pytest.raises(AotwheelError):
        render("_kernels; import os", "demo")
    assert main(["--extension", "_k", "--package", "1bad", "--out", str(tmp_path / "x.py")]) == 2
    assert not (tmp_path / "x.py").exists()
    compile(render("demo._kernels", "demo"), "_aot.py", "exec")  # absolute names are accepted


# ---- NVIDIA GPUs (issue 8): sm_XY devices are judged by NVIDIA's rules on the .nv_fatbin ------

H100_DATA = CACHE.parents[1] / "data" / "cuda-h100"


def test_nvidia_devices_follow_cuda_rules() -> None:
    from aotwheel.runtime import check

    verdicts = check(H100_DATA / "libkern_sm_80-ptx.so", "sm_90,sm_86,pvc", policy="ignore")
    got = sorted((v.device, v.verdict, v.image) for v in verdicts)
    # pvc: the library has no Intel device code at all: every (device, binary) pair still gets
    # a verdict (issue 12), unsupported, saying which vendor's code it carries.
    assert got == [("pvc", "unsupported", None), ("sm_86", "native", "sm_80"), ("sm_90", "jit", "compute_80")]
    [pvc] = [v for v in verdicts if v.device == "pvc"]
    assert pvc.rule == "other-vendor" and "NVIDIA: sm_80" in pvc.reason and pvc.vendor == "intel"


def test_nvidia_override_rejects_typos() -> None:
    from aotwheel.errors import DevlistError
    from aotwheel.probe.override import parse

    with pytest.raises(DevlistError, match="did you mean sm_90"):
        parse("sm_9o", source="AOTWHEEL_DEVICE")
    [dev] = parse("sm_90")
    assert (dev.vendor, dev.catalog, dev.kind) == ("nvidia", "sm_90", "gpu")
