"""Remote device-code stores against REAL servers started here on loopback: Debian's nginx with
WebDAV and redis-server. Jobs run the real ocloc behind a logging wrapper; "machines" are separate
local cache roots and build dirs. Server-side facts (files on nginx's disk, its access log,
redis-cli) are read independently of aotwheel's clients."""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from aotwheel.backends.intel.buildsteps.ocloc_job import run_job
from aotwheel.buildsteps.cache import DeviceCodeCache
from aotwheel.buildsteps.remote import config_from
from aotwheel.buildsteps.tiers import Tiers
from aotwheel.errors import AotwheelError

from _build_util import REPO, compile_spirv, logged_runs, ocloc_logger, require
from conftest import CLANG, LLVM_SPIRV, run_tool, start_nginx, start_redis

MAGIC = b"aotwheel-cache-object 2 "
DEVICES = ("pvc", "tgllp")


@pytest.fixture(scope="module")
def spv(tmp_path_factory) -> Path:
    require(CLANG, LLVM_SPIRV, "ocloc")
    out = tmp_path_factory.mktemp("spv") / "reduce.spv"
    compile_spirv(REPO / "csrc" / "kernels" / "reduce.cl", out)
    return out


def _intact(blob: bytes, key: str | None = None) -> bool:
    """Independent check of a stored object: '<magic><key> <sha256 hex> <mac or ->\\n<payload>'."""
    head, _, payload = blob.partition(b"\n")
    fields = head[len(MAGIC):].decode().split(" ")
    return (head.startswith(MAGIC) and len(fields) == 3 and hashlib.sha256(payload).hexdigest() == fields[1]
            and (key is None or fields[0] == key))


def _machine(root: Path, url: str, **env: str) -> Tiers:
    """One 'machine': its own local cache root and build dir, the shared remote."""
    build = root / "build"
    build.mkdir(parents=True, exist_ok=True)
    local = DeviceCodeCache(root / "cache")
    cfg = config_from({"AOTWHEEL_REMOTE_CACHE": url, **env})
    return Tiers(local=local, stores=cfg.stores(), readonly=cfg.readonly, build_dir=build)


def _jobs(spv: Path, tiers: Tiers, wrapper: Path, tag: str):
    assert tiers.build_dir is not None
    return [run_job(spirv=str(spv), device=d, output=str(tiers.build_dir / f"{tag}.{d}.bin"), ocloc=str(wrapper),
                    ocloc_version="22.43", tiers=tiers) for d in DEVICES]


@pytest.mark.parametrize("kind", ["nginx", "redis"])
def test_second_machine_runs_zero_ocloc_and_gets_identical_bytes(kind, spv, tmp_path, request):
    server = request.getfixturevalue(kind)
    wrapper, log = ocloc_logger(tmp_path / "bin")
    first = _jobs(spv, _machine(tmp_path / "m1", server.url()), wrapper, "a")
    assert len(logged_runs(log)) == len(DEVICES) and {r.provenance for r in first} == {"compiled"}
    second = _jobs(spv, _machine(tmp_path / "m2", server.url()), wrapper, "b")
    assert len(logged_runs(log)) == len(DEVICES)  # no ocloc on the second machine
    assert [r.provenance for r in second] == ["remote"] * len(DEVICES)
    assert [r.output.read_bytes() for r in first] == [r.output.read_bytes() for r in second]
    # Server side, read without aotwheel: one intact object per device.
    if kind == "nginx":
        blobs = [p.read_bytes() for p in server.objects()]
        assert server.methods().count("PUT") == len(DEVICES)
    else:
        keys = server.command("KEYS", "aotwheel:*").split()
        assert len(keys) == len(DEVICES)
        blobs = [server.get(k) for k in keys]
    assert len(blobs) == len(DEVICES) and all(_intact(b) for b in blobs)
    # The read-through kept them locally: a third run on machine 2 is all local hits.
    again = _jobs(spv, _machine(tmp_path / "m2", server.url()), wrapper, "c")
    assert [r.provenance for r in again] == ["local"] * len(DEVICES)


