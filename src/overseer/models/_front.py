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
`Content-Length` included), 404 for a model it does not serve, and a 400 naming the field for a
request outside the documented subset (`_chat_request`: tools, tool calls, text-only content,
`max_tokens` >= 1, a 64-bit `seed`, valid Unicode); `/openapi.json` describes that subset.
Every reply is generated as a stream inside, so a client that leaves (streamed or not) stops
its generation at the next token and frees the slot; a client that leaves mid-upload costs no
traceback. Errors inside a stream are sent as a `data: {"error": ...}` event that the OpenAI
SDKs raise; `/props` and the other llama.cpp paths never show the model file's path. `close()`
drains: the listener stops, requests not yet started are refused with 503, streams stop at
their next token and end with an error event, every other request in flight is answered, and
it returns only once no call is inside llama.cpp.
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
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from overseer.models._chat_request import openapi, request_error
from overseer.models._chunks import Assembled, Redacted, sse_chunks
from overseer.models._http_server import (
    MAX_BODY_BYTES,
    Fault,
    HttpServer,
    error_body,
    read_body,
    read_json_object,
    send_upstream,
)
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
_PASS_HEADERS = ("content-type", "authorization", "accept")
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(payload: Any) -> bytes:
    """One server-sent event carrying `payload` as JSON."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


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
        model_file: str = "",
    ) -> None:
        self.handle, self.native_url, self.name = handle, native_url, name
        self.max_body_bytes = max_body_bytes
        self._redacted = Redacted(model_file, name)
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
                Route("/openapi.json", self._openapi, methods=["GET"]),
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

    async def _openapi(self, request: Request) -> Response:
        """The OpenAPI description of the chat-completions subset this server accepts."""
        return JSONResponse(openapi(self.name))

    async def _chat(self, request: Request) -> Response:
        body = await read_json_object(request, self.max_body_bytes)
        asked = body.get("model")
        if asked is not None and asked != self.name:
            msg = f"model {asked!r:.80}: not served here; expected {self.name!r}"
            raise Fault(404, msg, "not_found_error")
        check_messages(body)
        bad = request_error(body)
        if bad is not None:
            raise Fault(400, bad)
        try:
            return await self._answer(request, body)
        except Fault:
            raise
        except Exception as exc:  # a bug of ours: one JSON line for the client, one on stderr
            line = f"internal error: {type(exc).__name__}: {exc}"
            print(f"overseer serve: {line}", file=sys.stderr, flush=True)
            raise Fault(500, line[:300], "server_error") from None

    async def _answer(self, request: Request, body: dict[str, Any]) -> Response:
        stream = bool(body.get("stream"))
        if tool_names(body) and body.get("tool_choice") != "none":
            return await self._tools(request, body, stream)
        body = answer_only(body)  # tools absent, or closed by tool_choice "none"
        if stream:
            return await self._stream(request, body)
        status, reply = await self._complete(request, body)
        return JSONResponse(self._named(reply), status)

    async def _tools(self, request: Request, body: dict[str, Any], stream: bool) -> Response:
        sent = force_tool_schema(body)
        status, reply = await self._complete(request, sent, streaming=stream)
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
        return StreamingResponse(  # the model file's path is not the client's to see
            self._redacted.stream(resp.aiter_raw()),
            resp.status_code,
            media_type=resp.headers.get("content-type", "text/plain"),
            background=BackgroundTask(resp.aclose),
        )

    # --- calls into llama.cpp ---------------------------------------------------------------

    def _run(self, call: _Call, body: dict[str, Any], take: Callable[[Any], bool]) -> str | None:
        """One blocking call into llama.cpp (on the pool); llama.cpp's refusal, if any."""
        try:
            if call.stop.is_set():
                return None
            self.handle(body, take)
            return None
        except Exception as exc:  # raised while llama.cpp reads the request, before any token
            return str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        finally:
            self._calls.done(call)

    async def _complete(
        self, request: Request, body: dict[str, Any], streaming: bool = False
    ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, reply) of one request answered in one piece. llama.cpp streams it, so
        the call stops at the next token once the client has left."""
        call = self._calls.add(streaming)
        sent = dict(body, stream=True, stream_options={"include_usage": True})
        whole, errors = Assembled(), []

        def take(chunk: Any) -> bool:
            if _is_error(chunk):
                errors.append(chunk)
                return True
            whole.add(chunk)
            return call.stop.is_set()

        loop = asyncio.get_running_loop()
        async with _watching(request, call):
            refused = await loop.run_in_executor(self._pool, self._run, call, sent, take)
        if refused is not None:
            return 400, error_body(400, f"llama.cpp rejected the request: {refused}")
        if errors:
            status, err = _error_of(errors[0])
            return status, {"error": err}
        if call.cut:
            return 503, _shutting_down().response_body()
        if call.stop.is_set():
            return 400, error_body(400, "the client left; the generation was stopped")
        return 200, whole.reply()

    async def _stream(self, request: Request, body: dict[str, Any]) -> Response:
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
            async with _watching(request, call):
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


@contextlib.asynccontextmanager
async def _watching(request: Request, call: _Call) -> AsyncIterator[None]:
    """While the body runs, a client that leaves (its connection closed) stops `call` at the
    next token: nobody is left to read the reply, and the slot is free for others."""

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        call.stop.set()

    watcher = asyncio.create_task(watch())
    try:
        yield
    finally:
        watcher.cancel()


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
