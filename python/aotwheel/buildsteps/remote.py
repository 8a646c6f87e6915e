"""Remote device-code stores behind the local cache: HTTP/WebDAV and Redis (standard library only).

``AOTWHEEL_REMOTE_CACHE`` names one or more stores, separated by ``|`` and tried in order:

* ``http://[user:pass@]host[:port]/prefix`` (or ``https://``): one object per key at
  ``<prefix>/cas/<key>`` with plain ``GET``/``HEAD``/``PUT``, which any WebDAV server (nginx's dav
  module) serves (not bazel-remote: its ``/cas/`` entries must be named by their content's sha256,
  our keys hash the inputs); ``https://`` verifies the server against the default trust store
  (``SSL_CERT_FILE`` adds a private CA);
* ``redis://[[user]:pass@]host[:port][/db]``: one Redis key ``aotwheel:<key>`` per object, as
  ccache's Redis storage keeps one key per result.

Objects carry the local cache's header (:func:`~aotwheel.buildsteps.cache.pack_object`: the key
they were stored under and the payload's sha256) and are checked on every read: an object
stored under another key is refused as a miss, with one warning naming it.
``AOTWHEEL_REMOTE_CACHE_SECRET`` signs what this build writes (HMAC-SHA256 over key and content)
and makes unsigned or foreign objects misses (docs/reliability.md: why HMAC, the threat model).
``AOTWHEEL_REMOTE_CACHE_READONLY=1`` reads but never writes (untrusted builds: pull requests).
``AOTWHEEL_REMOTE_CACHE_TOKEN`` is sent as ``Authorization: Bearer`` (HTTP) or ``AUTH`` (Redis).
The remote never fails a build: any failure (unreachable, refused, bad status, timeout, damaged
object) is one warning line per build, then the job compiles as on a miss and (unless read-only)
overwrites the bad object. Credentials never appear in a warning: stores are named by
:func:`redact`.

A remote costs bounded time and memory: ``AOTWHEEL_REMOTE_CACHE_TIMEOUT=connect[,read[,request[,step]]]``
seconds (default 1, 10, 20, 40): to connect, to wait for each read, for a whole request (however
slowly the bytes drip in) and for all the requests of one build step (process); an answer larger
than the caller's limit (a multiple of the object's expected size) is refused before it is read.
A store that failed is not asked again by this process, nor (through a marker in the build tree)
by the build's later steps for :data:`RETRY_AFTER` seconds.
"""

from __future__ import annotations

import io
import os
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from aotwheel.errors import AotwheelError
from aotwheel.variables import REMOTE_CACHE, REMOTE_CACHE_READONLY, REMOTE_CACHE_SECRET, REMOTE_CACHE_TIMEOUT, REMOTE_CACHE_TOKEN, flag

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (as in tiers.py)
if TYPE_CHECKING:
    from typing import BinaryIO, Protocol

ENV_URL, ENV_READONLY, ENV_TOKEN, ENV_TIMEOUT, ENV_SECRET = (REMOTE_CACHE.name, REMOTE_CACHE_READONLY.name,
                                                             REMOTE_CACHE_TOKEN.name, REMOTE_CACHE_TIMEOUT.name,
                                                             REMOTE_CACHE_SECRET.name)
SETTINGS = (ENV_URL, ENV_READONLY, ENV_TOKEN, ENV_TIMEOUT, ENV_SECRET)
#: the largest answer any get() reads when its caller names no limit
DEFAULT_LIMIT = 256 << 20
#: seconds a failed store stays skipped by the later steps of the same build
RETRY_AFTER = 300


