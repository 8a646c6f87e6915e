"""icpx-golden: the exact icpx command lines aotwheel_target_sycl() produces.

icpx cannot run here, so these tests stand in for it: `cmake -P` scripts call the pure flag
function, and a tiny project configured with a forced IntelLLVM identity (a recording stand-in
compiler) shows what reaches build.ninja, compile_commands.json and the compiler's argv.

Every expected string is written by hand from the flags IPEX (cmake/gpu/SYCL.cmake) and
torch.utils.cpp_extension.SyclExtension use (docs/formats.md §1):
``-fsycl-targets=spir64_gen,spir64``, ``-Xs "-device <list> -options '<opts>'"`` (device list
before options), ``--offload-compress``, ``-fsycl-max-parallel-link-jobs=<n>``; ``spir64`` alone
and no ``-device`` for an empty list. The default devlist pvc,ats-m150 is pvc + acm-g10 (§2:
ats-m150 is an alias of acm-g10, IP 12.55.8).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CMAKE_DIR = REPO / "cmake"
SYCL_CMAKE = CMAKE_DIR / "aotwheel-sycl.cmake"

# IPEX's ocloc options (docs/formats.md §1), in IPEX's order.
IPEX_OPTIONS = [
    "-cl-intel-enable-auto-large-GRF-mode",
    "-cl-poison-unsupported-fp64-kernels",
    "-cl-intel-greater-than-4GB-buffer-required",
]

CMAKE = shutil.which("cmake")
NINJA = shutil.which("ninja")
needs_cmake = pytest.mark.skipif(CMAKE is None, reason="cmake is not installed (CI installs it)")
needs_ninja = pytest.mark.skipif(NINJA is None, reason="ninja is not installed (CI installs it)")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_") and k not in ("TORCH_XPU_ARCH_LIST", "MAX_JOBS")}
    env.update(extra)
    return env


def _run_script(tmp_path: Path, body: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "golden.cmake"
    script.write_text(body)
    return subprocess.run([CMAKE, "-P", str(script)], capture_output=True, text=True, env=env or _clean_env(), timeout=120)


def _print_lists() -> str:
    # One argv element per line, so the test sees exactly what icpx would get as argv.
    return (
        'foreach(i IN LISTS c)\n  message("C|${i}")\nendforeach()\n'
        'foreach(i IN LISTS l)\n  message("L|${i}")\nendforeach()\n'
    )


def _parse(stderr: str) -> tuple[list[str], list[str]]:
    compile_args = [line[2:] for line in stderr.splitlines() if line.startswith("C|")]
    link_args = [line[2:] for line in stderr.splitlines() if line.startswith("L|")]
    return compile_args, link_args


def _cmake_quote(arg: str) -> str:
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace(";", "\\;") + '"'


def flags(tmp_path: Path, **kw: object) -> tuple[list[str], list[str]]:
    """Run _aotwheel_sycl_flags() in `cmake -P` with keyword arguments; return (compile, link)."""
    proc = _flags_proc(tmp_path, **kw)
    assert proc.returncode == 0, proc.stderr
    return _parse(proc.stderr)


def _flags_proc(tmp_path: Path, **kw: object) -> subprocess.CompletedProcess[str]:
    args: list[str] = []
    for key, value in kw.items():
        args.append(key.upper())
        values = value if isinstance(value, list) else [value]
        args.extend(_cmake_quote(str(v)) for v in values)
    body = f"include({_cmake_quote(str(SYCL_CMAKE))})\n_aotwheel_sycl_flags(c l {' '.join(args)})\n" + _print_lists()
    return _run_script(tmp_path, body)


# --- the pure flag function, in cmake -P ------------------------------------------------------


@needs_cmake
def test_icpx_golden_aot_with_fallback(tmp_path: Path) -> None:
    c, l = flags(tmp_path, devices=["pvc", "acm-g10"])
    assert c == ["-fsycl", "-fsycl-targets=spir64_gen,spir64"]
    assert l == ["-fsycl", "-fsycl-targets=spir64_gen,spir64", "-Xs", "-device pvc,acm-g10", "--offload-compress"]


@needs_cmake
def test_icpx_golden_default_devlist_through_resolver(tmp_path: Path) -> None:
    # No USE_AOT_DEVLIST anywhere: the resolver's default (pvc,ats-m150) decides.
    body = (
        f"set(Python_EXECUTABLE {_cmake_quote(sys.executable)})\n"
        f"include({_cmake_quote(str(CMAKE_DIR / 'aotwheel-config.cmake'))})\n"
        "aotwheel_resolve_devlist(dl)\n"
        "_aotwheel_sycl_flags(c l DEVICES ${dl} JIT_FALLBACK ${dl_JIT_FALLBACK} SYCL_TARGETS ${dl_SYCL_TARGETS})\n"
        + _print_lists()
    )
    proc = _run_script(tmp_path, body)
    assert proc.returncode == 0, proc.stderr
    c, l = _parse(proc.stderr)
    assert c == ["-fsycl", "-fsycl-targets=spir64_gen,spir64"]
    assert l == ["-fsycl", "-fsycl-targets=spir64_gen,spir64", "-Xs", "-device pvc,acm-g10", "--offload-compress"]


@needs_cmake
def test_icpx_golden_fallback_off_is_spir64_gen_only(tmp_path: Path) -> None:
    c, l = flags(tmp_path, devices=["pvc"], jit_fallback="OFF")
    assert c == ["-fsycl", "-fsycl-targets=spir64_gen"]
    assert l == ["-fsycl", "-fsycl-targets=spir64_gen", "-Xs", "-device pvc", "--offload-compress"]


@needs_cmake
def test_icpx_golden_none_is_spir64_only_without_device(tmp_path: Path) -> None:
    c, l = flags(tmp_path, devices=[], parallel_link_jobs=2)
    assert c == ["-fsycl", "-fsycl-targets=spir64"]
    assert l == ["-fsycl", "-fsycl-targets=spir64", "--offload-compress", "-fsycl-max-parallel-link-jobs=2"]
    assert not any("spir64_gen" in a or "-device" in a or a == "-Xs" for a in c + l)


@needs_cmake
def test_icpx_golden_none_ignores_options_with_a_warning(tmp_path: Path) -> None:
    proc = _flags_proc(tmp_path, devices=[], options=IPEX_OPTIONS[:1])
    assert proc.returncode == 0, proc.stderr
    _, l = _parse(proc.stderr)
    assert l == ["-fsycl", "-fsycl-targets=spir64", "--offload-compress"]
    assert "CMake Warning" in proc.stderr and "ignored" in proc.stderr


@needs_cmake
def test_icpx_golden_options_follow_the_device_list(tmp_path: Path) -> None:
    _, l = flags(tmp_path, devices=["pvc", "acm-g11"], options=IPEX_OPTIONS)
    xs = l.index("-Xs")
    assert l[xs + 1] == (
        "-device pvc,acm-g11 -options '-cl-intel-enable-auto-large-GRF-mode "
        "-cl-poison-unsupported-fp64-kernels -cl-intel-greater-than-4GB-buffer-required'"
    )
    assert l.count("-Xs") == 1


@needs_cmake
def test_icpx_golden_compress_off(tmp_path: Path) -> None:
    _, on = flags(tmp_path, devices=["pvc"], compress="ON")
    _, off = flags(tmp_path, devices=["pvc"], compress="OFF")
    assert "--offload-compress" in on
    assert off == ["-fsycl", "-fsycl-targets=spir64_gen,spir64", "-Xs", "-device pvc"]


@needs_cmake
def test_icpx_golden_parallel_link_jobs(tmp_path: Path) -> None:
    _, l = flags(tmp_path, devices=["pvc"], parallel_link_jobs=16)
    assert l[-1] == "-fsycl-max-parallel-link-jobs=16"
    _, default = flags(tmp_path, devices=["pvc"])
    assert not any(a.startswith("-fsycl-max-parallel-link-jobs") for a in default)


@needs_cmake
def test_icpx_golden_resolver_targets_are_used_verbatim(tmp_path: Path) -> None:
    # SYCL_TARGETS from the resolver wins over the local default (JIT_FALLBACK unset = ON).
    c, _ = flags(tmp_path, devices=["pvc"], sycl_targets="spir64_gen")
    assert c == ["-fsycl", "-fsycl-targets=spir64_gen"]


@needs_cmake
@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"devices": ['pvc";touch pwned;"']}, "_aotwheel_sycl_flags: device 'pvc"),
        ({"devices": ["pvc $(id)"]}, "is not a resolved device name"),
        ({"devices": ["pvc"], "options": ["-cl-x';touch pwned;'"]}, "ocloc option"),
        ({"devices": ["pvc"], "options": ["-cl-a -cl-b"]}, "one option per list item"),
        ({"devices": ["pvc"], "parallel_link_jobs": "8;touch"}, "PARALLEL_LINK_JOBS"),
        ({"devices": ["pvc"], "parallel_link_jobs": "0"}, "PARALLEL_LINK_JOBS"),
        ({"devices": [], "jit_fallback": "OFF"}, "no device code"),
        ({"devices": [], "sycl_targets": "spir64_gen,spir64"}, "ocloc crashes on spir64_gen"),
        ({"devices": ["pvc"], "sycl_targets": "spir64;x"}, "SYCL_TARGETS"),
        ({"devices": ["pvc"], "compress": "maybe"}, "COMPRESS ON or COMPRESS OFF"),
        # Another vendor's entry is the resolver's (CMake parses no target name): one plain word, no option.
        ({"devices": ["pvc"], "sycl_targets": "spir64_gen,-Xs"}, "SYCL_TARGETS is"),
        ({"devices": ["pvc"], "sycl_targets": "spir64_gen,spir64,spir64_gen"}, "SYCL_TARGETS is"),
        ({"devices": ["pvc"], "sycl_targets": "spir64_gen,nvidia_gpu_sm_90;touch pwned"}, "SYCL_TARGETS is"),
        ({"devices": ["pvc"], "sycl_targets": "nvidia_gpu_sm_90"}, "has no spir64_gen"),
        ({"devices": [], "sycl_targets": "spir64_gen,nvidia_gpu_sm_90"}, "ocloc crashes on spir64_gen"),
    ],
)
def test_icpx_golden_rejects_unsafe_or_inconsistent_input(tmp_path: Path, kw: dict[str, object], needle: str) -> None:
    proc = _flags_proc(tmp_path, **kw)
    assert proc.returncode != 0
    assert needle in proc.stderr.replace("\n  ", " ")
    assert "_aotwheel_sycl_flags: " in proc.stderr
    assert "L|" not in proc.stderr
    assert not (tmp_path / "pwned").exists()


# --- oneAPI for NVIDIA GPUs: sm_XY tokens become nvidia_gpu_sm_XY targets ----------------------
# Written by hand from intel/llvm's driver rules: -fsycl-targets takes a comma-separated list that
# may mix spir64_gen/spir64 with nvidia_gpu_sm_XY, and with several targets the ocloc arguments go
# to spir64_gen alone through -Xsycl-target-backend=spir64_gen "<args>" (docs/formats.md, icpx).


@needs_cmake
def test_icpx_golden_nvidia_targets_follow_the_intel_ones(tmp_path: Path) -> None:
    c, l = flags(tmp_path, devices=["pvc"], sycl_targets="spir64_gen,spir64,nvidia_gpu_sm_90", options=IPEX_OPTIONS[:1])
    assert c == ["-fsycl", "-fsycl-targets=spir64_gen,spir64,nvidia_gpu_sm_90"]
    assert l == ["-fsycl", "-fsycl-targets=spir64_gen,spir64,nvidia_gpu_sm_90", "-Xsycl-target-backend=spir64_gen",
                 "-device pvc -options '-cl-intel-enable-auto-large-GRF-mode'", "--offload-compress"]
    assert "-Xs" not in l  # plain -Xs would hand '-device pvc' to the CUDA backend too


@needs_cmake
def test_icpx_golden_nvidia_only_has_no_ocloc_arguments(tmp_path: Path) -> None:
    c, l = flags(tmp_path, devices=[], sycl_targets="nvidia_gpu_sm_80,nvidia_gpu_sm_90a", jit_fallback="OFF")
    assert c == ["-fsycl", "-fsycl-targets=nvidia_gpu_sm_80,nvidia_gpu_sm_90a"]
    assert l == ["-fsycl", "-fsycl-targets=nvidia_gpu_sm_80,nvidia_gpu_sm_90a", "--offload-compress"]


@needs_cmake
def test_icpx_golden_pvc_sm_90_through_the_resolver(tmp_path: Path) -> None:
    body = (
        f"set(Python_EXECUTABLE {_cmake_quote(sys.executable)})\n"
        f"include({_cmake_quote(str(CMAKE_DIR / 'aotwheel-config.cmake'))})\n"
        "aotwheel_resolve_devlist(dl)\n"
        "_aotwheel_sycl_flags(c l DEVICES ${dl} JIT_FALLBACK ${dl_JIT_FALLBACK} SYCL_TARGETS ${dl_SYCL_TARGETS})\n"
        'message("CUDA|${dl_CUDA}")\n'
        + _print_lists()
    )
    proc = _run_script(tmp_path, body, env=_clean_env(USE_AOT_DEVLIST="pvc,sm_90"))
    assert proc.returncode == 0, proc.stderr
    c, l = _parse(proc.stderr)
    assert c == ["-fsycl", "-fsycl-targets=spir64_gen,spir64,nvidia_gpu_sm_90"]
    assert l == ["-fsycl", "-fsycl-targets=spir64_gen,spir64,nvidia_gpu_sm_90", "-Xsycl-target-backend=spir64_gen",
                 "-device pvc", "--offload-compress"]
    assert "CUDA|sm_90" in proc.stderr.splitlines()


# --- a configured project with a forced IntelLLVM identity -----------------------------------

_STAND_IN = '''#!{python}
"""Stand-in for icpx: records its argv (one JSON line per call) and creates the -o file."""
import json, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\\n")
if "-o" in args:
    open(args[args.index("-o") + 1], "wb").close()
'''

_PROJECT = """cmake_minimum_required(VERSION 3.21)
project(golden LANGUAGES C CXX)
find_package(aotwheel CONFIG REQUIRED)
add_library(kern MODULE kern.cpp glue.c)
aotwheel_target_sycl(kern {args})
"""


def _project(tmp_path: Path, args: str, *, forced: bool = True) -> tuple[Path, Path, Path]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(_PROJECT.format(args=args))
    (src / "kern.cpp").write_text("int kern() { return 0; }\n")
    (src / "glue.c").write_text("int glue(void) { return 1; }\n")
    log = tmp_path / "icpx-argv.jsonl"
    stand_in = tmp_path / "icpx"
    stand_in.write_text(_STAND_IN.format(python=sys.executable, log=str(log)))
    stand_in.chmod(0o755)
    toolchain = tmp_path / "toolchain.cmake"
    if forced:
        # What CMake would have detected for a real icpx; the C side stays the host compiler.
        toolchain.write_text(
            f"set(CMAKE_CXX_COMPILER {_cmake_quote(str(stand_in))})\n"
            "set(CMAKE_CXX_COMPILER_ID IntelLLVM)\n"
            "set(CMAKE_CXX_COMPILER_VERSION 2025.0.4)\n"
            "set(CMAKE_CXX_COMPILER_FRONTEND_VARIANT GNU)\n"
            "set(CMAKE_CXX_COMPILER_ID_RUN TRUE)\n"
            "set(CMAKE_CXX_COMPILER_FORCED TRUE)\n"
        )
    else:
        toolchain.write_text("")
    return src, toolchain, log


def _configure(tmp_path: Path, args: str, *, forced: bool = True, defs: tuple[str, ...] = (), env: dict[str, str] | None = None):
    src, toolchain, log = _project(tmp_path, args, forced=forced)
    build = tmp_path / "build"
    cmd = [
        CMAKE, "-S", str(src), "-B", str(build), "-G", "Ninja",
        f"-DCMAKE_TOOLCHAIN_FILE={toolchain}",
        f"-Daotwheel_DIR={CMAKE_DIR}",
        f"-DPython_EXECUTABLE={sys.executable}",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        *defs,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env or _clean_env(), timeout=300)
    return proc, build, log


def _build_with_stand_in(build: Path, log: Path) -> tuple[list[list[str]], list[str]]:
    """ninja the configured tree with the stand-in icpx: every argv it received (as icpx would
    after /bin/sh parsed the line), and the one link line's."""
    built = subprocess.run([NINJA, "-C", str(build)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    link = [c for c in calls if "-c" not in c]
    assert len(link) == 1
    return calls, link[0]


def _link_flags(build: Path) -> str:
    text = (build / "build.ninja").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("LINK_FLAGS = ")]
    assert len(lines) == 1, lines
    return lines[0][len("LINK_FLAGS = "):]


@needs_cmake
@needs_ninja
def test_icpx_golden_configure_build_ninja_and_argv(tmp_path: Path, builds: None) -> None:
    proc, build, log = _configure(
        tmp_path,
        "DEVICES \"pvc, ats-m150\" FIELD_DEFAULTS OFF OPTIONS -cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels "
        "PARALLEL_LINK_JOBS 3",
    )
    assert proc.returncode == 0, proc.stderr
    expected_shell = (
        "-fsycl -fsycl-targets=spir64_gen,spir64 "
        "-Xs \"-device pvc,acm-g10 -options '-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels'\" "
        "--offload-compress -fsycl-max-parallel-link-jobs=3"
    )
    assert _link_flags(build).endswith(" " + expected_shell)

    commands = {Path(e["file"]).name: e["command"] for e in json.loads((build / "compile_commands.json").read_text())}
    assert " -fsycl -fsycl-targets=spir64_gen,spir64 " in commands["kern.cpp"] + " "
    assert "-fsycl" not in commands["glue.c"]  # C glue is not SYCL code

    # Build with the stand-in: the argv icpx would receive after /bin/sh has parsed the line.
    calls, argv = _build_with_stand_in(build, log)
    xs = argv.index("-Xs")
    assert argv[xs - 2: xs + 4] == [
        "-fsycl",
        "-fsycl-targets=spir64_gen,spir64",
        "-Xs",
        "-device pvc,acm-g10 -options '-cl-intel-enable-auto-large-GRF-mode -cl-poison-unsupported-fp64-kernels'",
        "--offload-compress",
        "-fsycl-max-parallel-link-jobs=3",
    ]
    compile_cpp = [c for c in calls if "-c" in c and c[-1].endswith("kern.cpp")]
    assert len(compile_cpp) == 1 and compile_cpp[0].count("-fsycl") == 1


@needs_cmake
@needs_ninja
def test_icpx_golden_configure_pvc_sm_90_reaches_the_stand_in_icpx(tmp_path: Path, builds: None) -> None:
    proc, build, log = _configure(tmp_path, "", env=_clean_env(USE_AOT_DEVLIST="pvc,sm_90", MAX_JOBS="1"))
    assert proc.returncode == 0, proc.stderr
    options = " ".join(IPEX_OPTIONS)
    assert _link_flags(build).endswith(
        ' -fsycl -fsycl-targets=spir64_gen,spir64,nvidia_gpu_sm_90 -Xsycl-target-backend=spir64_gen '
        f'"-device pvc -options \'{options}\'" --offload-compress -fsycl-max-parallel-link-jobs=1 -flink-huge-device-code'
    )
    assert "SYCL AOT for pvc (targets spir64_gen,spir64,nvidia_gpu_sm_90)" in proc.stdout
    _, argv = _build_with_stand_in(build, log)
    at = argv.index("-fsycl-targets=spir64_gen,spir64,nvidia_gpu_sm_90")
    assert argv[at - 1: at + 4] == ["-fsycl", "-fsycl-targets=spir64_gen,spir64,nvidia_gpu_sm_90",
                                    "-Xsycl-target-backend=spir64_gen", f"-device pvc -options '{options}'", "--offload-compress"]


@needs_cmake
def test_icpx_golden_configure_devlist_from_environment_none(tmp_path: Path, builds: None) -> None:
    proc, build, _ = _configure(tmp_path, "COMPRESS OFF", env=_clean_env(USE_AOT_DEVLIST="none"))
    assert proc.returncode == 0, proc.stderr
    assert _link_flags(build).endswith(" -fsycl -fsycl-targets=spir64")
    assert "-Xs" not in (build / "build.ninja").read_text()


@needs_cmake
def test_icpx_golden_configure_fallback_off_from_cache_variable(tmp_path: Path, builds: None) -> None:
    proc, build, _ = _configure(tmp_path, "", defs=("-DUSE_AOT_DEVLIST=dg2-g11", "-DUSE_AOT_JIT_FALLBACK=OFF"),
                                env=_clean_env(MAX_JOBS="1"))
    assert proc.returncode == 0, proc.stderr
    # acm-g11 has no fp64: torch-xpu-ops' -fsycl-fp64-conv-emu joins the field defaults.
    assert _link_flags(build).endswith(
        f' -fsycl -fsycl-targets=spir64_gen -Xs "-device acm-g11 -options \'{" ".join(IPEX_OPTIONS)}\'" --offload-compress'
        " -fsycl-max-parallel-link-jobs=1 -fsycl-fp64-conv-emu -flink-huge-device-code")
    # The same with the field defaults off through the cache variable: the bare flags.
    (tmp_path / "off").mkdir()
    proc, build, _ = _configure(tmp_path / "off", "", defs=("-DUSE_AOT_DEVLIST=dg2-g11", "-DUSE_AOT_JIT_FALLBACK=OFF",
                                                             "-DUSE_AOT_FIELD_DEFAULTS=OFF"))
    assert proc.returncode == 0, proc.stderr
    assert _link_flags(build).endswith(' -fsycl -fsycl-targets=spir64_gen -Xs "-device acm-g11" --offload-compress')


@needs_cmake
def test_icpx_golden_configure_function_arguments_win(tmp_path: Path, builds: None) -> None:
    # DEVICES/JIT_FALLBACK given to aotwheel_target_sycl() beat the environment's devlist.
    proc, build, _ = _configure(tmp_path, "DEVICES intel_gpu_pvc JIT_FALLBACK OFF PARALLEL_LINK_JOBS 2",
                                env=_clean_env(USE_AOT_DEVLIST="none"))
    assert proc.returncode == 0, proc.stderr
    assert _link_flags(build).endswith(
        f' -fsycl -fsycl-targets=spir64_gen -Xs "-device pvc -options \'{" ".join(IPEX_OPTIONS)}\'" --offload-compress '
        "-fsycl-max-parallel-link-jobs=2 -flink-huge-device-code"
    )


@needs_cmake
def test_icpx_golden_configure_use_aot_compress_is_the_one_switch(tmp_path: Path, builds: None) -> None:
    # USE_AOT_COMPRESS=OFF (environment, then CMake variable) drops --offload-compress as it drops
    # aotwheel_add_device_code's zstd frames; unset, icpx gets it (the flags IPEX passes); the
    # COMPRESS argument wins over the variable.
    bare = ' -fsycl -fsycl-targets=spir64_gen,spir64 -Xs "-device pvc"'
    for name, args, defs, env, tail in [
        ("unset", "", (), {}, bare + " --offload-compress"),
        ("env-off", "", (), {"USE_AOT_COMPRESS": "OFF"}, bare),
        ("var-off", "", ("-DUSE_AOT_COMPRESS=OFF",), {"USE_AOT_COMPRESS": "ON"}, bare),
        ("arg-on", "COMPRESS ON", ("-DUSE_AOT_COMPRESS=OFF",), {}, bare + " --offload-compress"),
    ]:
        (tmp_path / name).mkdir()
        proc, build, _ = _configure(tmp_path / name, args, defs=("-DUSE_AOT_DEVLIST=pvc", "-DUSE_AOT_FIELD_DEFAULTS=OFF", *defs),
                                    env=_clean_env(**env))
        assert proc.returncode == 0, proc.stderr
        assert _link_flags(build).endswith(tail), (name, _link_flags(build))
    (tmp_path / "bad").mkdir()
    proc, _, _ = _configure(tmp_path / "bad", "", defs=("-DUSE_AOT_DEVLIST=pvc", "-DUSE_AOT_COMPRESS=zstd"))
    assert proc.returncode != 0
    assert "aotwheel_target_sycl: USE_AOT_COMPRESS is 'zstd'. Try: USE_AOT_COMPRESS ON or USE_AOT_COMPRESS OFF" in " ".join(proc.stderr.split())


@needs_cmake
def test_icpx_golden_configure_hostile_devlist_stops_configure(tmp_path: Path, builds: None) -> None:
    pwned = tmp_path / "pwned"
    hostile = f'pvc" ; touch {pwned} ; echo "'
    proc, build, log = _configure(tmp_path, "", defs=(f"-DUSE_AOT_DEVLIST={hostile}",))
    assert proc.returncode != 0
    assert "aotwheel_resolve_devlist: " in proc.stderr
    assert not (build / "build.ninja").exists()
    assert not pwned.exists()
    assert not log.exists()


@needs_cmake
def test_icpx_golden_configure_rejects_a_non_intel_compiler(tmp_path: Path, builds: None) -> None:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed (CI installs it)")
    proc, _, _ = _configure(tmp_path, "DEVICES pvc", forced=False, env=_clean_env(CXX=gxx))
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())
    assert "aotwheel_target_sycl: the compiler is GNU, not IntelLLVM. Try: CXX=icpx" in text