def test_corrupted_object_is_detected_rebuilt_and_repaired(spv, nginx, tmp_path, capfd):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    _jobs(spv, _machine(tmp_path / "m1", nginx.url()), wrapper, "a")
    victim = nginx.objects()[0]
    blob = bytearray(victim.read_bytes())
    blob[-50] ^= 0x01  # one flipped bit in the payload
    victim.write_bytes(bytes(blob))
    truncated = nginx.objects()[1]
    truncated.write_bytes(truncated.read_bytes()[:1000])  # an interrupted upload of another store
    capfd.readouterr()
    res = _jobs(spv, _machine(tmp_path / "m2", nginx.url()), wrapper, "b")
    assert len(logged_runs(log)) == len(DEVICES) * 2  # both damaged objects were compiled again
    assert {r.provenance for r in res} == {"compiled"}
    warnings = [ln for ln in capfd.readouterr().err.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "damaged object" in warnings[0]
    assert all(_intact(p.read_bytes()) for p in nginx.objects())  # repaired on the server
    third = _jobs(spv, _machine(tmp_path / "m3", nginx.url()), wrapper, "c")
    assert [r.provenance for r in third] == ["remote"] * len(DEVICES)


def test_readonly_reads_but_never_writes(spv, nginx, redis, tmp_path):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    url = f"{nginx.url()}|{redis.url()}"
    _jobs(spv, _machine(tmp_path / "m1", url, AOTWHEEL_REMOTE_CACHE_READONLY="1"), wrapper, "a")
    assert len(logged_runs(log)) == len(DEVICES)
    assert nginx.objects() == [] and "PUT" not in nginx.methods()
    assert redis.command("DBSIZE").strip() == "0"
    # A trusted build fills the stores; a read-only one then hits them.
    _jobs(spv, _machine(tmp_path / "m2", url), wrapper, "b")
    assert len(logged_runs(log)) == 2 * len(DEVICES)  # nothing was pushed by m1: m2 compiled again
    assert len(nginx.objects()) == len(DEVICES) and redis.command("DBSIZE").strip() == str(len(DEVICES))
    puts = nginx.methods().count("PUT")
    ro = _jobs(spv, _machine(tmp_path / "m3", url, AOTWHEEL_REMOTE_CACHE_READONLY="1"), wrapper, "c")
    assert [r.provenance for r in ro] == ["remote"] * len(DEVICES)
    assert nginx.methods().count("PUT") == puts  # the read-only hit wrote nothing back


def test_server_killed_during_build_gives_one_warning_and_a_good_build(spv, nginx, tmp_path, capfd):
    wrapper, log = ocloc_logger(tmp_path / "bin")
    tiers = _machine(tmp_path / "m1", nginx.url())
    first = run_job(spirv=str(spv), device="pvc", output=str(tmp_path / "m1" / "build" / "a.bin"),
                    ocloc=str(wrapper), ocloc_version="22.43", tiers=tiers)
    nginx.stop()  # mid-build: the next jobs find nothing listening
    rest = [run_job(spirv=str(spv), device=d, output=str(tmp_path / "m1" / "build" / f"a.{d}.bin"),
                    ocloc=str(wrapper), ocloc_version="22.43", tiers=tiers) for d in ("tgllp", "acm-g10", "dg1")]
    assert first.provenance == "compiled" and {r.provenance for r in rest} == {"compiled"}
    assert all(r.size > 0 for r in rest)
    err = capfd.readouterr().err
    warnings = [ln for ln in err.splitlines() if ln.startswith("aotwheel: warning:")]
    assert len(warnings) == 1, err
    assert "remote cache" in warnings[0] and "127.0.0.1" in warnings[0]
    stats = tiers.local.stats()
    # each later job: its GET failed, so no PUT was tried; the first job pushed its result
    assert (stats.remote_failures, stats.remote_stores, stats.remote_misses) == (3, 1, 1)


def test_credentials_never_appear_in_output(spv, tmp_path, capfd):
    token = "tok-SECRET-4711"
    server = start_nginx(tmp_path / "nginx", bearer=token)
    try:
        wrapper, log = ocloc_logger(tmp_path / "bin")
        # Right token: works. Wrong password in the URL and a wrong token: 401 -> warning without them.
        ok = _jobs(spv, _machine(tmp_path / "m1", server.url(), AOTWHEEL_REMOTE_CACHE_TOKEN=token), wrapper, "a")
        assert len(server.objects()) == len(DEVICES) and {r.provenance for r in ok} == {"compiled"}
        capfd.readouterr()
        url = server.url().replace("http://", "http://alice:pw-SECRET-0815@")
        _jobs(spv, _machine(tmp_path / "m2", url), wrapper, "b")
        _jobs(spv, _machine(tmp_path / "m3", server.url(), AOTWHEEL_REMOTE_CACHE_TOKEN="tok-SECRET-bad"), wrapper, "c")
        port = server.port
    finally:
        server.stop()
    _jobs(spv, _machine(tmp_path / "m4", f"redis://bob:pw-SECRET-0815@127.0.0.1:{port}/0"), wrapper, "d")
    out = capfd.readouterr()
    text = out.out + out.err
    assert "HTTP 401" in text and "warning" in text
    assert "SECRET" not in text and "alice" not in text and "bob" not in text
    events = (tmp_path / "m2" / "cache" / "v2" / "events.log").read_text()
    assert "SECRET" not in events and "remote-fail" in events


def test_a_server_that_never_answers_times_out(spv, tmp_path, capfd):
    """A listener that accepts and stays silent: the read timeout ends the wait, the job compiles."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        wrapper, log = ocloc_logger(tmp_path / "bin")
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/aot"
        tiers = _machine(tmp_path / "m", url, AOTWHEEL_REMOTE_CACHE_TIMEOUT="0.5,0.3")
        res = run_job(spirv=str(spv), device="pvc", output=str(tmp_path / "m" / "build" / "a.bin"),
                      ocloc=str(wrapper), ocloc_version="22.43", tiers=tiers)
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        sock.close()
    assert res.provenance == "compiled" and len(logged_runs(log)) == 1
    assert "timed out" in capfd.readouterr().err


@pytest.mark.parametrize(
    "env,fix",
    [({"AOTWHEEL_REMOTE_CACHE": "ftp://user:SECRET@host/x"}, "use http://, https:// or redis://"),
     ({"AOTWHEEL_REMOTE_CACHE": "redis://h:1/abc"}, "must be a number"),
     ({"AOTWHEEL_REMOTE_CACHE": "http://h:99999999/x"}, "bad port"),
     ({"AOTWHEEL_REMOTE_CACHE_READONLY": "maybe"}, "is not a boolean; use ON or OFF"),
     ({"AOTWHEEL_REMOTE_CACHE_TIMEOUT": "fast"}, "e.g. 1,10"),
     # Header and request-line injection: the client writes both itself.
     ({"AOTWHEEL_REMOTE_CACHE": "http://h:1/x", "AOTWHEEL_REMOTE_CACHE_TOKEN": "SECRET\r\nX-Evil: 1"}, "set it to the bare token"),
     ({"AOTWHEEL_REMOTE_CACHE": "http://h:1/my cache"}, "percent-encode it")],
)
def test_bad_settings_are_one_line_errors_without_secrets(env, fix):
    with pytest.raises(AotwheelError) as err:
        config_from(env).stores()
    msg = str(err.value)
    assert fix in msg and "\n" not in msg and "SECRET" not in msg


def test_defaults_and_cmake_settings_win_over_the_environment():
    cfg = config_from({"AOTWHEEL_REMOTE_CACHE": "http://a/x"}, {"AOTWHEEL_REMOTE_CACHE": "redis://b/1|http://c/y"})
    assert cfg.urls == ("redis://b/1", "http://c/y") and not cfg.readonly
    assert (cfg.timeouts.connect, cfg.timeouts.read) == (1.0, 10.0)
    assert "t0k" not in repr(config_from({"AOTWHEEL_REMOTE_CACHE_TOKEN": "t0k"}))


@pytest.mark.parametrize("kind", ["nginx", "redis"])
def test_concurrent_writers_and_readers_of_one_key_never_see_a_partial_object(kind, request):
    """Eight writers PUT/SET the same 500 kB object while eight readers GET it: every read is a miss
    or the whole, intact object (nginx renames a complete temporary file; Redis SET is atomic)."""
    from concurrent.futures import ThreadPoolExecutor

    from aotwheel.buildsteps.cache import pack_object, unpack_object

    server = request.getfixturevalue(kind)
    store = config_from({"AOTWHEEL_REMOTE_CACHE": server.url()}).stores()[0]
    key = "c" * 64
    blobs = [pack_object(bytes([i]) * 500_000, key) for i in range(8)]

    written = threading.Event()

    def write(i: int) -> None:
        for _ in range(3):
            store.put(key, blobs[i])
        written.set()

    def read(_: int) -> list[bytes | None]:
        out = [store.get(key) for _ in range(6)]
        if not any(out):  # under load all six could end before any SET/PUT completes: read once more after one has
            written.wait(timeout=60)
            out.append(store.get(key))
        return out

    with ThreadPoolExecutor(16) as pool:
        writers = [pool.submit(write, i) for i in range(8)]
        readers = [pool.submit(read, i) for i in range(8)]
        for w in writers:
            w.result()
        seen = [b for r in readers for b in r.result()]
    got = [b for b in seen if b is not None]
    assert got, "no read saw the object"
    assert all(unpack_object(b, key)[0] is not None and b in blobs for b in got)
    assert store.get(key) in blobs


def test_build_cache_cli_names_the_stores_without_credentials(tmp_path):
    import os
    import subprocess

    from _build_util import PYTHONPATH

    env = dict(os.environ, PYTHONPATH=PYTHONPATH, AOTWHEEL_CACHE_DIR=str(tmp_path),
               AOTWHEEL_REMOTE_CACHE="http://u:pw-SECRET@cache.example:8080/aot?x=SECRET|redis://:SECRET@r:6379/2",
               AOTWHEEL_REMOTE_CACHE_TOKEN="tok-SECRET")
    proc = subprocess.run([sys.executable, "-m", "aotwheel", "build", "cache"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "http://cache.example:8080/aot" in proc.stdout and "redis://r:6379/2" in proc.stdout
    assert "SECRET" not in proc.stdout + proc.stderr


def _self_signed(work: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 from the real openssl tool (its own CA)."""
    require("openssl")
    work.mkdir(parents=True, exist_ok=True)
    cert, key = work / "cert.pem", work / "key.pem"
    run_tool(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
              "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)])
    return cert, key


def test_https_store_verifies_the_server_against_the_trust_store(spv, tmp_path, capfd, monkeypatch):
    """https:// goes through TLS with certificate checks (the system store; a private CA via
    SSL_CERT_FILE, as for pip and curl): trusted -> shared; untrusted -> one warning, compiled."""
    cert, key = _self_signed(tmp_path / "tls")
    server = start_nginx(tmp_path / "nginx", tls=(cert, key))
    try:
        assert server.url().startswith("https://")
        wrapper, log = ocloc_logger(tmp_path / "bin")
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        first = _jobs(spv, _machine(tmp_path / "m1", server.url()), wrapper, "a")
        assert {r.provenance for r in first} == {"compiled"} and len(server.objects()) == len(DEVICES)
        assert all(_intact(p.read_bytes()) for p in server.objects())
        before = logged_runs(log)
        second = _jobs(spv, _machine(tmp_path / "m2", server.url()), wrapper, "b")
        assert {r.provenance for r in second} == {"remote"} and logged_runs(log) == before
        capfd.readouterr()
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "tls" / "nothing-trusted.pem"))
        (tmp_path / "tls" / "nothing-trusted.pem").write_text("")
        third = _jobs(spv, _machine(tmp_path / "m3", server.url()), wrapper, "c")
    finally:
        server.stop()
    assert {r.provenance for r in third} == {"compiled"}
    err = capfd.readouterr().err
    warnings = [ln for ln in err.splitlines() if ln.startswith("aotwheel: warning:")]
    assert len(warnings) == 1 and "CERTIFICATE_VERIFY_FAILED" in warnings[0].upper().replace(" ", "_"), err