class RemoteError(Exception):
    """One failed exchange with a store; the message never holds credentials."""


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds to connect, to wait for each read, for one whole request and for all the requests
    of one build step (one process)."""

    connect: float = 1.0
    read: float = 10.0
    request: float = 20.0
    step: float = 40.0


class _Breaker:
    """What both stores share: the time spent (bounded per request and per step) and the memory
    of a failure, in this process and, through ``marker`` (a file in the build tree), in the
    build's other steps."""

    name: str
    _timeouts: Timeouts

    def _init_breaker(self, timeouts: Timeouts) -> None:
        self._timeouts = timeouts
        self._spent = 0.0
        self.down: str | None = None
        self.marker: Path | None = None  # set by Tiers.for_build

    def _deadline(self) -> float:
        """The monotonic time the next request must end by; a store that failed, in this step or
        recently in another step of the build, is a RemoteError at once."""
        if self.down is None and self.marker is not None:
            try:
                st = os.stat(self.marker)
                if time.time() - st.st_mtime < RETRY_AFTER:
                    self.down = self.marker.read_text(errors="replace").strip()[:300] or f"{self.name}: failed"
            except OSError:
                pass
        if self.down is not None:
            raise RemoteError(self.down)
        left = self._timeouts.step - self._spent
        if left <= 0:
            self._trip(RemoteError(f"{self.name}: used up this step's {self._timeouts.step:g} s for remote requests"))
        return time.monotonic() + min(self._timeouts.request, left)

    def _trip(self, exc: RemoteError) -> None:
        """Remember the failure (skip this store from now on) and raise it."""
        self.down = str(exc)
        if self.marker is not None:
            try:
                self.marker.write_text(f"{exc} (in an earlier step of this build)\n")
            except OSError:
                pass
        raise exc

    def _timed(self, fn, *args):  # type: ignore[no-untyped-def]
        """``fn(deadline, *args)`` with its time counted against the step; a RemoteError trips."""
        deadline = self._deadline()
        start = time.monotonic()
        try:
            return fn(deadline, *args)
        except RemoteError as exc:
            self._trip(exc)
        finally:
            self._spent += time.monotonic() - start


class _DeadlineIO(io.RawIOBase):
    """A socket's reads, each waiting at most the read timeout and none past the deadline: a
    server that drips one byte every few seconds cannot hold a request open longer than that."""

    def __init__(self, sock: socket.socket, read: float, deadline: float) -> None:
        self._sock, self._read, self._deadline = sock, read, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self._sock.settimeout(min(self._read, left))
        return self._sock.recv_into(b)


if TYPE_CHECKING:  # a type only (HttpStore, RedisStore): no typing import in the build steps

    class Store(Protocol):
        """One remote store: objects by key (hex sha256). ``get`` returns ``None`` on a miss."""

        name: str
        marker: Path | None  # the build tree's note that this store failed (Tiers.for_build)
        down: str | None  # why this process skips the store, or None

        def get(self, key: str, limit: int = ...) -> bytes | None: ...

        def exists(self, key: str) -> bool: ...

        def put(self, key: str, blob: bytes) -> None: ...


