"""What every overseer HTTP face (`serve`, `proxy`) shares: uvicorn on a socket bound at once,
the request body read with a cap, one OpenAI-shaped JSON error naming the input.

`HttpServer` runs an ASGI app in a thread of its own on a socket with a deep backlog; a request
uvicorn's parser (llhttp) rejects is answered with one JSON 400. `read_body` refuses a body
over its cap (413) and turns a client that leaves mid-upload into a `Fault` (no traceback);
`read_json_object` refuses a body that is not a JSON object (NaN and Infinity included).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any

import httpx
import uvicorn
from starlette.background import BackgroundTask
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, StreamingResponse
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

#: the largest request body accepted (a full 8k-token context is well under 1 MiB)
MAX_BODY_BYTES = 16 * 2**20
#: connections the kernel queues before uvicorn accepts them (Linux caps it at somaxconn)
BACKLOG = 2048


def error_body(status: int, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An OpenAI-shaped error object (the SDKs raise it, by status, with this message)."""
    return {"error": {"code": status, "message": message, "type": kind}}


class Fault(Exception):
    """A request the front refuses: an HTTP status and one line naming the input."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind

    def response_body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, self.kind)

    def response(self) -> JSONResponse:
        return JSONResponse(self.response_body(), self.status)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, at most `limit` bytes: a larger declared length is refused before any
    of it is read, a chunked body as soon as it passes the limit (413 either way)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Fault(413, f"request body: {declared} bytes; expected at most {limit}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise Fault(413, f"request body: over {limit} bytes; expected at most {limit}")
            chunks.append(chunk)
    except ClientDisconnect:  # nobody reads the answer; no traceback for it either
        raise Fault(400, f"request body: the client left after {size} bytes") from None
    return b"".join(chunks)


async def read_json_object(request: Request, limit: int) -> dict[str, Any]:
    """The request body as a JSON object, or a 400/413 Fault naming what is wrong."""
    data = await read_body(request, limit)
    try:
        body = json.loads(data, parse_constant=_not_json)
    except ValueError as exc:
        raise Fault(400, f"request body is not JSON ({exc}); expected a JSON object") from None
    if not isinstance(body, dict):
        raise Fault(400, f"request body: expected a JSON object, got {type(body).__name__}")
    return body


def _not_json(word: str) -> Any:
    """Python's json reads NaN and Infinity; JSON has no such numbers."""
    raise ValueError(f"{word} is not a JSON number")


def _error_bytes(why: str) -> bytes:
    """A whole HTTP/1.1 400 reply, one JSON error naming what was malformed; closes."""
    if "Content-Length" in why:
        why += " (expected the body's length in bytes, a decimal integer)"
    data = json.dumps(error_body(400, f"malformed HTTP request: {why}")).encode()
    head = (
        b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
        b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(data)
    )
    return head + data


class _JsonErrorHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol (llhttp, in C: the faster parser), whose answer to a
    malformed request is one JSON error naming what llhttp rejected."""

    def send_400_response(self, msg: str) -> None:
        exc = sys.exc_info()[1]  # uvicorn calls this inside its `except HttpParserError`
        self.transport.write(_error_bytes(str(exc) if exc is not None else msg))
        self.transport.close()


async def send_upstream(client: httpx.AsyncClient, sent: httpx.Request, who: str) -> httpx.Response:
    """`sent` on `client`, its reply streamed; a failure to reach `who` is a 502 Fault."""
    try:
        return await client.send(sent, stream=True)
    except httpx.HTTPError as exc:
        raise Fault(502, f"{who}: {type(exc).__name__}: {exc}", "server_error") from None


def relayed(resp: httpx.Response, kind: str = "application/json") -> StreamingResponse:
    """An upstream reply passed on as it arrives (closed once sent)."""
    return StreamingResponse(
        resp.aiter_raw(),
        resp.status_code,
        media_type=resp.headers.get("content-type", kind),
        background=BackgroundTask(resp.aclose),
    )


def uvicorn_settings() -> dict[str, Any]:
    """How every overseer HTTP face runs uvicorn: malformed requests answered with one JSON
    error, lifespan on, no logs of its own, 30 s keep-alive. Its loop is uvicorn's "auto":
    uvloop, a core dependency but on Windows (the proxy's relay path a third faster, issue 50)."""
    return {
        "http": _JsonErrorHttpTools,
        "lifespan": "on",
        "log_config": None,
        "log_level": "error",
        "access_log": False,
        "timeout_keep_alive": 30,
    }


def listening_socket(host: str, port: int, backlog: int = BACKLOG) -> socket.socket:
    """A TCP socket bound and listening (a port in use is an OSError at once). IPPROTO_TCP
    and TCP_NODELAY: asyncio then keeps Nagle's algorithm off on each connection (with
    protocol 0 it does not, and small replies were held back for ~40 ms)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


class HttpServer:
    """One uvicorn server for an ASGI app in a thread of its own, on a socket bound here (a
    port in use is an OSError at once) with a deep listen backlog."""

    def __init__(self, app: Any, host: str, port: int, *, backlog: int = BACKLOG) -> None:
        sock = listening_socket(host, port, backlog)
        self.host, self.port = host, int(sock.getsockname()[1])
        self.server = uvicorn.Server(uvicorn.Config(app, **uvicorn_settings()))
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(sock,), daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            time.sleep(0.005)
        if not self.server.started:
            raise OSError(f"the HTTP server did not start: {self.failure!r}")

    def _run(self, sock: socket.socket) -> None:
        try:
            self.server.run(sockets=[sock])
        except BaseException as exc:  # reported by __init__ when it happens at start
            self.failure = exc

    @property
    def url(self) -> str:
        """http://HOST:PORT of this server (no trailing slash)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self, flush_s: float = 10.0) -> None:
        """Stop listening, let the replies in progress finish (at most `flush_s` seconds once
        the caller has nothing left to send), and end the thread."""
        self.server.should_exit = True
        self._thread.join(flush_s)
        if self._thread.is_alive():
            self.server.force_exit = True
            self._thread.join()
