"""Every fenced block of README.md, walked as written by a user (issue 30, Deliver 3).

The user: a clone of this checkout after `bash ci/main.sh` and `bash ci/test.sh` — aotwheel's wheel
in `dist/`, and a `.venv` made fresh here as `ci/setup.sh --test` and ci/main.sh make it (``python3 -m venv``, ci/setup.sh's
pip line, Intel's CPU OpenCL runtime through ci/install-opencl-cpu.sh, aotwheel installed from
the wheel); pip reads the same indexes and cache as ci/setup.sh, so it downloads nothing ci/setup.sh
already fetched. Each block runs through ``bash -exc`` in the clone (or where the README's previous
block left the user), in the shell environment `. .venv/bin/activate` gives: no other venv on PATH.

COVERAGE maps each block (by its first line) to the test that walks it; a block no test walks,
or an entry whose block is gone, fails test_every_readme_block_is_walked_by_a_test. The two root
set-up blocks cannot run in a test (apt-get, and CI runs ci/test.sh itself): their test pins them
and what the fixture takes over from ci/main.sh.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from _readme_util import README, block, blocks, run_block
from conftest import REPO, ocloc_writes_legacy_images, require

pytestmark = pytest.mark.usefixtures("builds")

#: README block (its first line) -> "module::test" walking it as written.
COVERAGE: dict[str, str] = {
    "bash ci/main.sh": "test_readme_blocks::test_root_setup_blocks_are_what_ci_runs",
    "bash ci/test.sh": "test_readme_blocks::test_root_setup_blocks_are_what_ci_runs",
    ". .venv/bin/activate": "test_readme_blocks::test_activate_block",
    '$ aotwheel resolve "PVC, ats-m150,dg2-g10"': "test_readme_blocks::test_resolve_console_block",
    "find_package(aotwheel CONFIG REQUIRED)   # installed: via the cmake.root entry point; in-tree: -Daotwheel_DIR=<repo>/cmake":
        "test_readme_blocks::test_cmake_resolve_block",
    "aotwheel/_kernels.abi3.so": "test_readme_blocks::test_compressed_inspect_output_block",
    "ocloc -device bmg,ptl": "test_coverage_driver::test_readme_coverage_block",
    "find_package(aotwheel CONFIG REQUIRED)": "test_first_hour::test_readme_cmake_lines_are_the_examples",
    "cd examples/downstream": "test_readme_blocks::test_example_block",
    "cd examples/setuptools": "test_readme_blocks::test_setuptools_example_block",
    'program = build_program(context, device, "aotdemo._demo")': "test_readme_blocks::test_run_your_kernel_lines_are_the_examples",
    "pip install --find-links dist dist/aotdemo-0.1.0-*.whl   # + aotwheel, pyopencl, numpy": "test_readme_blocks::test_run_your_kernel_block",
    "pip install 'variantlib[cli]==0.2.2'": "test_readme_blocks::test_wheel_variants_block",
    "export AOTWHEEL_REMOTE_CACHE='http://cache:8080/aotwheel|redis://cache:6379/0'  # tried in order":
        "test_readme_blocks::test_scaling_out_block_on_a_standard_scikit_build_core_project",
    "server {": "test_first_hour::test_readme_cache_server_configs_serve_aotwheels_stores",
    "bind 0.0.0.0": "test_first_hour::test_readme_cache_server_configs_serve_aotwheels_stores",
    "aotwheel inspect dist/aotwheel-*.whl        # or a .so, an installed module name, an ocloc .ar/.bin, a .spv":
        "test_readme_blocks::test_inspect_devices_check_selftest_block",
    "printf '__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }\\n' > k.cl":
        "test_readme_blocks::test_compile_blocks",
    'fat = aotwheel.compile_spirv(spirv_bytes, "pvc,acm-g10", options=["-cl-fast-relaxed-math"], grf="auto")':
        "test_readme_blocks::test_compile_blocks",
    "aotwheel compile tests/data/triton/pvc -o triton-aot          # a folder: <hash>/<name>.ar per kernel + aotwheel-triton.json":
        "test_readme_blocks::test_triton_blocks",
    'builds = aotwheel.compile_triton("tests/data/triton/dg2", output="triton-aot-dg2")  # a path or a list; returns one build per kernel':
        "test_readme_blocks::test_triton_blocks",
}


def test_every_readme_block_is_walked_by_a_test() -> None:
    found = blocks()
    assert len(found) >= 15, "the README block parser found too few blocks"
    unwalked = [f"README.md:{b.line}: {b.head}" for b in found if b.head not in COVERAGE]
    assert not unwalked, f"README blocks no test walks (add a test and a COVERAGE entry): {unwalked}"
    heads = [b.head for b in found]
    assert not [h for h in COVERAGE if heads.count(h) != 1], "COVERAGE names a block that is gone or not unique"
    for test in set(COVERAGE.values()):
        module, name = test.split("::")
        assert callable(getattr(importlib.import_module(module), name, None)), f"COVERAGE names a missing test {test}"


def test_root_setup_blocks_are_what_ci_runs() -> None:
    """`bash ci/main.sh` and `bash ci/test.sh` run as root and apt-get install the toolchain, so no
    test runs them: CI (.ci/run) runs `bash ci/test.sh` itself in a fresh Debian root, and the
    `user` fixture does what ci/main.sh leaves for the later blocks. Pinned here: change either
    block, or ci/main.sh's wheel and install lines, and update the fixture with it."""
    assert block("bash ci/main.sh").text == "bash ci/main.sh\n"
    assert block("bash ci/test.sh").text == "bash ci/test.sh\n"
    assert "bash ci/test.sh" in (REPO / ".ci" / "run").read_text()
    main = (REPO / "ci" / "main.sh").read_text().splitlines()
    assert "bash ci/setup.sh" in main
    assert ".venv/bin/python -m pip wheel --no-deps -w dist ." in main  # the fixture's dist/
    assert '.venv/bin/python -m pip install -q --force-reinstall "$wheel"' in main  # the fixture's last install
    assert _setup_sh_requirements()  # the fixture's .venv packages