def redact(url: str) -> str:
    """``url`` without user, password, query or fragment: safe for any log line."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _address(host: str) -> str | bytes:
    """``host`` for getaddrinfo: an ASCII name as bytes, so Python does not import the idna codec
    (~4 ms of every step process) to encode it."""
    return host.encode("ascii") if host.isascii() else host


class HttpStore(_Breaker):
    """``GET``/``HEAD``/``PUT`` of ``<prefix>/cas/<key>`` (WebDAV, plain HTTP stores)."""

    def __init__(self, url: str, token: str | None, timeouts: Timeouts) -> None:
        self._init_breaker(timeouts)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise AotwheelError(f"{ENV_URL}: '{redact(url)}' is not an http(s)://host[:port]/prefix URL; fix it")
        self.name = redact(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        try:
            self._port = parts.port
        except ValueError:
            raise AotwheelError(f"{ENV_URL}: '{self.name}' has a bad port; fix it") from None
        self._prefix = parts.path.rstrip("/")
        if not self._prefix.isascii() or any(c <= " " or c == "\x7f" for c in self._prefix):
            raise AotwheelError(f"{ENV_URL}: the path of '{self.name}' has a space, control or non-ASCII character; "
                                "percent-encode it (%20)")
        self._headers: dict[str, str] = {}
        if token:
            if not all(" " <= c <= "~" for c in token):  # it goes into a header line as it is
                raise AotwheelError(f"{ENV_TOKEN} holds a line break, control or non-ASCII character; set it to the bare token")
            self._headers["Authorization"] = f"Bearer {token}"
        elif parts.username is not None:
            import base64

            cred = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(cred).decode()

    def _request(self, method: str, key: str, body: bytes | None = None, limit: int = DEFAULT_LIMIT) -> tuple[int, bytes]:
        """One HTTP/1.1 exchange (see :meth:`_exchange`) within the step's time bounds."""
        return self._timed(self._exchange, method, key, body, limit)  # type: ignore[no-any-return]

    def _exchange(self, deadline: float, method: str, key: str, body: bytes | None, limit: int) -> tuple[int, bytes]:
        """One HTTP/1.1 exchange on its own connection (``Connection: close``), ended by ``deadline``.

        Written on the socket module rather than http.client: every ocloc and SPIR-V edge is a
        process of its own that makes a few requests, and importing http.client (email, ssl) cost
        ~25 ms of each such process's ~120 ms.
        """
        host = f"[{self._host}]" if ":" in self._host else self._host
        if self._port is not None:
            host += f":{self._port}"
        lines = [f"{method} {self._prefix}/cas/{key} HTTP/1.1", f"Host: {host}", "Connection: close",
                 "Accept-Encoding: identity", "User-Agent: aotwheel"]
        lines += [f"{name}: {value}" for name, value in self._headers.items()]
        if body is not None:
            lines += ["Content-Type: application/octet-stream", f"Content-Length: {len(body)}"]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
        port = self._port if self._port is not None else (443 if self._https else 80)
        try:
            connect = max(0.001, min(self._timeouts.connect, deadline - time.monotonic()))
            sock = socket.create_connection((_address(self._host), port), timeout=connect)  # type: ignore[arg-type]
        except TimeoutError:
            raise RemoteError(f"{self.name}: timed out") from None
        except OSError as exc:
            raise RemoteError(f"{self.name}: {type(exc).__name__}: {exc.strerror or exc}") from None
        try:
            if self._https:
                import ssl  # only for https:// stores (~8 ms)

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self._host)
            sock.settimeout(max(0.001, min(self._timeouts.read, deadline - time.monotonic())))
            sock.sendall(request)
            with io.BufferedReader(_DeadlineIO(sock, self._timeouts.read, deadline)) as fp:
                return read_http_response(fp, head_only=method == "HEAD", limit=limit)
        except TimeoutError:
            raise RemoteError(f"{self.name}: timed out") from None
        except HttpProtocolError as exc:
            raise RemoteError(f"{self.name}: {exc}") from None
        except OSError as exc:
            raise RemoteError(f"{self.name}: {type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}") from None
        finally:
            sock.close()

    def get(self, key: str, limit: int = DEFAULT_LIMIT) -> bytes | None:
        status, data = self._request("GET", key, limit=limit)
        if status == 404:
            return None
        if status != 200:
            self._trip(RemoteError(f"{self.name}: GET answered HTTP {status}"))
        return data

    def exists(self, key: str) -> bool:
        status, _ = self._request("HEAD", key)
        if status in (200, 404):
            return status == 200
        self._trip(RemoteError(f"{self.name}: HEAD answered HTTP {status}"))
        return False

    def put(self, key: str, blob: bytes) -> None:
        status, _ = self._request("PUT", key, blob)
        if status not in (200, 201, 204):
            raise RemoteError(f"{self.name}: PUT answered HTTP {status}")