@needs_cmake
@needs_ninja
def test_icpx_golden_destination_installs_manifest_and_hook_stand_in(tmp_path: Path, builds: None) -> None:
    """aotwheel_target_sycl(... DESTINATION) gives an icpx-built target the same _aot_manifest.json
    and _aot.py as the open toolchain's and nvcc's calls (built with the stand-in icpx)."""
    proc, build, log = _configure(tmp_path, 'DEVICES "pvc,sm_90" DESTINATION kernpkg', env=_clean_env())
    assert proc.returncode == 0, proc.stderr
    _build_with_stand_in(build, log)
    prefix = tmp_path / "prefix"
    inst = subprocess.run([CMAKE, "--install", str(build), "--prefix", str(prefix)], capture_output=True, text=True, timeout=120)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    manifest = json.loads((prefix / "kernpkg" / "_aot_manifest.json").read_text())
    assert [t["name"] for t in manifest["devlist"]["targets"]] == ["pvc"] and manifest["devlist"]["cuda"] == ["sm_90"]
    assert manifest["toolchain"]["icpx"] == str(tmp_path / "icpx") and manifest["images"] == []
    assert "EXTENSION = 'kernpkg.kern'" in (prefix / "kernpkg" / "_aot.py").read_text()


# --- the field's flags, line by line: IPEX, torch-xpu-ops and SyclExtension for the same input ----
# TORCH_XPU_ARCH_LIST=pvc,dg2 (IPEX's setup.py turns it into USE_AOT_DEVLIST) and MAX_JOBS=2. Each
# entry is a flag as icpx receives it and the line that passes it, read at these commits with
# aotwheel's fetch tool (2026-11); docs/formats.md ("Field defaults") says where aotwheel differs.
IPEX_AT = "intel/intel-extension-for-pytorch d0f992ff0ce79fb78581828a285e2cb56caab4e8 (xpu-main) cmake/gpu/SYCL.cmake"
XPU_OPS_AT = "intel/torch-xpu-ops ab84f925a234f33ee70a29af59c03aefdeff68c3 cmake/BuildFlags.cmake"
TORCH_AT = "pytorch/pytorch 0011ec5c5d6171a395bb339b873343a4cdfebd18 torch/utils/cpp_extension.py"
UPSTREAM = {
    "IPEX": {
        "compile": [("-fsycl", 59)],
        "link": [("-fsycl", 179), ("-fsycl-max-parallel-link-jobs=2", 98), ("--offload-compress", 101),
                 ("-fsycl-targets=spir64_gen,spir64", 110), ("-flink-huge-device-code", 126)],
        # -Xs (173) "-device ${USE_AOT_DEVLIST} (168) -options ' <154> <158> <161>'" (163): one string
        "device": "pvc,dg2",
        "ocloc_options": IPEX_OPTIONS,
        "ocloc_options_in_order": True,
    },
    "torch-xpu-ops": {  # -fsycl itself: cmake/Modules/FindSYCLToolkit.cmake:135
        "compile": [("-fsycl-fp64-conv-emu", 228), ("-fsycl-targets=spir64_gen,spir64", 233)],
        "link": [("-fsycl-max-parallel-link-jobs=2", 193), ("--offload-compress", 194), ("-fsycl-fp64-conv-emu", 229),
                 ("-fsycl-targets=spir64_gen,spir64", 234)],
        # -Xs "-device ${AOT_TARGETS}" (235) + " -options X" three times (198, 199, 200)
        "device": "pvc,dg2",
        "ocloc_options": ["-cl-poison-unsupported-fp64-kernels", "-cl-intel-enable-auto-large-GRF-mode",
                          "-cl-intel-greater-than-4GB-buffer-required"],
        "ocloc_options_in_order": False,  # three -options: ocloc 22.43 keeps only the last one (docs)
        # On purpose not passed by aotwheel: kernel numerics, not device-list flags (docs).
        "not_passed": [("-foffload-fp32-prec-sqrt", 195), ("-foffload-fp32-prec-div", 196)],
    },
    "SyclExtension": {
        "compile": [("-fsycl", 295), ("-fsycl-targets=spir64_gen,spir64", 296)],
        "link": [("-fsycl", 295), ("-fsycl-targets=spir64_gen,spir64", 296), ("--offload-compress", 302)],
        "device": "pvc,dg2",  # -Xs "-device <list>" (303); no -options
        "ocloc_options": [],
        "ocloc_options_in_order": True,
        # Its separate device-link step (301); aotwheel's device code links with the module itself.
        "not_passed": [("-fsycl-link", 301)],
    },
}
_ICPX_FLAG = ("-fsycl", "--offload-compress", "-flink-huge-device-code", "-Xs", "-foffload")


