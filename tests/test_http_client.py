"""The remote store's HTTP/1.1 response reader (``remote.read_http_response``).

Build steps talk HTTP on the socket module (http.client's import was a fifth of each step
process). The reader is checked against http.client itself, the reference: real responses of a
real nginx WebDAV store (captured off the wire) and crafted ones (chunked with extensions and
trailers, interim 100, close-delimited) must give the same status and body as http.client, whatever
pieces the bytes arrive in; broken responses are one HttpProtocolError; mutated responses
(hypothesis) never raise anything else.
"""

from __future__ import annotations

import io
import random
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotwheel.buildsteps.remote import HttpProtocolError, read_http_response


class _Pieces(io.RawIOBase):
    """The bytes of a response as a socket hands them out: in pieces of random sizes."""

    def __init__(self, data: bytes, seed: int) -> None:
        self._data, self._pos, self._rnd = data, 0, random.Random(seed)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def, override]
        take = min(len(b), self._rnd.choice([1, 2, 7, 64, 1000, 1 << 16]), len(self._data) - self._pos)
        b[:take] = self._data[self._pos : self._pos + take]
        self._pos += take
        return take


def _pieces(data: bytes, seed: int) -> io.BufferedReader:
    """What ``socket.makefile("rb")`` gives: a buffered reader over those pieces."""
    return io.BufferedReader(_Pieces(data, seed))


def _reference(data: bytes, method: str) -> tuple[int, bytes]:
    """What http.client makes of the same bytes."""
    import http.client

    class Sock:
        def makefile(self, mode: str) -> io.BytesIO:
            return io.BytesIO(data)

    resp = http.client.HTTPResponse(Sock(), method=method)  # type: ignore[arg-type]
    resp.begin()
    return resp.status, resp.read()


def _exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        out = bytearray()
        while chunk := sock.recv(1 << 16):
            out += chunk
    return bytes(out)


def _request(method: str, path: str, port: int, body: bytes | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b"")


def test_real_nginx_responses_read_as_http_client_reads_them(nginx):
    blob = bytes(range(256)) * 3000  # 768 kB: many recv() calls
    port = nginx.port
    wire = {
        "PUT": _exchange(port, _request("PUT", "/aot/cas/k1", port, blob)),
        "GET": _exchange(port, _request("GET", "/aot/cas/k1", port)),
        "HEAD": _exchange(port, _request("HEAD", "/aot/cas/k1", port)),
        "GET404": _exchange(port, _request("GET", "/aot/cas/none", port)),
    }
    statuses = {}
    for name, data in wire.items():
        method = name.removesuffix("404")
        ref = _reference(data, method)
        for seed in range(5):
            assert read_http_response(_pieces(data, seed), head_only=method == "HEAD") == ref, (name, seed)
        statuses[name] = ref[0]
    assert statuses == {"PUT": 201, "GET": 200, "HEAD": 200, "GET404": 404}
    assert read_http_response(_pieces(wire["GET"], 0))[1] == blob


CRAFTED = {
    "chunked, extensions, trailer": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     b"5;name=x\r\nhello\r\n1A\r\n" + b"z" * 26 + b"\r\n0\r\nX-Trailer: 1\r\n\r\n"),
    "interim 100 then 200": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
    "close-delimited": b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nuntil the end",
    "204 without body": b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
    "repeated equal length": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nok",
    "header without space": b"HTTP/1.1 404 Not Found\r\nContent-Length:4\r\n\r\nnope",
}


@pytest.mark.parametrize("name", list(CRAFTED))
def test_crafted_responses_read_as_http_client_reads_them(name):
    data = CRAFTED[name]
    ref = _reference(data, "GET")
    for seed in range(8):
        assert read_http_response(_pieces(data, seed)) == ref


BROKEN = {
    "truncated body": b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
    "conflicting lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
    "signed length": b"HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc",
    "non-ASCII digit length": "HTTP/1.1 200 OK\r\nContent-Length: \u00b2\r\n\r\nab".encode("latin-1"),
    "bad chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
    "chunk past its CRLF": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
    "not HTTP": b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
    "status not 3 digits": b"HTTP/1.1 20 OK\r\n\r\n",
    "closed in the head": b"HTTP/1.1 200 OK\r\nContent-Len",
    "folded header": b"HTTP/1.1 200 OK\r\n X-Folded: 1\r\nContent-Length: 0\r\n\r\n",
    "head over 64 kB": b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"a" * (70 << 10) + b"\r\n\r\n",
    "endless chunk line": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 10000,
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_responses_are_one_protocol_error(name):
    with pytest.raises(HttpProtocolError) as err:
        read_http_response(_pieces(BROKEN[name], 3))
    assert "\n" not in str(err.value) and str(err.value)


_SEEDS = list(CRAFTED.values()) + [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"]


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.sampled_from(_SEEDS), at=st.integers(0, 200), cut=st.integers(0, 16), insert=st.binary(max_size=12),
       pieces=st.integers(0, 99), head_only=st.booleans())
def test_mutated_responses_give_a_result_or_a_protocol_error(seed, at, cut, insert, pieces, head_only):
    data = seed[:at] + insert + seed[at + cut :]
    try:
        status, body = read_http_response(_pieces(data, pieces), head_only=head_only)
    except HttpProtocolError:
        return
    assert 100 <= status <= 999 and len(body) <= len(data)
