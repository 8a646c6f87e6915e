"""Real CMake + ninja builds sharing device code through a REAL nginx/WebDAV server on loopback:
two "machines" (separate build dirs AND separate local caches), AOTWHEEL_SHARD builds (whose
ninja graph holds only their slice: read back with `ninja -t commands`) plus an assemble build,
settings from `-D` (the CMake cache), `aotwheel build warm` and `aotwheel build cache`.
ocloc runs are counted by a logging wrapper (AOTWHEEL_OCLOC), clang and llvm-spirv runs likewise
(AOTWHEEL_CLANG, AOTWHEEL_LLVM_SPIRV: the SPIR-V step's cache); embedded images are read back with
pyelftools (tests/_build_util.embedded_images), not with aotwheel's readers."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.servers import NginxDav

from _build_util import PYTHONPATH, REPO, build_env, compile_runs, embedded_images, ocloc_logger, require, run, tool_logger
from _build_util import logged_runs as _logged
from conftest import CLANG, LLVM_SPIRV, start_nginx

pytestmark = pytest.mark.usefixtures("builds")

TOOLS = ("cmake", "ninja", "cc", "ocloc", CLANG, LLVM_SPIRV)
DEVICES = "pvc,acm-g10,tgllp"
KERNELS = [REPO / "csrc" / "kernels" / "reduce.cl", REPO / "csrc" / "kernels" / "softmax.cl"]
PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(rc LANGUAGES C)
add_library(rcext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
aotwheel_add_device_code(rcext SOURCES {sources} DEVLIST DEVS NAME rc)
"""


@pytest.fixture
def nginx(nginx: NginxDav) -> NginxDav:
    """conftest's real nginx store, for builds that also need the toolchain."""
    require(*TOOLS)
    return nginx