def test_redis_password_from_the_url_authenticates_and_never_shows(spv, tmp_path, capfd):
    server = start_redis(tmp_path / "redis", password="pw-SECRET-2718")
    try:
        wrapper, log = ocloc_logger(tmp_path / "bin")
        url = server.url().replace("redis://", "redis://:pw-SECRET-2718@")
        first = _jobs(spv, _machine(tmp_path / "m1", url), wrapper, "a")
        keys = server.command("KEYS", "*").split()
        assert {r.provenance for r in first} == {"compiled"} and len(keys) == len(DEVICES)
        assert all(_intact(server.get(k)) for k in keys)  # read back by redis-cli, not by us
        before = logged_runs(log)
        assert {r.provenance for r in _jobs(spv, _machine(tmp_path / "m2", url), wrapper, "b")} == {"remote"}
        assert logged_runs(log) == before
        capfd.readouterr()
        wrong = _jobs(spv, _machine(tmp_path / "m3", url.replace("2718", "0000")), wrapper, "c")
        no_password = _jobs(spv, _machine(tmp_path / "m4", server.url()), wrapper, "d")
    finally:
        server.stop()
    assert {r.provenance for r in wrong + no_password} == {"compiled"}
    out = capfd.readouterr()
    text = out.out + out.err
    warnings = [ln for ln in text.splitlines() if ln.startswith("aotwheel: warning:")]
    assert len(warnings) == 2 and "WRONGPASS" in warnings[0] and "NOAUTH" in warnings[1], text
    assert "SECRET" not in text and "0000" not in text