class RedisStore(_Breaker):
    """One key ``aotwheel:<key>`` per object over RESP (``GET``, ``EXISTS``, ``SET``)."""

    def __init__(self, url: str, token: str | None, timeouts: Timeouts) -> None:
        self._init_breaker(timeouts)
        parts = urlsplit(url)
        self.name = redact(url)
        if parts.scheme != "redis" or not parts.hostname:
            raise AotwheelError(f"{ENV_URL}: '{self.name}' is not a redis://host[:port][/db] URL; fix it")
        self._host = parts.hostname
        try:
            self._port = parts.port or 6379
        except ValueError:
            raise AotwheelError(f"{ENV_URL}: '{self.name}' has a bad port; fix it") from None
        db = parts.path.strip("/")
        if db and not db.isdigit():
            raise AotwheelError(f"{ENV_URL}: '{self.name}': the database must be a number (redis://host:port/0); fix it")
        self._db = db
        self._auth: list[bytes] = []
        if token:
            self._auth = [token.encode()]
        elif parts.password is not None:
            user = unquote(parts.username or "")
            self._auth = ([user.encode()] if user else []) + [unquote(parts.password).encode()]

    def _call(self, *commands: list[bytes], limit: int = DEFAULT_LIMIT) -> list[object]:
        """Send the commands on one connection (after AUTH/SELECT); return their replies."""
        return self._timed(self._exchange, commands, limit)  # type: ignore[no-any-return]

    def _exchange(self, deadline: float, commands: tuple[list[bytes], ...], limit: int) -> list[object]:
        pre: list[list[bytes]] = []
        if self._auth:
            pre.append([b"AUTH", *self._auth])
        if self._db:
            pre.append([b"SELECT", self._db.encode()])
        todo = pre + list(commands)
        try:
            address = (_address(self._host), self._port)
            connect = max(0.001, min(self._timeouts.connect, deadline - time.monotonic()))
            with socket.create_connection(address, timeout=connect) as sock:  # type: ignore[arg-type]
                sock.settimeout(max(0.001, min(self._timeouts.read, deadline - time.monotonic())))
                sock.sendall(b"".join(_encode(c) for c in todo))
                reader = _Reader(sock, self._timeouts.read, deadline, limit)
                replies = [reader.reply() for _ in todo]
        except TimeoutError:
            raise RemoteError(f"{self.name}: timed out") from None
        except OSError as exc:
            raise RemoteError(f"{self.name}: {type(exc).__name__}: {exc.strerror or exc}") from None
        for r in replies:
            if isinstance(r, _RedisError):  # AUTH/SELECT/command refused: the server's words, no secrets
                raise RemoteError(f"{self.name}: {r.message[:120]}")
        return replies[len(pre):]

    def get(self, key: str, limit: int = DEFAULT_LIMIT) -> bytes | None:
        reply = self._call([b"GET", f"aotwheel:{key}".encode()], limit=limit)[0]
        if reply is None or isinstance(reply, bytes):
            return reply
        raise RemoteError(f"{self.name}: unexpected reply to GET")

    def exists(self, key: str) -> bool:
        return self._call([b"EXISTS", f"aotwheel:{key}".encode()])[0] == 1

    def put(self, key: str, blob: bytes) -> None:
        # One SET: Redis makes it visible whole or not at all, whoever else writes the key.
        self._call([b"SET", f"aotwheel:{key}".encode(), blob])


class HttpProtocolError(Exception):
    """A response that is not the HTTP/1.x this client understands (the message says what)."""


_HTTP_HEAD_LIMIT = 64 << 10  # status line + headers; nginx's own default limit is 8-32 kB
_HTTP_LINE_LIMIT = 4096  # one chunk-size or trailer line


