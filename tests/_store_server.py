"""A plain PUT/GET object store on loopback (any HTTP server that keeps what it is sent, as a CI
cache service does), and the same server playing a hostile or broken one for GET.

Not aotwheel's code: http.server from the standard library, so the tests' remote is independent
of the client under test. ``mode`` (settable while running) decides how a GET is answered:

- ``plain``: the stored object, or 404;
- ``huge``: ``Content-Length: 10**12`` and then a few bytes, held open;
- ``drip``: a 200 with a 1000-byte length, one byte every ``interval`` seconds;
- ``endless``: a 200 without a length, 64 KiB after 64 KiB until the client goes;
- ``hang``: the request is read, nothing is ever answered;
- ``500``: an internal server error;
- ``close``: a 200 with a 100000-byte length, 100 bytes, then the connection closes.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = ("huge", "drip", "endless", "hang", "500", "close")


class StoreServer:
    """``url()`` of a store at ``/aot``; ``objects`` its contents by path; ``methods`` each
    request's method, in order; ``stop()`` ends it (and every held connection)."""

    def __init__(self, mode: str = "plain", interval: float = 0.5) -> None:
        self.mode, self.interval = mode, interval
        self.objects: dict[str, bytes] = {}
        self.methods: list[str] = []
        self.connections = 0
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                server.connections += 1

            def do_PUT(self) -> None:
                server.methods.append("PUT")
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.objects[self.path] = body
                self._answer(201, b"")

            def do_HEAD(self) -> None:
                server.methods.append("HEAD")
                self._answer(200 if self.path in server.objects else 404, b"", head=True)

            def do_GET(self) -> None:
                server.methods.append("GET")
                mode = server.mode
                try:
                    if mode == "plain":
                        blob = server.objects.get(self.path)
                        self._answer(404 if blob is None else 200, blob or b"")
                    elif mode == "500":
                        self._answer(500, b"oops")
                    elif mode == "hang":
                        server._stop.wait()
                    elif mode == "huge":
                        self._head(200, {"Content-Length": str(10**12)})
                        self.wfile.write(b"aotwheel-cache-object 2 ")
                        self.wfile.flush()
                        server._stop.wait()
                    elif mode == "drip":
                        self._head(200, {"Content-Length": "1000"})
                        for _ in range(1000):
                            if server._stop.wait(server.interval):
                                return
                            self.wfile.write(b"x")
                            self.wfile.flush()
                    elif mode == "endless":
                        self._head(200, {"Connection": "close"})
                        chunk = b"y" * (64 << 10)
                        while not server._stop.is_set():
                            self.wfile.write(chunk)
                    elif mode == "close":
                        self._head(200, {"Content-Length": "100000"})
                        self.wfile.write(b"z" * 100)
                        self.wfile.flush()
                        self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _head(self, status: int, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()

            def _answer(self, status: int, body: bytes, head: bool = False) -> None:
                self._head(status, {"Content-Length": str(len(body))})
                if not head:
                    self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/aot"

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        time.sleep(0.05)  # let held handlers see the stop
