"""The HTTP face of an embedded llama.cpp model: OpenAI chat completions on uvicorn + starlette.

`ChatFront` serves `POST /v1/chat/completions` through the in-process llama.cpp server
(`handle_chat_completions`, a blocking call run on a thread pool, never on the event loop). A
request that offers `tools` is generated in one piece, then its text is read for tool calls the
model wrote as text (`_toolcalls`), and a forced `tool_choice` becomes a JSON schema; the reply
goes back as JSON or, when the client streams, as server-sent events. A chat without tools is
streamed token by token as llama.cpp produces it. `/v1/models` names the model as served;
every other path (/tokenize, /v1/completions, /props, ...) is passed to llama.cpp's own loopback
listener through a pooled async client, streamed back as it comes.

What the HTTP stack does not do, the front does: a body cap (413 before the body is read when
`Content-Length` says so), one JSON error naming the input for a malformed request (a bad
`Content-Length` included), 404 for a model it does not serve, 400 for empty `messages` or an
unknown role, and errors inside a stream sent as a `data: {"error": ...}` event that the
OpenAI SDKs raise. `close()` drains: the listener stops, requests not yet started are refused
with 503, streams stop at their next token and end with an error event, every other request in
flight is answered, and it returns only once no call is inside llama.cpp.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from overseer.models._toolcalls import (
    answer_only,
    force_tool_schema,
    tool_calls_from_text,
    tool_names,
)

#: llama.cpp's in-process entry point: (request body, callback per reply or chunk)
Handle = Callable[[dict[str, Any], Callable[[Any], bool]], Any]
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: the largest request body accepted (a full 8k-token context is well under 1 MiB)
MAX_BODY_BYTES = 16 * 2**20
#: connections the kernel queues before uvicorn accepts them (Linux caps it at somaxconn)
BACKLOG = 2048
_PASS_HEADERS = ("content-type", "authorization", "accept")
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def error_body(status: int, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An OpenAI-shaped error object (the SDKs raise it, by status, with this message)."""
    return {"error": {"code": status, "message": message, "type": kind}}


def sse(payload: Any) -> bytes:
    """One server-sent event carrying `payload` as JSON."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


class Fault(Exception):
    """A request the front refuses: an HTTP status and one line naming the input."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind

    def response(self) -> JSONResponse:
        return JSONResponse(error_body(self.status, self.message, self.kind), self.status)


def _status(err: Any) -> int:
    """The HTTP status of a llama.cpp error object (500 when it names none)."""
    code = err.get("code") if isinstance(err, dict) else None
    return code if isinstance(code, int) and 400 <= code < 600 else 500


def _is_error(reply: Any) -> bool:
    return not isinstance(reply, dict) or "error" in reply


def _error_of(reply: Any) -> tuple[int, dict[str, Any]]:
    """(HTTP status, error object) of a llama.cpp error reply."""
    err = reply.get("error", reply) if isinstance(reply, dict) else reply
    if not isinstance(err, dict):
        err = {"code": 500, "message": str(err), "type": "server_error"}
    return _status(err), err


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, at most `limit` bytes: a larger declared length is refused before any
    of it is read, a chunked body as soon as it passes the limit (413 either way)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Fault(413, f"request body: {declared} bytes; expected at most {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Fault(413, f"request body: over {limit} bytes; expected at most {limit}")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json_object(request: Request, limit: int) -> dict[str, Any]:
    """The request body as a JSON object, or a 400/413 Fault naming what is wrong."""
    data = await read_body(request, limit)
    try:
        body = json.loads(data)
    except ValueError as exc:
        raise Fault(400, f"request body is not JSON ({exc}); expected a JSON object") from None
    if not isinstance(body, dict):
        raise Fault(400, f"request body: expected a JSON object, got {type(body).__name__}")
    return body


def check_messages(body: dict[str, Any]) -> None:
    """400 unless `messages` is a non-empty list of objects with a known role."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Fault(400, f"messages: expected a non-empty list of messages, got {messages!r:.80}")
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ROLES:
            got = f"role {role!r:.40}" if isinstance(m, dict) else f"{m!r:.40}"
            raise Fault(400, f"messages[{i}]: expected a role in {', '.join(ROLES)}, got {got}")


def sse_chunks(reply: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A complete chat completion as the chunks of a stream: the message, the finish reason,
    and (when asked) the usage."""
    (choice,) = reply["choices"]
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
    head: dict[str, Any] = {k: reply[k] for k in ("id", "created", "model") if k in reply}
    head["object"] = "chat.completion.chunk"
    out = [
        dict(head, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
        dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]),
    ]
    if include_usage and reply.get("usage"):
        out.append(dict(head, choices=[], usage=reply["usage"]))
    return out


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
    error, lifespan on, no logs of its own, 30 s keep-alive."""
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


@dataclass(eq=False)
class _Call:
    """One request's call into llama.cpp: its stop flag and whether it streams."""

    streaming: bool
    stop: threading.Event = field(default_factory=threading.Event)
    cut: bool = False  # stopped by the shutdown (not by its client going away)