@pytest.fixture
def project(tmp_path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(PROJECT.format(sources=" ".join(str(k) for k in KERNELS)))
    (src / "ext.c").write_text('#include "rc_aot.h"\nunsigned long n(void) { return aotwheel_rc_image_count; }\n')
    return src


def spirv_tools(directory: Path) -> tuple[dict[str, str], Path, Path]:
    """Environment naming logging clang/llvm-spirv wrappers, and their logs."""
    clang, clang_log = tool_logger(directory, CLANG)
    spirv, spirv_log = tool_logger(directory, LLVM_SPIRV)
    return {"AOTWHEEL_CLANG": str(clang), "AOTWHEEL_LLVM_SPIRV": str(spirv)}, clang_log, spirv_log


def _payload(obj: Path) -> bytes:
    return obj.read_bytes().split(b"\n", 1)[1]


def spirv_objects(server: NginxDav) -> list[Path]:
    """The SPIR-V step's objects on the server (its manifests and SPIR-V modules), by content."""
    return [p for p in server.objects() if _payload(p)[:4] == b"\x03\x02\x23\x07" or _payload(p).startswith(b'{"entries"')]


def cost_records(server: NginxDav) -> list[Path]:
    """The ocloc cost records on the server (backends/intel/buildsteps/history.py), by content."""
    return [p for p in server.objects() if _payload(p).startswith(b'{"format": "aotwheel-ocloc-costs"')]


def device_objects(server: NginxDav) -> list[Path]:
    other = {*spirv_objects(server), *cost_records(server)}
    return [p for p in server.objects() if p not in other]


def logged_runs(log: Path) -> list[str]:
    """ocloc runs that compiled device code (not the `compile --help` of toolchain discovery)."""
    return [r for r in _logged(log, "compile") if " -file " in f" {r} "]


def compiled_jobs(log: Path) -> list[tuple[str, str]]:
    """(SPIR-V file, device) of every job ocloc compiled: one ocloc run covers the devices of its
    edge's group (`-device a,b`)."""
    jobs = []
    for r in logged_runs(log):
        spv, devices = re.search(r"-file (\S+)", r).group(1), re.search(r"-device (\S+)", r).group(1)
        jobs += [(Path(spv).name, d) for d in devices.split(",")]
    return jobs


def _graph(machine: Path) -> tuple[list[str], list[list[tuple[str, str]]]]:
    """The build graph's SPIR-V edges (source stems) and ocloc edges ((stem, device) per edge),
    from `ninja -t commands` of the whole build."""
    text = run(["ninja", "-C", str(machine / "build"), "-t", "commands"]).stdout
    spirv, ocloc = [], []
    for line in dict.fromkeys(text.splitlines()):  # an edge's command is listed once per target using it
        if "buildsteps/__main__.py" not in line:
            continue
        argv = shlex.split(line)
        rest = argv[argv.index(next(a for a in argv if a.endswith("buildsteps/__main__.py"))) + 1:]
        if rest[0] != "intel" or "--plan" not in rest:  # the core's steps (manifest, hook, ...), tgtsym
            continue
        # A vendor's edge runs `intel <step> --plan <plan> --edge <id>`: what it builds is its plan entry.
        plan = json.loads(Path(argv[argv.index("--plan") + 1]).read_text())
        edge = next(e for e in plan["edges"] if e["id"] == argv[argv.index("--edge") + 1])
        if rest[1] == "spirv":
            spirv.append(Path(edge["source"]).stem)
        elif rest[1] == "ocloc":
            ocloc.append([(Path(edge["data"]["spirv"]).stem, n["device"]) for n in edge["data"]["natives"]])
    return sorted(spirv), ocloc


def _check_slice(machine: Path, log: Path, before: int) -> list[tuple[str, str]]:
    """A shard build ran ocloc for exactly the (source, device) jobs of its graph, which holds no
    edge (no placeholder process) and no output for anyone else's; returns those jobs."""
    spirv, edges = _graph(machine)
    jobs = sorted(j for edge in edges for j in edge)
    assert all(edges) and len(set(jobs)) == len(jobs)
    assert sorted({stem for stem, _ in jobs}) == spirv  # SPIR-V only of the sources it compiles for
    assert sorted((Path(spv).stem, d) for spv, d in compiled_jobs(log)[before:]) == jobs
    work = machine / "build" / "aotwheel" / "rc"
    assert sorted(p.stem for p in work.glob("*.spv")) == spirv
    assert sorted(tuple(p.name.split(".")[:2]) for p in work.glob("*.bin")) == jobs
    return jobs


def _build(src: Path, machine: Path, env: dict[str, str], *defs: str, target: list[str] | None = None) -> str:
    """Configure + build in ``machine/build`` with ``machine/cache`` as the local cache; both outputs."""
    env = {**env, "AOTWHEEL_CACHE_DIR": str(machine / "cache")}
    conf = run(["cmake", "-G", "Ninja", "-S", str(src), "-B", str(machine / "build"), f"-Daotwheel_DIR={REPO / 'cmake'}",
                f"-DPython_EXECUTABLE={sys.executable}", f"-DUSE_AOT_DEVLIST={DEVICES}", *defs], env=env)
    proc = run(["ninja", "-C", str(machine / "build"), "-j2", *(target or [])], env=env)
    return conf.stdout + conf.stderr + proc.stdout + proc.stderr


def _images(machine: Path) -> list[tuple[str, bytes]]:
    so = next((machine / "build").glob("librcext*.so"))
    return [(i.triple, i.data) for i in embedded_images(so)]


def _manifest(machine: Path) -> dict:
    return json.loads((machine / "build" / "aotwheel" / "rc" / "_aot_manifest.json").read_text())


def _provenance(machine: Path) -> list[str]:
    return [m["provenance"] for img in _manifest(machine)["images"] for m in img.get("members", []) if m["device"]]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aotwheel", "build", *args], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": PYTHONPATH})