def _stand_in_argv(tmp_path: Path, env: dict[str, str], args: str = "") -> tuple[subprocess.CompletedProcess[str], list[str], list[str]]:
    proc, build, log = _configure(tmp_path, args, env=env)
    assert proc.returncode == 0, proc.stderr
    calls, link = _build_with_stand_in(build, log)
    (compile_cpp,) = [c for c in calls if "-c" in c and c[-1].endswith("kern.cpp")]
    (compile_c,) = [c for c in calls if "-c" in c and c[-1].endswith("glue.c")] or [[]]
    assert not any(a.startswith("-fsycl") for a in compile_c)
    return proc, compile_cpp, link


def _xs(link: list[str]) -> tuple[str, list[str]]:
    value = link[link.index("-Xs") + 1]
    device, _, options = value.partition(" -options ")
    assert device.startswith("-device ")
    return device[len("-device "):], options.strip("'").split()


@needs_cmake
@needs_ninja
def test_icpx_golden_stand_in_pvc_dg2_has_the_upstream_flags(tmp_path: Path, builds: None) -> None:
    from aotwheel.backends.intel.devlist import IntelPart
    from aotwheel.devlist import resolve

    proc, compile_cpp, link = _stand_in_argv(tmp_path, _clean_env(TORCH_XPU_ARCH_LIST="pvc,dg2", MAX_JOBS="2"))
    assert "aotwheel: device list 'pvc,dg2' from TORCH_XPU_ARCH_LIST (environment)" in proc.stdout
    device, options = _xs(link)
    ours = {a for a in link if a.startswith(_ICPX_FLAG)} - {link[link.index("-Xs") + 1]}
    theirs: set[str] = set()
    for name, up in UPSTREAM.items():
        where = IPEX_AT if name == "IPEX" else XPU_OPS_AT if name == "torch-xpu-ops" else TORCH_AT
        for flag, line in up["compile"]:
            assert flag in compile_cpp, f"{name} {where}:{line} {flag}"
        for flag, line in up["link"]:
            assert flag in link, f"{name} {where}:{line} {flag}"
            theirs.add(flag)
        for flag, line in up.get("not_passed", []):
            assert flag not in link + compile_cpp, f"{name} {where}:{line} {flag}"
        # The device list: upstream hands ocloc 'dg2' (a generic name ocloc >= 25.18 knows, which
        # builds acm-g10: `ocloc ids dg2` = 12.55.8); aotwheel names that product, which every ocloc
        # release knows (docs).
        assert device == ",".join(resolve(up["device"]).part_of(IntelPart).names) == "pvc,acm-g10", name
        if up["ocloc_options_in_order"] and up["ocloc_options"]:
            assert options == up["ocloc_options"], name
        assert set(up["ocloc_options"]) <= set(options), name
    assert ours - {"-Xs"} == theirs  # nothing of aotwheel's own beyond what upstream passes
    assert compile_cpp.count("-fsycl-fp64-conv-emu") == 1