# ---- the user: a clone after `bash ci/main.sh`, with a fresh .venv ------------------------------


@dataclass(frozen=True)
class User:
    root: Path                # the clone: where the README's blocks start
    shell: dict[str, str]     # the environment before `. .venv/bin/activate`
    env: dict[str, str]       # ... and after it

    @property
    def python(self) -> Path:
        return self.root / ".venv" / "bin" / "python"


def _setup_sh_requirements() -> list[str]:
    """What ci/setup.sh's pip line puts in .venv (cmake, ninja, scikit-build-core, numpy, pyopencl, ...)."""
    for line in (REPO / "ci" / "setup.sh").read_text().splitlines():
        if line.startswith(".venv/bin/python -m pip install -q ") and "scikit-build-core" in line:
            return shlex.split(line)[5:]
    raise AssertionError("ci/setup.sh lost its `.venv/bin/python -m pip install -q \"scikit-build-core...` line; update this test")


def _checkout_files() -> list[str]:
    proc = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          capture_output=True, check=False)
    if proc.returncode != 0:
        pytest.skip("this checkout is not a git clone (a clean clone is what the README starts from)")
    return [f for f in proc.stdout.decode().split("\0") if f and (REPO / f).is_file()]


def _pip(python: Path, *args: str, env: dict[str, str]) -> None:
    proc = subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True, env=env, timeout=900, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory, aotwheel_wheel: Path) -> User:
    require("ocloc", "cmake", "ninja", "cc")
    root = tmp_path_factory.mktemp("user") / "aotwheel"
    for name in _checkout_files():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    (root / "dist").mkdir()
    wheel = Path(shutil.copy2(aotwheel_wheel, root / "dist"))
    theirs = {str(REPO / ".venv" / "bin"), str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
    shell = {k: v for k, v in os.environ.items()
             if not k.startswith(("USE_AOT_", "AOTWHEEL_", "OCL_ICD_")) and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    shell["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p not in theirs)
    # A new user's ~/.cache/aotwheel (build cache) and ~/.cache/aotwheel/jit: empty (pip's cache stays shared).
    shell["AOTWHEEL_CACHE_DIR"] = str(tmp_path_factory.mktemp("user-cache"))
    shell["AOTWHEEL_JIT_CACHE_DIR"] = str(tmp_path_factory.mktemp("user-jit-cache"))
    # ci/setup.sh: python3 -m venv .venv (python3: the interpreter this test's venv was made from), its pip lines,
    # the CPU OpenCL runtime; ci/main.sh: aotwheel's wheel installed.
    made = subprocess.run([sys._base_executable, "-m", "venv", str(root / ".venv")], capture_output=True, text=True, check=False)  # type: ignore[attr-defined]
    assert made.returncode == 0, made.stderr
    python = root / ".venv" / "bin" / "python"
    _pip(python, "install", "-q", "--upgrade", "pip", env=shell)
    _pip(python, "install", "-q", *_setup_sh_requirements(), env=shell)
    opencl = subprocess.run(["bash", "ci/install-opencl-cpu.sh"], cwd=root, capture_output=True, text=True,
                            env=dict(shell, PYTHON=str(python)), timeout=900, check=False)
    assert opencl.returncode == 0, opencl.stderr[-3000:]
    _pip(python, "install", "-q", "--force-reinstall", str(wheel), env=shell)
    dump = subprocess.run(["bash", "-c", ". .venv/bin/activate && env -0"], cwd=root, capture_output=True, env=shell, check=True)
    env = dict(item.split("=", 1) for item in dump.stdout.decode().split("\0") if "=" in item)
    for noise in ("PWD", "OLDPWD", "SHLVL", "_"):
        env.pop(noise, None)
    assert env["VIRTUAL_ENV"] == str(root / ".venv") and env["PATH"].startswith(str(root / ".venv" / "bin"))
    # 1.2 GB (684 MB of it the CPU OpenCL runtime), left to pytest's clean-up of old base temp folders
    # (it keeps 3): removing it here took 26 s on the dev machine, 13 % of the module.
    return User(root, shell, env)


def _run(user: User, cmd: list[str], cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd or user.root, capture_output=True, text=True, env={**user.env, **env}, timeout=900, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc


# ---- the blocks, top to bottom ------------------------------------------------------------------


def test_activate_block(user: User) -> None:
    """`. .venv/bin/activate` then `aotwheel inspect` of the wheel ci/main.sh built: the venv's
    aotwheel, the default devlist's targets, and the CPU OpenCL runtime exported for every program."""
    text = block(". .venv/bin/activate").text
    proc = run_block(text + 'command -v aotwheel\necho "OCL_ICD_VENDORS=$OCL_ICD_VENDORS"\n', user.root, user.shell)
    out = proc.stdout.splitlines()
    assert str(user.root / ".venv" / "bin" / "aotwheel") in out, proc.stdout
    assert re.search(r"^  pvc +12\.60\.7 ", proc.stdout, re.M) and re.search(r"^  acm-g10 +12\.55\.8 ", proc.stdout, re.M), proc.stdout
    assert f"OCL_ICD_VENDORS={user.root / '.venv' / 'etc' / 'aotwheel-opencl-vendors'}" in out


def test_resolve_console_block(user: User) -> None:
    """Each `$ ` command prints exactly the lines the README shows under it; an error line exits 2."""
    text = block('$ aotwheel resolve "PVC, ats-m150,dg2-g10"').text
    steps = re.findall(r"^\$ (.+)\n((?:(?!\$ ).*\n)*)", text, re.M)
    assert len(steps) == 2
    for command, shown in steps:
        proc = subprocess.run(["bash", "-c", command], cwd=user.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=user.env, timeout=120, check=False)
        assert proc.stdout == shown, (command, proc.stdout)
        assert proc.returncode == (2 if shown.startswith("aotwheel: error:") else 0), command


def test_cmake_resolve_block(user: User, tmp_path: Path) -> None:
    """The three CMake lines in a project of their own, configured by the venv's CMake with aotwheel
    found as scikit-build-core finds it (the cmake.root entry point: aotwheel_ROOT)."""
    text = block("find_package(aotwheel CONFIG REQUIRED)   # installed: via the cmake.root entry point; in-tree: -Daotwheel_DIR=<repo>/cmake").text
    (tmp_path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.21)\nproject(walk LANGUAGES NONE)\n" + text)
    code = ("import importlib, importlib.metadata as m, pathlib; (ep,) = m.entry_points(group='cmake.root', name='aotwheel'); "
            "print(pathlib.Path(importlib.import_module(ep.value).__file__).parent)")
    root = _run(user, [str(user.python), "-c", code]).stdout.strip()
    assert root.startswith(str(user.root / ".venv")), root  # the installed aotwheel, not this checkout's
    proc = _run(user, ["cmake", "-G", "Ninja", "-S", str(tmp_path), "-B", str(tmp_path / "build"), f"-Daotwheel_ROOT={root}"])
    # The default list pvc,ats-m150 (ats-m150 is acm-g10), as the README's resolve block shows it.
    assert "-- AOT targets: pvc;acm-g10 (ocloc -device pvc,acm-g10; -fsycl-targets=spir64_gen,spir64)" in proc.stdout.splitlines(), proc.stdout


def test_compressed_inspect_output_block(user: User, tmp_path: Path) -> None:
    """The output block under "Compressed device images": the command the text names, run in the
    clone, then `aotwheel inspect` of the wheel's files prints the block's lines."""
    # The command the text names (COMPRESS is on by default: it names only the device list).
    command = re.search(r"this repository built with `((?:USE_AOT_\w+=\S+\s+)+pip wheel \.)`:\n\n```\naotwheel/_kernels", README)
    assert command, "README lost the command its compressed inspect output comes from"
    if not ocloc_writes_legacy_images():
        pytest.skip("the README shows Debian 12's ocloc 22.43 output (its zebin images' sizes); this is another ocloc release")
    run_block(" ".join(command[1].split()) + "\n", user.root, user.env)  # the inline command wraps a line in README.md
    (wheel,) = user.root.glob("aotwheel-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path)
    shown = block("aotwheel/_kernels.abi3.so").text.splitlines()
    out = _run(user, ["aotwheel", "inspect", "."], cwd=tmp_path).stdout.splitlines()
    start = out.index(shown[0]) if shown[0] in out else -1
    assert out[start:start + len(shown)] == shown, "\n".join(out)


def test_example_block(user: User) -> None:
    """The downstream example in pip's isolated build, aotwheel from dist/ (ci/main.sh's wheel);
    verbose as `pip -v` (issue 30 item 8): the `_aot hook` edge runs without "Error in sitecustomize"."""
    proc = run_block(block("cd examples/downstream").text, user.root, dict(user.env, PIP_VERBOSE="1"))
    out = proc.stdout + proc.stderr
    assert "aotdemo._aot hook" in out, out[-3000:]
    assert "Error in sitecustomize" not in out and "AssertionError" not in out, out[-3000:]
    (wheel,) = (user.root / "dist").glob("aotdemo-*.whl")
    assert wheel.name == "aotdemo-0.1.0-cp310-abi3-linux_x86_64.whl"
    assert re.search(r"^  pvc +12\.60\.7 ", proc.stdout, re.M) and re.search(r"^  acm-g10 +12\.55\.8 ", proc.stdout, re.M), proc.stdout


def test_setuptools_example_block(user: User) -> None:
    """The setup.py path (issue 30 item 2): examples/setuptools, whose CMakeLists is the standard
    one (${SKBUILD_SABI_COMPONENT}, USE_SABI ${SKBUILD_SABI_VERSION}), built by pip in isolation
    from the activated venv: an abi3 wheel with the devlist's images."""
    project = user.root / "examples" / "setuptools"
    cmake = (project / "CMakeLists.txt").read_text()
    assert "${SKBUILD_SABI_COMPONENT}" in cmake and "USE_SABI ${SKBUILD_SABI_VERSION}" in cmake and "if(NOT SKBUILD" not in cmake
    assert "from aotwheel.setuptools import CMakeExtension, build_ext" in (project / "setup.py").read_text()
    for source in ("csrc/_demo.c", "kernels/saxpy.cl", "src/aotdemo/__init__.py"):  # the same package as examples/downstream
        assert (project / source).read_text() == (REPO / "examples" / "downstream" / source).read_text(), source
    proc = run_block(block("cd examples/setuptools").text, user.root, user.env)
    (wheel,) = (user.root / "dist").glob("aotdemo_setuptools-*.whl")
    assert wheel.name == "aotdemo_setuptools-0.1.0-cp310-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel) as zf:
        assert "aotdemo/_demo.abi3.so" in zf.namelist() and "aotdemo/_aot_manifest.json" in zf.namelist()
    assert re.search(r"^  pvc +12\.60\.7 ", proc.stdout, re.M) and re.search(r"^  acm-g10 +12\.55\.8 ", proc.stdout, re.M), proc.stdout


def test_run_your_kernel_lines_are_the_examples() -> None:
    """The loader lines the README shows are the example package's own (both examples: one file)."""
    shown = block('program = build_program(context, device, "aotdemo._demo")').text.splitlines()
    for example in ("downstream", "setuptools"):
        code = [line.strip() for line in (REPO / "examples" / example / "src" / "aotdemo" / "__init__.py").read_text().splitlines()]
        for line in shown:
            assert line.replace("program = ", "").strip() in " ".join(code), f"README line not in examples/{example}: {line}"


def test_run_your_kernel_block(user: User) -> None:
    """Issue 41 item 1: the downstream wheel installed as the README says (its dependencies from
    its metadata, aotwheel from dist/) runs its kernel on the CPU OpenCL device activation exports."""
    if not list((user.root / "dist").glob("aotdemo-0.1.0-*.whl")):  # the block before it leaves the wheel there
        run_block(block("cd examples/downstream").text, user.root, user.env)
    proc = run_block(block("pip install --find-links dist dist/aotdemo-0.1.0-*.whl   # + aotwheel, pyopencl, numpy").text,
                     user.root, user.env)
    assert proc.stdout.strip().splitlines()[-1] == "[1. 3. 5. 7.]", proc.stdout + proc.stderr[-2000:]
    assert "prints `[1. 3. 5. 7.]`" in README


def test_wheel_variants_block(user: User) -> None:
    """`aotwheel variant` over matrix wheels (wheelhouse/<variant>/*.whl, ci/matrix.py's layout; the
    example's, built here with pip's cache), then variantlib's index JSON and this machine's answer."""
    for slug, devlist in (("pvc", "pvc"), ("pvc_ats-m150", "pvc,ats-m150"), ("none", "none")):  # with .venv's build tools: not the block under test
        _run(user, [str(user.python), "-m", "pip", "wheel", "examples/downstream", "--no-deps", "--no-build-isolation",
                    "-w", f"wheelhouse/{slug}"], USE_AOT_DEVLIST=devlist)
    proc = run_block(block("pip install 'variantlib[cli]==0.2.2'").text, user.root, user.env)
    variants = user.root / "dist" / "variants"
    names = sorted(p.name for p in variants.glob("*.whl"))
    assert len(names) == 3 and names[0].endswith("-null.whl") and names[1].endswith("-pvc.whl") and names[2].endswith("-pvc_acm_g10.whl"), names
    index = json.loads((variants / "aotdemo-0.1.0-variants.json").read_text())
    assert set(index["variants"]) == {"null", "pvc", "pvc_acm_g10"}, index
    # the picker: no Intel GPU here, so the JIT-only wheel, installed into the venv
    assert f"{variants / names[0]}" in proc.stdout.splitlines() or str(Path("dist/variants") / names[0]) in proc.stdout, proc.stdout
    shown = _run(user, [str(user.python), "-c", "import aotdemo._demo, aotwheel; print(aotwheel.inspect(aotdemo._demo.__file__).files[0].native_targets)"])
    assert shown.stdout.strip() == "[]", shown.stdout
    assert "spirv" in proc.stdout.splitlines()[-1], proc.stdout  # no Intel GPU here: the JIT wheel's property only


def test_scaling_out_block_on_a_standard_scikit_build_core_project(user: User, tmp_path: Path) -> None:
    """Issue 30 items 3 and 5: the README's scale-out block as written, on the CMakeLists a
    scikit-build-core user writes (`${SKBUILD_SABI_COMPONENT}` with `USE_SABI 3.10`, no
    fallback block), against a real nginx WebDAV store: `warm --shard 2/4` configures it (as
    scikit-build-core would) and says what it compiled; the wheel then assembles."""
    from _aotdemo_util import SKBUILD_CMAKELISTS
    from conftest import start_nginx

    project = tmp_path / "downstream"
    shutil.copytree(user.root / "examples" / "downstream", project, ignore=shutil.ignore_patterns("build", "*.whl"))
    (project / "CMakeLists.txt").write_text(SKBUILD_CMAKELISTS)
    assert 'wheel.py-api = "cp310"' in (project / "pyproject.toml").read_text()
    text = block("export AOTWHEEL_REMOTE_CACHE='http://cache:8080/aotwheel|redis://cache:6379/0'  # tried in order").text
    url = re.search(r"AOTWHEEL_REMOTE_CACHE='([^']+)'", text)
    assert url
    # A fresh runner: an empty local cache. aotwheel is not on this machine's index: dist/ stands in.
    env = dict(user.env, AOTWHEEL_CACHE_DIR=str(tmp_path / "cache"),
               PIP_FIND_LINKS=" ".join(filter(None, [str(user.root / "dist"), user.env.get("PIP_FIND_LINKS")])))
    nginx = start_nginx(tmp_path / "nginx")
    try:
        proc = run_block(text.replace(url[1], nginx.url()), project, env)
    finally:
        nginx.stop()
    out = proc.stdout
    assert "shard 2/4:" in out, out
    compiled = re.findall(r"^  saxpy\.spv for (\S+): compiled, pushed to the remote cache", out, re.M)
    assert len(compiled) == 1 and compiled[0] in "pvc,acm-g10,tgllp,dg1".split(","), out  # 4 devices, 1 source: one job a shard
    assert list(project.glob("aotdemo-*-cp310-abi3-*.whl")), out  # the assembled wheel, abi3 as py-api says
    assert "remote_failures: 0" in out


def test_inspect_devices_check_selftest_block(user: User) -> None:
    """inspect, devices, check and selftest in the activated venv: the CPU OpenCL device is found,
    the kernels JIT-compile on it from SPIR-V and agree with NumPy."""
    proc = run_block(block("aotwheel inspect dist/aotwheel-*.whl        # or a .so, an installed module name, an ocloc .ar/.bin, a .spv").text,
                     user.root, user.env)
    out = proc.stdout
    assert re.search(r"^  opencl +[1-9]\d* device", out, re.M), out  # devices: the CPU runtime ci/install-opencl-cpu.sh put in .venv
    assert re.search(r"\[opencl\]: jit spirv \[rule cpu-ir\]", out), out  # check: a CPU JIT-compiles the SPIR-V
    results = re.findall(r"^  (\w+) +max error \S+ \(tolerance \S+\) (\w+)$", out, re.M)
    assert len(results) >= 5 and all(ok == "ok" for _, ok in results), out  # selftest


def test_compile_blocks(user: User, tmp_path: Path) -> None:
    """Issue 30 item 7: the compile block makes its k.spv, and no command overwrites another's
    output; the Python line then compiles the same k.spv through the API."""
    require("clang-15", "llvm-spirv-15")  # the block's commands are Debian 12's
    text = block("printf '__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }\\n' > k.cl").text
    assert "k.spv" in text.splitlines()[1] and "-o k.spv" in text  # how to make k.spv comes first
    run_block(text, tmp_path, user.env)
    outputs = [m for line in text.splitlines() if line.startswith("aotwheel compile") and (m := re.search(r"-o (\S+)", line))]
    assert len({m[1] for m in outputs}) == len(outputs) == 3  # three commands, three outputs
    for name in ("k.ar", "k-xe-hpc.ar"):
        assert (tmp_path / name).read_bytes()[:8] == b"!<arch>\n", name
    members = subprocess.run(["ar", "t", str(tmp_path / "k.ar")], capture_output=True, text=True, check=True).stdout.split()
    assert {"64.12.60.7", "64.12.55.8", "generic_ir"} <= {m.rstrip("/") for m in members}  # pvc, acm-g10 (= ats-m150)
    assert {p.name for p in (tmp_path / "bins").iterdir()} >= {"pvc.bin", "generic_ir.spv"}
    # The Python block is one statement: spirv_bytes is the k.spv just made.
    line = block('fat = aotwheel.compile_spirv(spirv_bytes, "pvc,acm-g10", options=["-cl-fast-relaxed-math"], grf="auto")').text
    script = f"import aotwheel\nspirv_bytes = open('k.spv', 'rb').read()\n{line}open('api.ar', 'wb').write(fat)\n"
    _run(user, [str(user.python), "-c", script], cwd=tmp_path)
    members = subprocess.run(["ar", "t", str(tmp_path / "api.ar")], capture_output=True, text=True, check=True).stdout.split()
    assert {"64.12.60.7", "64.12.55.8", "generic_ir"} <= {m.rstrip("/") for m in members}


def test_triton_blocks(user: User, tmp_path: Path) -> None:
    """Issue 38: the Triton blocks in the clone, on the committed triton-xpu fixtures (no Triton
    installed): a fat binary per kernel and the manifest, the device-mismatch warning, inspect's
    archive summary; then the Python line builds the dg2 kernels through the API."""
    require("ocloc")
    text = block("aotwheel compile tests/data/triton/pvc -o triton-aot          # a folder: <hash>/<name>.ar per kernel + aotwheel-triton.json").text
    proc = run_block(text, user.root, user.env)
    index = json.loads((user.root / "tests/data/triton/pvc/index.json").read_text())
    manifest = json.loads((user.root / "triton-aot" / "aotwheel-triton.json").read_text())
    assert sorted(k["fatbinary"] for k in manifest["kernels"]) == sorted(f"{e}.ar" for e in index.values())
    assert "aotwheel: warning: Triton kernel add_kernel" in proc.stderr and "not for acm-g10" in proc.stderr
    listed = subprocess.run(["ar", "t", str(user.root / "add.ar")], capture_output=True, text=True, check=True).stdout.split()
    members = [m for m in listed if not m.startswith("pad_")]  # ocloc's alignment padding is no member
    assert f"  {len(members)} archive members: 2 with native code, 1 IR for JIT (SPIR-V)" in proc.stdout.splitlines()
    line = block('builds = aotwheel.compile_triton("tests/data/triton/dg2", output="triton-aot-dg2")  # a path or a list; returns one build per kernel').text
    _run(user, [str(user.python), "-c", f"import aotwheel\n{line}print(len(builds))\n"])
    manifest = json.loads((user.root / "triton-aot-dg2" / "aotwheel-triton.json").read_text())
    assert {k["target_ip"] for k in manifest["kernels"]} == {"12.55.8"} and len(manifest["kernels"]) == 5