def test_two_machines_second_runs_zero_ocloc_and_embeds_the_same_images(project, nginx, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    env = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper), AOTWHEEL_REMOTE_CACHE=nginx.url())
    _build(project, tmp_path / "m1", env)
    jobs = len(KERNELS) * len(DEVICES.split(","))
    assert len(compiled_jobs(log)) == jobs and len(device_objects(nginx)) == jobs + 1  # + ocloc's facts
    assert len(spirv_objects(nginx)) == 2 * len(KERNELS)  # a manifest and a module per source
    assert sorted(compiled_jobs(log)) == sorted((f"{k.stem}.spv", d) for k in KERNELS for d in DEVICES.split(","))
    assert set(_provenance(tmp_path / "m1")) == {"compiled"}
    every_run = log.read_text().splitlines()
    _build(project, tmp_path / "m2", env)
    # Machine 2 started no ocloc process at all: no compile, and not even the toolchain queries
    # (`query OCL_DRIVER_VERSION`, `compile --help`) -- their answers came from the remote too.
    assert log.read_text().splitlines() == every_run
    assert any(r.startswith("query ") for r in every_run)  # machine 1 did ask
    assert _images(tmp_path / "m2") == _images(tmp_path / "m1")
    assert _provenance(tmp_path / "m2") == ["remote"] * jobs
    # `aotwheel build cache` on machine 2: the last build's remote hits and bytes.
    stats = json.loads(_cli("cache", "--json", env={**env, "AOTWHEEL_CACHE_DIR": str(tmp_path / "m2" / "cache")}).stdout)
    # jobs + 1: the device images and ocloc's facts (version, devices), each a local miss first
    assert (stats["remote_hits"], stats["remote_failures"], stats["misses"]) == (jobs + 1, 0, jobs + 1)
    assert stats["remote_bytes_in"] == sum(p.stat().st_size for p in device_objects(nginx))
    assert len(device_objects(nginx)) == jobs + 1
    assert (stats["spirv_remote_hits"], stats["spirv_compiled"]) == (len(KERNELS), 0)
    assert stats["remote"] == [nginx.url()]


def test_cmake_define_settings_reach_the_steps_and_the_token_stays_out_of_logs(project, tmp_path):
    require(*TOOLS)
    token = "tok-SECRET-2718"
    server = start_nginx(tmp_path / "nginx", bearer=token)
    try:
        wrapper, log = ocloc_logger(tmp_path / "bin")
        env = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper))
        out = _build(project, tmp_path / "m1", env, f"-DAOTWHEEL_REMOTE_CACHE={server.url()}",
                     f"-DAOTWHEEL_REMOTE_CACHE_TOKEN={token}")
        assert len(device_objects(server)) == len(KERNELS) * len(DEVICES.split(","))
        assert len(spirv_objects(server)) == 2 * len(KERNELS)  # the settings reach the SPIR-V step too
        verbose = run(["ninja", "-C", str(tmp_path / "m1" / "build"), "-t", "commands"], env=env).stdout
        assert token not in out and token not in verbose
        assert token not in (tmp_path / "m1" / "build" / "build.ninja").read_text()
        # Read-only from the CMake cache: a third machine reads, a fresh kernel set is never written.
        (project / "CMakeLists.txt").write_text((project / "CMakeLists.txt").read_text().replace("NAME rc", "NAME rc OPTIONS -cl-fast-relaxed-math"))
        before = server.methods().count("PUT")
        out = _build(project, tmp_path / "m3", env, f"-DAOTWHEEL_REMOTE_CACHE={server.url()}",
                     f"-DAOTWHEEL_REMOTE_CACHE_TOKEN={token}", "-DAOTWHEEL_REMOTE_CACHE_READONLY=1")
        assert server.methods().count("PUT") == before and token not in out
    finally:
        server.stop()


