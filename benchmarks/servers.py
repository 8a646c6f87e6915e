"""Real cache servers on loopback for the remote-cache tests and the scale-out benchmark.

``NginxDav``: Debian's nginx with the WebDAV module (``dav_methods PUT DELETE``,
``create_full_put_path on``) serving a temporary root; ``RedisServer``: ``redis-server`` with no
persistence. Each picks a free loopback port, waits until it answers, and ``stop()`` ends exactly
the process it started.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").is_file() else None)
REDIS = shutil.which("redis-server")

_NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
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
  client_max_body_size 0;
  server {{
    listen 127.0.0.1:{port}{tls};
    root {root}/store;
    location / {{
      {auth}
      dav_methods PUT DELETE;
      create_full_put_path on;
      dav_access user:rw;
    }}
  }}
}}
"""


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port}")


class _Server:
    """A server process the tests started; ``stop()`` ends it (SIGTERM, then SIGKILL after 10 s)."""

    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class NginxDav(_Server):
    """nginx + WebDAV on 127.0.0.1:<port>, files under ``<root>/store``."""

    def __init__(self, root: Path, *, bearer: str | None = None, tls: tuple[Path, Path] | None = None) -> None:
        if NGINX is None:
            raise RuntimeError("nginx is not installed (apt-get install nginx)")
        self.root = root
        self.store = root / "store"
        self.store.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        # With a token: anything else than "Authorization: Bearer <token>" gets 401.
        auth = f'if ($http_authorization != "Bearer {bearer}") {{ return 401; }}' if bearer else ""
        conf = root / "nginx.conf"
        # With tls=(certificate, key): HTTPS only, on the same port.
        self.scheme = "https" if tls else "http"
        listen = f" ssl;\n    ssl_certificate {tls[0]};\n    ssl_certificate_key {tls[1]}" if tls else ""
        conf.write_text(_NGINX_CONF.format(root=root, port=self.port, auth=auth, tls=listen))
        self.proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(root), "-e", str(root / "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _wait_port(self.port, self.proc, "nginx")

    def url(self, prefix: str = "/aot") -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{prefix}"

    def objects(self, prefix: str = "aot") -> list[Path]:
        """The objects on the server's disk (the server-side listing)."""
        return sorted(p for p in (self.store / prefix / "cas").glob("*") if p.is_file()) if (self.store / prefix).exists() else []

    def methods(self) -> list[str]:
        """HTTP methods in the access log, in order."""
        log = self.root / "access.log"
        return [line.split('"')[1].split(" ")[0] for line in log.read_text().splitlines() if '"' in line] if log.exists() else []



class RedisServer(_Server):
    """redis-server on 127.0.0.1:<port>, in memory only."""

    def __init__(self, root: Path, *, password: str | None = None) -> None:
        if REDIS is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        args = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(root), "--protected-mode", "no"]
        if password:
            args += ["--requirepass", password]
        self.password = password
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(self.port, self.proc, "redis-server")

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def _cli(self, *args: str) -> bytes:
        """redis-cli's output for one command (independent of aotwheel's RESP client)."""
        cli = shutil.which("redis-cli") or "redis-cli"
        auth = ["-a", self.password, "--no-auth-warning"] if self.password else []
        return subprocess.run([cli, "-p", str(self.port), *auth, *args], capture_output=True, check=True).stdout

    def command(self, *args: str) -> str:
        """Run one command through redis-cli."""
        return self._cli(*args).decode()

    def get(self, key: str) -> bytes:
        """One value's bytes through redis-cli (which ends its raw output with a newline)."""
        out = self._cli("--raw", "GET", key)
        return out[:-1] if out.endswith(b"\n") else out