def test_no_remote_setting_no_stores_module_in_the_ocloc_step(tmp_path):
    """Each ocloc edge starts a Python process: without any remote setting it must not pay for
    importing the stores (socket, urllib); with one, Tiers.for_build reads it as before."""
    import subprocess

    code = ("import sys; from pathlib import Path; from aotwheel.buildsteps.tiers import Tiers, load_settings;"
            "t = Tiers.for_build(Path(sys.argv[1]), load_settings(sys.argv[2]));"
            "print(len(t.stores), t.readonly, 'aotwheel.buildsteps.remote' in sys.modules, 'socket' in sys.modules)")
    settings = tmp_path / "remote-settings"
    settings.write_text("AOTWHEEL_SHARD=1/2\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "python"), "AOTWHEEL_CACHE_DIR": str(tmp_path / "cache")}

    def probe(text: str, **extra: str) -> str:
        settings.write_text(text)
        return subprocess.run([sys.executable, "-c", code, str(tmp_path), str(settings)], env={**env, **extra},
                              capture_output=True, text=True, check=True).stdout.split()

    assert probe("AOTWHEEL_SHARD=1/2\nAOTWHEEL_REMOTE_CACHE=\n") == ["0", "False", "False", "False"]
    assert probe("AOTWHEEL_REMOTE_CACHE=http://127.0.0.1:9/c\nAOTWHEEL_REMOTE_CACHE_READONLY=1\n") == ["1", "True", "True", "True"]
    assert probe("", AOTWHEEL_REMOTE_CACHE="redis://127.0.0.1:9") == ["1", "False", "True", "True"]
    bad = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(settings)],
                         env={**env, "AOTWHEEL_REMOTE_CACHE_READONLY": "maybe"}, capture_output=True, text=True)
    assert bad.returncode != 0 and "AOTWHEEL_REMOTE_CACHE_READONLY='maybe' is not a boolean" in bad.stderr