def test_shard_builds_then_assemble_runs_zero_ocloc_and_matches_one_machine(project, nginx, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    tools, clang_log, spirv_log = spirv_tools(tmp_path / "bin")
    base = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper), **tools)
    _build(project, tmp_path / "one", base)  # the one-machine reference, no remote
    jobs = len(compiled_jobs(log))
    remote = {**base, "AOTWHEEL_REMOTE_CACHE": nginx.url()}
    per_shard = []
    for i in (1, 2, 3):  # 2 sources on 3 shards: the plan splits sources across shards
        before = len(compiled_jobs(log))
        _build(project, tmp_path / f"s{i}", {**remote, "AOTWHEEL_SHARD": f"{i}/3"})
        per_shard.append(_check_slice(tmp_path / f"s{i}", log, before))
    assert sorted(j for s in per_shard for j in s) == sorted((k.stem, d) for k in KERNELS for d in DEVICES.split(","))
    assert all(per_shard), per_shard
    assert len(device_objects(nginx)) == jobs + 1  # + ocloc's facts
    assert len(spirv_objects(nginx)) == 2 * len(KERNELS)  # each shard pushed its sources' SPIR-V
    before = len(compiled_jobs(log))
    clang_runs, spirv_runs = len(compile_runs(clang_log)), len(compile_runs(spirv_log))
    assert clang_runs == spirv_runs == 2 * len(KERNELS)  # "one" and the shards compiled each source once
    _build(project, tmp_path / "asm", remote)
    assert len(compiled_jobs(log)) == before  # the assembling build ran zero ocloc
    # ... and zero clang and llvm-spirv: every SPIR-V came from the remote
    assert (len(compile_runs(clang_log)), len(compile_runs(spirv_log))) == (clang_runs, spirv_runs)
    assert _images(tmp_path / "asm") == _images(tmp_path / "one")
    assert _provenance(tmp_path / "asm") == ["remote"] * jobs
    stats = json.loads(_cli("cache", "--json", env={**remote, "AOTWHEEL_CACHE_DIR": str(tmp_path / "asm" / "cache")}).stdout)
    assert (stats["spirv_remote_hits"], stats["spirv_compiled"], stats["remote_hits"]) == (len(KERNELS), 0, jobs + 1)


def test_source_affine_shards_build_only_their_sources_and_assemble_matches(project, nginx, tmp_path):
    """2 sources of about the same size on 2 shards: each shard holds one whole source -- its
    SPIR-V edge, the ocloc edges the one planner (groups.plan_edges) gives that source alone on this
    machine's cores, nothing of the other source."""
    from aotwheel.backends.intel.buildsteps.groups import plan_edges, source_jobs, usable_cores

    wrapper, log = ocloc_logger(tmp_path / "bin")
    base = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper))
    _build(project, tmp_path / "one", base)
    one_spirv, _ = _graph(tmp_path / "one")
    remote = {**base, "AOTWHEEL_REMOTE_CACHE": nginx.url()}
    stems = []
    for i in (1, 2):
        before = len(compiled_jobs(log))
        _build(project, tmp_path / f"s{i}", {**remote, "AOTWHEEL_SHARD": f"{i}/2"})
        jobs = _check_slice(tmp_path / f"s{i}", log, before)
        (stem,) = {s for s, _ in jobs}  # one whole source
        assert sorted(d for _, d in jobs) == sorted(DEVICES.split(","))
        src = next(k for k in KERNELS if Path(k).stem == stem)
        planned = plan_edges(source_jobs([(stem, str(src))], DEVICES.split(",")), usable_cores())
        assert sorted(_graph(tmp_path / f"s{i}")[1]) == sorted([(stem, d) for d in g] for _, g in planned)
        stems.append(stem)
    assert sorted(stems) == one_spirv
    before = len(compiled_jobs(log))
    _build(project, tmp_path / "asm", remote)
    assert len(compiled_jobs(log)) == before
    assert _images(tmp_path / "asm") == _images(tmp_path / "one")