@needs_cmake
@needs_ninja
def test_icpx_golden_torch_xpu_arch_list_pvc_bmg_alone_selects_those_devices(tmp_path: Path, builds: None) -> None:
    proc, compile_cpp, link = _stand_in_argv(tmp_path, _clean_env(TORCH_XPU_ARCH_LIST="pvc,bmg", MAX_JOBS="1"))
    assert "aotwheel: device list 'pvc,bmg' from TORCH_XPU_ARCH_LIST (environment)" in proc.stdout
    assert "SYCL AOT for pvc,bmg-g21 (targets spir64_gen,spir64)" in proc.stdout
    device, options = _xs(link)
    assert device == "pvc,bmg-g21" and options == IPEX_OPTIONS
    assert "-fsycl-fp64-conv-emu" not in link + compile_cpp  # every device has fp64


@needs_cmake
@needs_ninja
def test_icpx_golden_user_options_add_to_the_field_defaults_once(tmp_path: Path, builds: None) -> None:
    _, _, link = _stand_in_argv(tmp_path, _clean_env(MAX_JOBS="1"),
                                "DEVICES pvc OPTIONS -cl-intel-greater-than-4GB-buffer-required -cl-mad-enable")
    _, options = _xs(link)
    assert options == [*IPEX_OPTIONS, "-cl-mad-enable"]


@needs_cmake
@needs_ninja
def test_icpx_golden_field_defaults_off_argument(tmp_path: Path, builds: None) -> None:
    _, compile_cpp, link = _stand_in_argv(tmp_path, _clean_env(USE_AOT_DEVLIST="pvc,dg2"), "FIELD_DEFAULTS OFF")
    at = link.index("-fsycl")
    assert link[at:] [:5] == ["-fsycl", "-fsycl-targets=spir64_gen,spir64", "-Xs", "-device pvc,acm-g10",
                              "--offload-compress"]
    assert not any(a.startswith(("-fsycl-max-parallel", "-flink-huge", "-fsycl-fp64")) for a in link + compile_cpp)