def test_settings_file_names_cover_the_remote_settings():
    from aotwheel.buildsteps.remote import SETTINGS
    from aotwheel.buildsteps.tiers import SETTING_NAMES

    assert set(SETTINGS) | {"AOTWHEEL_SHARD"} == set(SETTING_NAMES)


@pytest.mark.parametrize("reply", [b":abc\r\n", b"$--5\r\n", b"$x\r\n", b"*1\r\n" * 50, b"?\r\n", b"+OK"])
def test_a_redis_store_that_answers_nonsense_is_a_remote_failure_not_a_crash(reply):
    """A listener that answers each connection with a malformed RESP reply (or one cut short):
    the store raises RemoteError, which the build turns into one warning and a compile."""
    from aotwheel.buildsteps.remote import RemoteError

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)

    def answer() -> None:
        conn, _ = sock.accept()
        with conn:
            conn.recv(1 << 16)
            conn.sendall(reply)

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    try:
        store = config_from({"AOTWHEEL_REMOTE_CACHE": f"redis://127.0.0.1:{sock.getsockname()[1]}",
                             "AOTWHEEL_REMOTE_CACHE_TIMEOUT": "1,2"}).stores()[0]
        with pytest.raises(RemoteError) as err:
            store.get("d" * 64)
    finally:
        t.join(timeout=5)
        sock.close()
    assert "\n" not in str(err.value)


def test_a_large_object_round_trips_through_redis(redis):
    # 24 MB arrives in hundreds of recv() pieces (a fat binary of many targets can be that large).
    from aotwheel.buildsteps.cache import pack_object, unpack_object

    store = config_from({"AOTWHEEL_REMOTE_CACHE": redis.url()}).stores()[0]
    blob = pack_object(os.urandom(1 << 20) * 24, "e" * 64)
    store.put("e" * 64, blob)
    assert store.get("e" * 64) == blob and unpack_object(blob, "e" * 64)[0] is not None