def test_a_shard_with_no_jobs_builds_no_device_code(project, tmp_path):
    require(*TOOLS)
    wrapper, log = ocloc_logger(tmp_path / "bin")
    env = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper))
    out = _build(project, tmp_path / "s", {**env, "AOTWHEEL_SHARD": "9/9"})  # 6 jobs, 9 shards
    assert "AOTWHEEL_SHARD=9/9 builds 0 of 2 kernel sources" in out
    assert _graph(tmp_path / "s") == ([], []) and compiled_jobs(log) == []
    assert _manifest(tmp_path / "s")["images"] == []
    # A bad value stops configure (where the slice is computed) with one line naming the fix.
    bad = subprocess.run(["cmake", "-G", "Ninja", "-S", str(project), "-B", str(tmp_path / "bad"),
                          f"-Daotwheel_DIR={REPO / 'cmake'}", f"-DPython_EXECUTABLE={sys.executable}",
                          f"-DUSE_AOT_DEVLIST={DEVICES}", "-DAOTWHEEL_SHARD=5/4"], capture_output=True, text=True, env=env)
    assert bad.returncode != 0
    assert "aotwheel_add_device_code: AOTWHEEL_SHARD='5/4' is not i/n" in bad.stderr and "AOTWHEEL_SHARD=1/4" in bad.stderr


