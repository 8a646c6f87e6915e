"""A newcomer's first hour (issue 16): what they type and read, run for real.

tests/test_readme_blocks.py walks every README block in a fresh venv; these tests look closer at some.

The README's commands run as written on Debian 12 (python3, an activated .venv), its CMake lines
are the example's, and a typo in USE_AOT_DEVLIST is one unwrapped line a user sees first.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("builds")

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
TYPO_LINE = "USE_AOT_DEVLIST: unknown device 'pcv'; did you mean pvc?"


def _code(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def test_readme_cmake_lines_are_the_examples() -> None:
    example = (REPO / "examples" / "downstream" / "CMakeLists.txt").read_text()
    blocks = [b for b in _code(README, "cmake") if "aotwheel_add_device_code(" in b]
    assert blocks, "README lost its downstream CMake lines"
    for line in blocks[0].strip().splitlines():
        assert line in example.splitlines(), f"README line not in examples/downstream/CMakeLists.txt: {line}"


def test_readme_commands_use_python3_and_an_activated_venv() -> None:
    shell = "\n".join(_code(README, "sh") + _code(README, "console"))
    inline = re.findall(r"`([^`\n]+)`", README)
    # Debian 12 has python3 only; `python` exists only inside the activated .venv.
    assert not [c for c in inline + shell.splitlines() if re.match(r"\$?\s*python\s", c)]
    # pip and aotwheel commands come after the README tells how to activate .venv (PEP 668).
    activate = README.index(". .venv/bin/activate")
    assert activate < README.index("aotwheel inspect") and activate < README.index("USE_AOT_DEVLIST=pvc,ats-m150 pip install .")


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake and ninja (bash ci/setup.sh)")
def test_configure_typo_is_one_unwrapped_line(tmp_path: Path) -> None:
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(typo LANGUAGES NONE)\n"
        "find_package(aotwheel CONFIG REQUIRED)\naotwheel_resolve_devlist(DEVS)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("USE_AOT_")}
    env["USE_AOT_DEVLIST"] = "pcv"
    proc = subprocess.run(["cmake", "-G", "Ninja", "-S", str(tmp_path), "-B", str(tmp_path / "b"), f"-Daotwheel_DIR={REPO / 'cmake'}"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode != 0
    assert any(line.strip() == f"aotwheel_resolve_devlist: {TYPO_LINE}" for line in proc.stderr.splitlines()), proc.stderr


def test_pip_wheel_typo_is_the_first_and_only_build_output_line(tmp_path: Path) -> None:
    # The real `USE_AOT_DEVLIST=pcv pip wheel .` of this checkout (isolated build env and all).
    env = dict(os.environ, USE_AOT_DEVLIST="pcv")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(REPO)],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and not list(tmp_path.glob("*.whl"))
    lines = [line.strip() for line in out.splitlines()]
    box = next(i for i, line in enumerate(lines) if line.endswith("[1 lines of output]"))
    assert lines[box + 1] == f"aotwheel: error: {TYPO_LINE}", out[-3000:]
    assert "CMake" not in out and "ninja should not be" not in out


def _venv_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env["AOTWHEEL_CACHE_DIR"] = str(tmp_path / "cache")  # the user's build cache stays untouched
    return env


@pytest.fixture(scope="module")
def aotwheel_dist(tmp_path_factory: pytest.TempPathFactory, aotwheel_wheel: Path) -> Path:
    """This checkout's wheel, as `bash ci/main.sh` leaves it in dist/."""
    dist = tmp_path_factory.mktemp("dist")
    shutil.copy2(aotwheel_wheel, dist)
    return dist


def _clone_with_example(tmp_path: Path, dist: Path) -> Path:
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "examples" / "downstream", clone / "examples" / "downstream",
                    ignore=shutil.ignore_patterns("build", "dist", "*.whl"))
    shutil.copytree(dist, clone / "dist")
    return clone