class _Calls:
    """The calls in flight, so a shutdown can stop streams and wait for the rest."""

    def __init__(self) -> None:
        self._live: set[_Call] = set()
        self._cond = threading.Condition()
        self.closing = False

    def add(self, streaming: bool) -> _Call:
        with self._cond:
            if self.closing:
                raise Fault(503, "server shutting down; send the request elsewhere", "server_error")
            call = _Call(streaming)
            self._live.add(call)
            return call

    def done(self, call: _Call) -> None:
        with self._cond:
            self._live.discard(call)
            self._cond.notify_all()

    def close(self) -> int:
        """Refuse new calls and stop the streams at their next token; the calls in flight."""
        with self._cond:
            self.closing = True
            for call in self._live:
                if call.streaming:
                    call.cut = True
                    call.stop.set()
            return len(self._live)

    def wait(self) -> None:
        """Until no call is inside llama.cpp (woken twice a second, so signals get through)."""
        with self._cond:
            while self._live:
                self._cond.wait(0.5)

    def __len__(self) -> int:
        return len(self._live)


_END = object()


class ChatFront:
    """An OpenAI-compatible HTTP server in front of one in-process llama.cpp server, serving
    the model under `name`."""

    def __init__(
        self,
        handle: Handle,
        native_url: str,
        host: str,
        port: int,
        *,
        name: str,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.handle, self.native_url, self.name = handle, native_url, name
        self.max_body_bytes = max_body_bytes
        self.created = int(time.time())
        self._calls = _Calls()
        self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="llama-call")
        self._client: httpx.AsyncClient | None = None
        app = Starlette(
            routes=[
                *(Route(p, self._chat, methods=["POST"]) for p in CHAT_PATHS),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/models", self._models, methods=["GET"]),
                Route("/health", self._health, methods=["GET"]),
                Route("/{path:path}", self._pass, methods=["GET", "POST", "PUT", "DELETE"]),
            ],
            exception_handlers={HTTPException: _http_error, Fault: _fault},
            lifespan=self._lifespan,
        )
        self._http = HttpServer(app, host, port)

    @property
    def url(self) -> str:
        """http://HOST:PORT of this front (no trailing slash)."""
        return self._http.url

    @property
    def in_flight(self) -> int:
        """Requests inside (or queued for) llama.cpp now."""
        return len(self._calls)

    def close(self) -> None:
        """Drain, then stop: refuse new requests, stop streams at their next token (they end
        with an error event), answer the other requests in flight, and return once no call is
        inside llama.cpp (so the model can be freed safely)."""
        self._calls.close()
        self._http.server.should_exit = True  # the listener closes now
        self._calls.wait()
        self._http.stop()
        self._pool.shutdown(wait=True)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=16)
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]  # no 40 ms Nagle stall
        transport = httpx.AsyncHTTPTransport(limits=limits, socket_options=nodelay)
        self._client = httpx.AsyncClient(
            base_url=self.native_url, timeout=None, transport=transport
        )
        try:
            yield
        finally:
            await self._client.aclose()

    # --- routes -----------------------------------------------------------------------------

    async def _health(self, request: Request) -> Response:
        """Up, and how many requests are inside (or queued for) llama.cpp."""
        return JSONResponse({"status": "ok", "in_flight": len(self._calls)})

    async def _models(self, request: Request) -> Response:
        model = dict(id=self.name, object="model", created=self.created, owned_by="overseer")
        return JSONResponse({"object": "list", "data": [model]})

    async def _chat(self, request: Request) -> Response:
        body = await read_json_object(request, self.max_body_bytes)
        asked = body.get("model")
        if asked is not None and asked != self.name:
            msg = f"model {asked!r:.80}: not served here; expected {self.name!r}"
            raise Fault(404, msg, "not_found_error")
        check_messages(body)
        stream = bool(body.get("stream"))
        if tool_names(body) and body.get("tool_choice") != "none":
            return await self._tools(body, stream)
        body = answer_only(body)  # tools absent, or closed by tool_choice "none"
        if stream:
            return await self._stream(body)
        status, reply = await self._complete(body)
        return JSONResponse(self._named(reply), status)

    async def _tools(self, body: dict[str, Any], stream: bool) -> Response:
        sent = force_tool_schema(body)
        sent = dict(sent, stream=False)
        sent.pop("stream_options", None)
        status, reply = await self._complete(sent, streaming=stream)
        if status != 200:
            return JSONResponse(reply, status)
        reply = self._named(tool_calls_from_text(body, reply))
        if not stream:
            return JSONResponse(reply)
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = [sse(c) for c in sse_chunks(reply, usage)] + [SSE_DONE]
        return StreamingResponse(_iterate(chunks), media_type="text/event-stream")

    async def _pass(self, request: Request) -> Response:
        """Any other path, to llama.cpp's own listener and back as it comes."""
        assert self._client is not None
        data = await read_body(request, self.max_body_bytes)
        headers = {h: v for h in _PASS_HEADERS if (v := request.headers.get(h))}
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        sent = self._client.build_request(request.method, target, content=data, headers=headers)
        resp = await send_upstream(self._client, sent, "llama.cpp listener")
        return relayed(resp, "text/plain")

    # --- calls into llama.cpp ---------------------------------------------------------------

    def _run(self, call: _Call, body: dict[str, Any], take: Callable[[Any], bool]) -> str | None:
        """One blocking call into llama.cpp (on the pool); llama.cpp's refusal, if any."""
        try:
            if call.stop.is_set():
                return None
            self.handle(body, take)
            return None
        except ValueError as exc:
            return str(exc)
        finally:
            self._calls.done(call)

    async def _complete(
        self, body: dict[str, Any], streaming: bool = False
    ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, reply) of one request generated in one piece."""
        call = self._calls.add(streaming)
        got: list[Any] = []

        def take(reply: Any) -> bool:
            got.append(reply)
            return False

        loop = asyncio.get_running_loop()
        refused = await loop.run_in_executor(self._pool, self._run, call, body, take)
        if refused is not None:
            return 400, error_body(400, f"llama.cpp rejected the request: {refused}")
        if not got:
            return 500, error_body(500, "llama.cpp gave no reply", "server_error")
        if _is_error(got[-1]):
            status, err = _error_of(got[-1])
            return status, {"error": err}
        return 200, got[-1]

    async def _stream(self, body: dict[str, Any]) -> Response:
        """A streamed chat: the chunks as llama.cpp makes them. An error before the first
        chunk is an HTTP error; after it, an error event."""
        call = self._calls.add(streaming=True)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def take(chunk: Any) -> bool:
            if call.stop.is_set():
                return True
            try:
                loop.call_soon_threadsafe(queue.put_nowait, chunk)
            except RuntimeError:  # the loop is gone: nobody to send to
                return True
            return False

        running = loop.run_in_executor(self._pool, self._run, call, body, take)
        running.add_done_callback(lambda f: queue.put_nowait(_END))
        try:
            first = await queue.get()
        except BaseException:
            call.stop.set()
            raise
        if first is _END:
            refused = running.result()
            if refused is not None:
                return Fault(400, f"llama.cpp rejected the request: {refused}").response()
            if call.cut:
                return _shutting_down().response()
            return Fault(500, "llama.cpp gave no reply", "server_error").response()
        if _is_error(first):
            status, err = _error_of(first)
            return JSONResponse({"error": err}, status)
        events = self._events(call, first, queue)
        return StreamingResponse(events, media_type="text/event-stream", headers=_SSE_HEADERS)

    async def _events(self, call: _Call, first: Any, queue: asyncio.Queue[Any]) -> Any:
        try:
            item = first
            while item is not _END:
                if _is_error(item):
                    yield sse({"error": _error_of(item)[1]})
                    return
                yield sse(self._named(item))
                item = await queue.get()
            if call.cut:
                yield sse(error_body(503, _SHUTDOWN_STREAM, "server_error"))
                return
            yield SSE_DONE
        finally:
            call.stop.set()  # the client went away: stop at the next token

    def _named(self, reply: dict[str, Any]) -> dict[str, Any]:
        """A reply or chunk naming the model as served (llama.cpp names its file)."""
        return dict(reply, model=self.name) if "model" in reply else reply


_SHUTDOWN_STREAM = "server shutting down: the stream was stopped before its end"


def _shutting_down() -> Fault:
    return Fault(503, "server shutting down; send the request elsewhere", "server_error")


async def _iterate(items: Iterable[bytes]) -> AsyncIterator[bytes]:
    for item in items:
        yield item


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    what = f"{request.method} {request.url.path}"
    return Fault(exc.status_code, f"{what}: {exc.detail}").response()


async def _fault(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Fault)
    return exc.response()