def test_warm_cli_pushes_one_shard_and_builds_no_extension(project, nginx, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    env = build_env(tmp_path / "cache", AOTWHEEL_OCLOC=str(wrapper), AOTWHEEL_REMOTE_CACHE=nginx.url())
    build = tmp_path / "warm"
    proc = _cli("warm", "--shard", "1/2", "--devlist", DEVICES, "--build-dir", str(build), "--json", str(project), env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    runs = len(compiled_jobs(log))
    assert doc["shard"] == "1/2" and doc["remote_stores"] == runs + 1 == len(device_objects(nginx)) >= 2  # + ocloc's facts
    # Issue 30 item 5: warm says what it compiled: one entry per ocloc run the logger saw.
    pushed = [j for j in doc["jobs"] if " for " in j["what"] and j["outcome"] == "compiled, pushed to the remote cache"]
    assert len(pushed) == runs and all(j["what"].split(" for ")[1] in DEVICES.split(",") for j in pushed), doc["jobs"]
    assert not list(build.glob("librcext*.so"))  # device code only
    assert len(list((build / "aotwheel" / "rc").glob("*.spv"))) == 1  # 2 sources, 2 shards: one each
    proc = _cli("warm", "--shard", "2/2", "--devlist", DEVICES, "--json", str(project), env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(device_objects(nginx)) == len(KERNELS) * len(DEVICES.split(",")) + 1
    bad = _cli("warm", "--shard", "3/2", str(project), env=env)
    assert bad.returncode == 2 and "AOTWHEEL_SHARD=1/4" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_server_unreachable_for_a_whole_build_gives_one_warning(project, nginx, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    port = nginx.port
    nginx.stop()
    env = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper),
                    AOTWHEEL_REMOTE_CACHE=f"http://127.0.0.1:{port}/aot|redis://127.0.0.1:{port}/0")
    out = _build(project, tmp_path / "m1", {**env, "NINJA_STATUS": ""}, target=None)
    warnings = [ln for ln in out.splitlines() if "aotwheel: warning:" in ln]
    # The first ocloc edge to fail warns; the marker in the build tree keeps the other edges (in
    # parallel) quiet. (Configure's ocloc-facts lookup fails too, but leaves the warning to them:
    # CMake shows a configure step's stderr only when the step fails.)
    assert len(warnings) == 1, out
    assert "remote cache" in warnings[0] and "the remote never fails a build" in warnings[0]
    assert len(compiled_jobs(log)) == len(KERNELS) * len(DEVICES.split(","))
    assert _images(tmp_path / "m1")


HEADER_PROJECT = """
cmake_minimum_required(VERSION 3.21)
project(rc LANGUAGES C)
add_library(rcext MODULE ext.c)
find_package(aotwheel CONFIG REQUIRED)
aotwheel_resolve_devlist(DEVS)
aotwheel_add_device_code(rcext SOURCES kernels/scale.cl kernels/plain.cl DEVLIST DEVS NAME rc
                         CLANG_OPTIONS -DSCALE=${SCALE} -I${CMAKE_CURRENT_SOURCE_DIR}/include)
"""


def _checkout(root: Path) -> Path:
    """One checkout of a project whose kernel includes a header through a -I under the checkout."""
    (root / "kernels").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "CMakeLists.txt").write_text(HEADER_PROJECT)
    (root / "ext.c").write_text('#include "rc_aot.h"\nunsigned long n(void) { return aotwheel_rc_image_count; }\n')
    (root / "include" / "factor.h").write_text("#define FACTOR 3.0f\n")
    (root / "kernels" / "scale.cl").write_text(
        '#include "factor.h"\n__kernel void scale(__global float *a) { a[get_global_id(0)] *= SCALE * FACTOR; }\n')
    (root / "kernels" / "plain.cl").write_text("__kernel void plain(__global int *a) { a[get_global_id(0)] += 1; }\n")
    return root


def test_spirv_cache_across_checkouts_headers_and_defines(nginx, tmp_path):
    """Two machines (other checkout path, build dir and local cache): the second runs no clang; an
    edited header (found on the hit's depfile) and a changed -D each miss and rebuild."""
    wrapper, log = ocloc_logger(tmp_path / "bin")
    tools, clang_log, spirv_log = spirv_tools(tmp_path / "bin")
    env = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper), AOTWHEEL_REMOTE_CACHE=nginx.url(), **tools)
    a, b = _checkout(tmp_path / "alice" / "src"), _checkout(tmp_path / "bob" / "work" / "proj")
    _build(a, tmp_path / "m1", env, "-DUSE_AOT_DEVLIST=tgllp", "-DSCALE=2.0f")
    assert len(compile_runs(clang_log)) == len(compile_runs(spirv_log)) == 2
    _build(b, tmp_path / "m2", env, "-DUSE_AOT_DEVLIST=tgllp", "-DSCALE=2.0f")
    assert len(compile_runs(clang_log)) == len(compile_runs(spirv_log)) == 2  # machine 2: zero runs
    work1, work2 = (m / "build" / "aotwheel" / "rc" for m in (tmp_path / "m1", tmp_path / "m2"))
    assert (work2 / "scale.spv").read_bytes() == (work1 / "scale.spv").read_bytes()
    assert _images(tmp_path / "m2") == _images(tmp_path / "m1")
    # The hit's depfile names this checkout's header, as a compile's would ...
    dep1, dep2 = (w / "scale.spv.d" for w in (work1, work2))
    assert str(b / "include" / "factor.h") in dep2.read_text()
    assert dep2.read_text().replace(str(b), "<src>").replace(str(work2), "<w>") == \
        dep1.read_text().replace(str(a), "<src>").replace(str(work1), "<w>")
    # ... so ninja reruns the step when the header changes: a miss (the old entry does not fit), one compile.
    (b / "include" / "factor.h").write_text("#define FACTOR 5.0f\n")
    out = run(["ninja", "-C", str(tmp_path / "m2" / "build"), "-v"], env={**env, "AOTWHEEL_CACHE_DIR": str(tmp_path / "m2" / "cache")}).stdout
    assert "scale.cl -> SPIR-V: compiled" in out and "plain.cl -> SPIR-V" not in out
    assert len(compile_runs(clang_log)) == 3 and "scale.cl" in compile_runs(clang_log)[-1]
    assert (work2 / "scale.spv").read_bytes() != (work1 / "scale.spv").read_bytes()
    # Back to the old header: the manifest still holds that entry, so no compile.
    (b / "include" / "factor.h").write_text("#define FACTOR 3.0f\n")
    out = run(["ninja", "-C", str(tmp_path / "m2" / "build"), "-v"], env={**env, "AOTWHEEL_CACHE_DIR": str(tmp_path / "m2" / "cache")}).stdout
    assert "scale.cl -> SPIR-V: local" in out and len(compile_runs(clang_log)) == 3
    assert (work2 / "scale.spv").read_bytes() == (work1 / "scale.spv").read_bytes()
    # A changed -D (CLANG_OPTIONS): a different key, both sources compile.
    _build(b, tmp_path / "m2", env, "-DUSE_AOT_DEVLIST=tgllp", "-DSCALE=4.0f")
    assert len(compile_runs(clang_log)) == 5
    assert (work2 / "scale.spv").read_bytes() != (work1 / "scale.spv").read_bytes()