def read_http_response(fp: BinaryIO, *, head_only: bool = False, limit: int = DEFAULT_LIMIT) -> tuple[int, bytes]:
    """(status, body) of one HTTP/1.x response read from ``fp`` (a buffered binary reader: the
    socket's ``makefile("rb")``, as http.client reads) until the body ends.

    The body is delimited by ``Transfer-Encoding: chunked``, ``Content-Length`` or the end of the
    connection (the request said ``Connection: close``); none for HEAD, 1xx, 204 and 304. Interim
    1xx responses are skipped. Bounded: the head may take 64 kB, a chunk-size or trailer line 4 kB,
    the body ``limit`` bytes (a longer one, declared or sent, is refused before it is read whole);
    a body shorter than its declared length, a malformed line or length is an
    :class:`HttpProtocolError`.
    """
    head_left = _HTTP_HEAD_LIMIT

    def over(n: int) -> HttpProtocolError:
        size = f"{n}" if n > limit + 1 else f"more than {limit}"
        return HttpProtocolError(f"an answer of {size} bytes, over the {limit} this object may have")

    def line(most: int) -> bytes:
        text = fp.readline(most + 1)
        if not text.endswith(b"\r\n"):
            raise HttpProtocolError("response line too long" if len(text) > most else "connection closed in the response head")
        return text[:-2]

    def exactly(n: int) -> bytes:
        data = fp.read(n)
        if len(data) < n:
            raise HttpProtocolError(f"connection closed {n - len(data)} bytes before the end of the body")
        return data

    while True:
        head: list[str] = []
        while True:
            raw = line(head_left)
            head_left -= len(raw) + 2
            if head_left <= 0:
                raise HttpProtocolError("response head over 64 kB")
            if not raw:
                break
            head.append(raw.decode("latin-1"))
        if not head:
            raise HttpProtocolError("an empty line where the status line belongs")
        parts = head[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or len(parts[1]) != 3 or not (parts[1].isascii() and parts[1].isdigit()):
            raise HttpProtocolError(f"not an HTTP/1.x status line: {head[0][:60]!r}")
        status = int(parts[1])
        if 100 <= status < 200 and status != 101:
            continue  # interim (100 Continue, 103 Early Hints): the final response follows
        break
    fields: dict[str, list[str]] = {}
    for header in head[1:]:
        name, colon, value = header.partition(":")
        if not colon or not name or name != name.strip():
            raise HttpProtocolError(f"malformed header line: {header[:60]!r}")
        fields.setdefault(name.lower(), []).append(value.strip())
    if head_only or status < 200 or status in (204, 304):
        return status, b""
    if "chunked" in ",".join(fields.get("transfer-encoding", [])).lower():
        body = bytearray()
        while True:
            size_text = line(_HTTP_LINE_LIMIT).split(b";", 1)[0].strip()
            if not size_text or len(size_text) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
                raise HttpProtocolError(f"bad chunk size {size_text[:20]!r}")
            size = int(size_text, 16)
            if len(body) + size > limit:
                raise over(len(body) + size)
            if size == 0:
                while line(_HTTP_LINE_LIMIT):  # trailer fields, up to the empty line
                    pass
                return status, bytes(body)
            body += exactly(size)
            if exactly(2) != b"\r\n":
                raise HttpProtocolError("chunk not followed by CRLF")
    lengths = set(fields.get("content-length", []))
    if lengths:
        length = lengths.pop()
        if lengths or not length.isdigit() or not length.isascii() or len(length) > 19:
            raise HttpProtocolError("bad Content-Length")
        if int(length) > limit:
            raise over(int(length))
        return status, exactly(int(length))
    rest = fp.read(limit + 1)  # delimited by the end of the connection
    if len(rest) > limit:
        raise over(limit + 1)
    return status, rest


@dataclass(frozen=True, slots=True)
class _RedisError:
    message: str


def _encode(args: list[bytes]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class _Reader:
    """A bounded RESP2 reply reader over a socket (a bytearray: a multi-megabyte value arrives in
    64 kB pieces, and appending to bytes copied the whole value each time): no value over
    ``limit`` bytes, no read past ``deadline``."""

    def __init__(self, sock: socket.socket, read: float = 10.0, deadline: float = float("inf"),
                 limit: int = DEFAULT_LIMIT) -> None:
        self._sock = sock
        self._buf = bytearray()
        self._read, self._deadline, self._limit = read, deadline, limit

    def _fill(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self._sock.settimeout(min(self._read, left))
        chunk = self._sock.recv(1 << 16)
        if not chunk:
            raise ConnectionResetError(0, "connection closed by the server")
        self._buf += chunk

    def _line(self) -> bytes:
        while (end := self._buf.find(b"\r\n")) < 0:
            if len(self._buf) > 1 << 16:
                raise RemoteError("redis: reply line too long")
            self._fill()
        line = bytes(self._buf[:end])
        del self._buf[: end + 2]
        return line

    def _exact(self, n: int) -> bytes:
        while len(self._buf) < n + 2:
            self._fill()
        data = bytes(self._buf[:n])
        del self._buf[: n + 2]
        return data

    @staticmethod
    def _int(text: bytes) -> int:
        if not (text[1:] if text[:1] == b"-" else text).isdigit():
            raise RemoteError("redis: malformed reply")
        return int(text)

    def reply(self, depth: int = 0) -> object:
        if depth > 8:  # the commands sent here get no nested replies at all
            raise RemoteError("redis: malformed reply")
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return _RedisError(rest.decode(errors="replace"))
        if kind == b":":
            return self._int(rest)
        if kind == b"$":
            n = self._int(rest)
            if n > self._limit:
                raise RemoteError(f"redis: a value of {n} bytes, over the {self._limit} this object may have")
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = self._int(rest)
            if n > 64:  # the commands sent here get short arrays at most
                raise RemoteError("redis: malformed reply")
            return None if n < 0 else [self.reply(depth + 1) for _ in range(n)]
        raise RemoteError("redis: malformed reply")


@dataclass(frozen=True, slots=True)
class RemoteConfig:
    """The remote-cache settings of one build (the token and the signing secret are left out of the repr)."""

    urls: tuple[str, ...] = ()
    readonly: bool = False
    token: str | None = field(default=None, repr=False)
    timeouts: Timeouts = field(default_factory=Timeouts)
    secret: bytes | None = field(default=None, repr=False)

    @property
    def enabled(self) -> bool:
        """True when at least one store is named."""
        return bool(self.urls)

    def stores(self) -> list[Store]:
        """One client per URL, in order; raises :class:`AotwheelError` naming a bad URL (redacted)."""
        out: list[Store] = []
        for url in self.urls:
            scheme = urlsplit(url).scheme.lower()
            if scheme in ("http", "https"):
                out.append(HttpStore(url, self.token, self.timeouts))
            elif scheme == "redis":
                out.append(RedisStore(url, self.token, self.timeouts))
            else:
                raise AotwheelError(f"{ENV_URL}: '{redact(url)}' has scheme '{scheme}'; use http://, https:// or redis://")
        return out


def config_from(environ: Mapping[str, str], overrides: Mapping[str, str] | None = None) -> RemoteConfig:
    """The configuration from CMake's settings (``overrides``, when set) over the environment."""
    get = {**{k: v for k, v in environ.items() if k in SETTINGS}, **{k: v for k, v in (overrides or {}).items() if v != ""}}.get
    urls = tuple(u.strip() for u in (get(ENV_URL) or "").split("|") if u.strip())
    readonly = flag(get(ENV_READONLY), False, name=ENV_READONLY)
    timeouts = Timeouts()
    spec = (get(ENV_TIMEOUT) or "").strip()
    if spec:
        try:
            parts = [float(x) for x in spec.split(",")]
            if not 1 <= len(parts) <= 4 or not all(0 < p <= 86400 for p in parts):  # no nan, inf or 0
                raise ValueError
        except ValueError:
            raise AotwheelError(f"{ENV_TIMEOUT}='{spec[:80]}' is not 'connect[,read[,request[,step]]]' in seconds "
                                "(each above 0, at most 86400); e.g. 1,10,20,40") from None
        timeouts = Timeouts(*parts)
    secret = get(ENV_SECRET) or None
    if secret is not None and len(secret.strip()) < 16:
        raise AotwheelError(f"{ENV_SECRET} is shorter than 16 characters; set it to a long random string "
                            "(e.g. python -c 'import secrets; print(secrets.token_hex(32))')")
    return RemoteConfig(urls=urls, readonly=readonly, token=get(ENV_TOKEN) or None, timeouts=timeouts,
                        secret=secret.strip().encode() if secret else None)


def warn_once(marker: Path | None, message: str) -> None:
    """Print ``aotwheel: warning: <message>`` unless another step of this build already warned."""
    if marker is not None:
        try:  # O_EXCL: of all the parallel steps of one build, only the first one warns
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            return
        except OSError:
            pass
    # One write, newline included: print() writes the text and its end apart, and the warnings of
    # parallel ocloc jobs (threads of `aotwheel compile`) ran into one line between the two.
    sys.stderr.write(f"aotwheel: warning: {message}\n")
    sys.stderr.flush()