def test_dead_remote_cache_is_visible_in_the_wheel_and_inspect(tmp_path: Path, aotwheel_dist: Path) -> None:
    """Issue 30 item 5: with the remote cache on a port where nothing listens, `pip wheel` succeeds
    and shows nothing; the wheel's manifest counts the failures and `aotwheel inspect` says so."""
    import json
    import socket
    import zipfile

    with socket.socket() as s:  # a port that was free a moment ago: connections are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clone = _clone_with_example(tmp_path, aotwheel_dist)
    env = _venv_env(tmp_path)
    env.update(USE_AOT_DEVLIST="pvc", AOTWHEEL_REMOTE_CACHE=f"http://127.0.0.1:{port}/aot")
    out = clone / "out"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--find-links", str(clone / "dist"), "-w", str(out)],
                          cwd=clone / "examples" / "downstream", capture_output=True, text=True, env=env, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = out.glob("aotdemo-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        manifest = json.loads(zf.read("aotdemo/_aot_manifest.json"))
    failures = manifest["remote_cache"]["failures"]
    assert failures >= 2, manifest["remote_cache"]  # at least the SPIR-V step and pvc's ocloc step asked the remote
    shown = subprocess.run([sys.executable, "-m", "aotwheel", "inspect", str(wheel)], capture_output=True, text=True, env=env,
                           timeout=300, check=False)
    assert shown.returncode == 0, shown.stderr
    assert f"aotdemo/_aot_manifest.json: built with {failures} remote-cache failures" in shown.stdout, shown.stdout


_NGINX_MAIN = """daemon off;
master_process off;
pid {root}/nginx.pid;
error_log {root}/error.log warn;
events {{ worker_connections 64; }}
http {{
  access_log {root}/access.log;
  client_body_temp_path {root}/body;
  proxy_temp_path {root}/proxy;
  fastcgi_temp_path {root}/fastcgi;
  uwsgi_temp_path {root}/uwsgi;
  scgi_temp_path {root}/scgi;
{server}
}}
"""


def test_readme_cache_server_configs_serve_aotwheels_stores(tmp_path: Path) -> None:
    """Issue 30 item 5: the README's nginx `server` block and redis.conf lines, as written (port,
    folder and bind address moved to this test's), serve aotwheel's HTTP and Redis stores."""
    from aotwheel.buildsteps.remote import config_from
    from benchmarks.servers import NGINX, REDIS, _wait_port, free_port

    if NGINX is None or REDIS is None:
        pytest.skip("needs nginx and redis-server (bash ci/setup.sh installs them)")
    (server,) = _code(README, "nginx")
    redis_blocks = [b for b in _code(README, "conf") if "maxmemory-policy" in b]
    assert len(redis_blocks) == 1, "README lost its redis.conf lines"
    nginx_port, redis_port = free_port(), free_port()
    dav = tmp_path / "dav"
    dav.mkdir()
    server = server.replace("listen 8080;", f"listen 127.0.0.1:{nginx_port};").replace("/var/cache/aotwheel-dav", str(dav))
    (tmp_path / "nginx.conf").write_text(_NGINX_MAIN.format(root=tmp_path, server=server))
    redis_conf = tmp_path / "redis.conf"
    redis_conf.write_text(redis_blocks[0] + f"port {redis_port}\nbind 127.0.0.1\nsave \"\"\ndir {tmp_path}\n")  # later lines win
    procs = [subprocess.Popen([NGINX, "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL),
             subprocess.Popen([REDIS, str(redis_conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        _wait_port(nginx_port, procs[0], "nginx")
        _wait_port(redis_port, procs[1], "redis-server")
        url = f"http://127.0.0.1:{nginx_port}/aotwheel|redis://127.0.0.1:{redis_port}/0"
        stores = config_from({"AOTWHEEL_REMOTE_CACHE": url}).stores()
        assert len(stores) == 2
        key = "ab" * 32
        for store in stores:
            assert store.get(key) is None
            store.put(key, b"device image")
            assert store.get(key) == b"device image" and store.exists(key)
        assert [p.read_bytes() for p in (dav / "aotwheel").rglob("*") if p.is_file()] == [b"device image"]  # nginx's disk
        policy = subprocess.run(["redis-cli", "-p", str(redis_port), "config", "get", "maxmemory-policy"], capture_output=True,
                                text=True, check=True).stdout.split()
        assert policy == ["maxmemory-policy", "allkeys-lru"]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


def test_activated_venv_shows_the_cpu_device_to_dpctl_too() -> None:
    """Issue 30 item 8: after `. .venv/bin/activate` (the README's step), dpctl sees Intel's CPU
    OpenCL device as `aotwheel devices` does, without sourcing .venv/opencl-cpu.env by hand."""
    activate = REPO / ".venv" / "bin" / "activate"
    if not activate.is_file() or not (REPO / ".venv" / "opencl-cpu.env").is_file():
        pytest.skip("no .venv with the CPU OpenCL runtime here (bash ci/test.sh makes it)")
    if subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-c", "import dpctl"], capture_output=True).returncode != 0:
        pytest.skip("dpctl is not installed in .venv (bash ci/test.sh installs it)")
    env = {k: v for k, v in os.environ.items() if k not in ("OCL_ICD_VENDORS", "OCL_ICD_FILENAMES", "VIRTUAL_ENV")}
    code = "import dpctl; print(sum(d.is_cpu for d in dpctl.get_devices()))"
    proc = subprocess.run(["bash", "-c", f". .venv/bin/activate && python -c '{code}'"], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.split()[-1]) >= 1