def test_damaged_remote_spirv_is_rebuilt_and_repaired_and_read_only_never_writes(project, nginx, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    tools, clang_log, _ = spirv_tools(tmp_path / "bin")
    base = build_env(tmp_path / "unused", AOTWHEEL_OCLOC=str(wrapper), **tools)
    env = {**base, "AOTWHEEL_REMOTE_CACHE": nginx.url()}
    # Read-only against an empty server: everything compiles, nothing is written.
    _build(project, tmp_path / "ro", {**env, "AOTWHEEL_REMOTE_CACHE_READONLY": "1"}, "-DUSE_AOT_DEVLIST=tgllp")
    assert len(compile_runs(clang_log)) == len(KERNELS)
    assert nginx.objects() == [] and "PUT" not in nginx.methods()
    _build(project, tmp_path / "m1", env, "-DUSE_AOT_DEVLIST=tgllp")
    assert len(compile_runs(clang_log)) == 2 * len(KERNELS)
    modules = [p for p in spirv_objects(nginx) if _payload(p)[:4] == b"\x03\x02\x23\x07"]
    assert len(modules) == len(KERNELS)
    good = {p: p.read_bytes() for p in modules}
    for p, blob in good.items():  # damage every SPIR-V module on the server's disk
        p.write_bytes(blob[:-8] + bytes(8))
    # Read-only machine: detects the damage (one warning), compiles, repairs nothing.
    out = _build(project, tmp_path / "m2", {**env, "AOTWHEEL_REMOTE_CACHE_READONLY": "1"}, "-DUSE_AOT_DEVLIST=tgllp")
    assert len(compile_runs(clang_log)) == 3 * len(KERNELS)
    assert [ln for ln in out.splitlines() if "aotwheel: warning:" in ln and "damaged object" in ln].__len__() == 1, out
    assert all(p.read_bytes() != good[p] for p in modules)
    # A writable machine: compiles again and overwrites the damaged objects with good ones.
    _build(project, tmp_path / "m3", env, "-DUSE_AOT_DEVLIST=tgllp")
    assert len(compile_runs(clang_log)) == 4 * len(KERNELS)
    assert all(p.read_bytes() == good[p] for p in modules)
    stats = json.loads(_cli("cache", "--json", env={**env, "AOTWHEEL_CACHE_DIR": str(tmp_path / "m3" / "cache")}).stdout)
    assert (stats["spirv_remote_failures"], stats["spirv_remote_stores"], stats["spirv_compiled"]) == \
        (len(KERNELS), 2 * len(KERNELS), len(KERNELS))
    assert stats["remote_failures"] == 0  # the device images' counts hold none of it
    # And a fourth machine runs no clang at all.
    _build(project, tmp_path / "m4", env, "-DUSE_AOT_DEVLIST=tgllp")
    assert len(compile_runs(clang_log)) == 4 * len(KERNELS)
    assert _images(tmp_path / "m4") == _images(tmp_path / "m1")
