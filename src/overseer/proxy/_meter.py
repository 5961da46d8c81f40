"""`UsageMeter`: a counting relay in front of an OpenAI-compatible server.

Examples, benchmarks and tests measure an agent by what the model server itself reports: the
`usage` of every chat completion, and the prompt tokens it really evaluated (llama.cpp's
`timings.prompt_n`, else the prompt minus `usage.prompt_tokens_details.cached_tokens`). The
meter sits between the agent and the server on 127.0.0.1 and records that for each chat
completion, with its request body, its reply and what an optional hook said when the request
arrived (e.g. how many pages the agent had fetched by then).

It stands on the proxy's stack: starlette on uvicorn (`HttpServer`, a thread of this process),
one pooled `httpx.AsyncClient` to the server; any path and method is relayed, a streamed reply
(server-sent events) passed on as it arrives and read on the way. A server that cannot be
reached is a 502 with one line; the server's own errors keep its status and body.

    with UsageMeter("http://127.0.0.1:8080/v1") as meter:
        OpenAI(base_url=meter.base_url, api_key="none").chat.completions.create(...)
    print(meter.prompt_tokens, meter.completions[-1].evaluated_tokens)
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Self, overload
from urllib.parse import urlsplit

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from overseer.models import serve as front

#: called with each chat completion's request body when it arrives; its value is recorded
Hook = Callable[[dict[str, Any]], object]

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
#: request headers not forwarded (hop-by-hop, or set by the client library for the new hop)
_DROP_ASKED = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te"}
#: reply headers not passed back (hop-by-hop, or set by uvicorn / starlette for our hop)
_DROP_SAID = {"content-length", "connection", "keep-alive", "transfer-encoding", "date", "server"}


def read_usage(reply: dict[str, Any]) -> tuple[int, int, int, str]:
    """(prompt, completion, evaluated, source) tokens of one reply (or a stream's last chunks):
    evaluated from llama.cpp's `timings.prompt_n` ("timings"), else the prompt minus
    `usage.prompt_tokens_details.cached_tokens` ("cached"), else the whole prompt ("none")."""
    u = reply.get("usage") or {}
    prompt, completion = int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0)
    t = reply.get("timings")
    if isinstance(t, dict) and t.get("prompt_n") is not None:
        return prompt, completion, int(t["prompt_n"]), "timings"
    details = u.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        return prompt, completion, prompt - int(details["cached_tokens"]), "cached"
    return prompt, completion, prompt, "none"


@dataclass(frozen=True)
class MeteredCompletion:
    """One chat completion the server answered with 200, as the meter saw it.

    `reply` is the server's reply; for a stream, the `usage` and `timings` its chunks carried
    (the last of each). `tag` is what the meter's hook returned when the request arrived."""

    request: dict[str, Any]
    reply: dict[str, Any]
    streamed: bool
    tag: object = None
    prompt_tokens: int = field(init=False)
    completion_tokens: int = field(init=False)
    evaluated_tokens: int = field(init=False)
    evaluated_from: str = field(init=False)  # timings | cached | none
    cached_tokens: int = field(init=False)

    def __post_init__(self) -> None:
        prompt, completion, evaluated, source = read_usage(self.reply)
        details = (self.reply.get("usage") or {}).get("prompt_tokens_details") or {}
        for name, value in (
            ("prompt_tokens", prompt),
            ("completion_tokens", completion),
            ("evaluated_tokens", evaluated),
            ("evaluated_from", source),
            ("cached_tokens", int(details.get("cached_tokens") or 0)),
        ):
            object.__setattr__(self, name, value)


class _Summed:
    """A read-only attribute of a `UsageMeter`: one field of its recorded completions, summed
    (the field of `MeteredCompletion` with the attribute's name)."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self.field = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = name

    @overload
    def __get__(self, meter: None, owner: type) -> _Summed: ...
    @overload
    def __get__(self, meter: UsageMeter, owner: type | None = None) -> int: ...
    def __get__(self, meter: UsageMeter | None, owner: type | None = None) -> int | _Summed:
        if meter is None:  # read on the class (help(), docs): the attribute itself
            return self
        return sum(getattr(c, self.field) for c in meter.completions)


class UsageMeter:
    """A relay on 127.0.0.1 (a free port) in front of `target`, an OpenAI base URL such as
    http://127.0.0.1:8080/v1; clients use `base_url`. Each chat completion answered with 200
    is recorded in `completions`, in the order the replies ended; `on_request` (optional) is
    called with each chat request's body as it arrives (on the relay's thread: keep it quick),
    its value kept as the record's `tag`. A context manager; `close()` lets the replies in
    flight finish."""

    def __init__(self, target: str, on_request: Hook | None = None) -> None:
        parts = urlsplit(target.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"meter target: expected an http(s) base URL, got {target!r}")
        self.target = target.rstrip("/")
        self._origin, self._path = f"{parts.scheme}://{parts.netloc}", parts.path
        self.on_request = on_request
        self._done: list[MeteredCompletion] = []
        self._lock = threading.Lock()
        self._client: httpx.AsyncClient | None = None
        app = Starlette(
            routes=[Route("/{path:path}", self._relay, methods=_METHODS)],
            exception_handlers={front.Fault: _fault, Exception: _failed},
            lifespan=self._lifespan,
        )
        self._http = front.HttpServer(app, "127.0.0.1", 0)

    # -- what callers read ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The relay's base URL: the target's, with its host and port (same path, e.g. /v1)."""
        return self._http.url + self._path

    @property
    def completions(self) -> list[MeteredCompletion]:
        """The chat completions recorded so far, in the order their replies ended (a copy)."""
        with self._lock:
            return list(self._done)

    @property
    def calls(self) -> int:
        """Chat completions recorded."""
        return len(self.completions)

    prompt_tokens = _Summed("`usage.prompt_tokens` summed over the recorded completions.")
    completion_tokens = _Summed("`usage.completion_tokens` summed over the recorded completions.")
    evaluated_tokens = _Summed("Prompt tokens the server evaluated (not from its cache), summed.")
    cached_tokens = _Summed("`usage.prompt_tokens_details.cached_tokens`, summed.")

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens, summed."""
        return self.prompt_tokens + self.completion_tokens

    def close(self) -> None:
        """Stop listening; the replies in flight finish first (at most 60 s)."""
        self._http.stop(flush_s=60)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the relay -----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """One pooled client to the target for the server's life (TCP_NODELAY, as the proxy)."""
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        transport = httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            socket_options=nodelay,
        )
        timeout = httpx.Timeout(1800.0, connect=10.0)
        async with httpx.AsyncClient(timeout=timeout, transport=transport) as client:
            self._client = client
            yield

    async def _relay(self, request: Request) -> Response:
        """Any request to the same path of the target; a chat completion's reply recorded."""
        assert self._client is not None
        data = await front.read_body(request, front.MAX_BODY_BYTES)
        chat = request.method == "POST" and request.url.path.rstrip("/").endswith(
            "/chat/completions"
        )
        asked = (_json_object(data) if chat else None) or {}  # not JSON: the server says why
        tag = self.on_request(asked) if chat and self.on_request is not None else None
        sent = self._client.build_request(
            request.method,
            self._origin + request.url.path,
            params=request.query_params,
            content=data,
            headers=_forwarded(request.headers.items()),
        )
        resp = await front.send_upstream(self._client, sent, f"upstream {self.target}")
        if not chat or resp.status_code != 200:
            return _passed(resp)
        if "text/event-stream" in resp.headers.get("content-type", ""):
            headers = _said(resp, decoded=True)
            events = self._stream(resp, asked, tag)
            return StreamingResponse(events, 200, headers=headers)
        return await self._whole(resp, asked, tag)

    async def _whole(self, resp: httpx.Response, asked: dict[str, Any], tag: object) -> Response:
        """A chat completion in one piece: recorded, then answered (502 when it is no JSON)."""
        try:
            data = await resp.aread()
        finally:
            await resp.aclose()
        reply = _json_object(data)
        if reply is None:
            said = " ".join(data.decode("utf-8", "replace").split())[:120]
            msg = f"upstream {self.target}: chat completion reply is not a JSON object: {said!r}"
            raise front.Fault(502, msg, "server_error")
        self._record(MeteredCompletion(asked, reply, streamed=False, tag=tag))
        return Response(data, 200, headers=_said(resp, decoded=True))

    async def _stream(
        self, resp: httpx.Response, asked: dict[str, Any], tag: object
    ) -> AsyncIterator[bytes]:
        """The server's events passed on as they arrive, read on the way; the completion is
        recorded at `data: [DONE]` (before the client sees it) or at the stream's end. An event
        the meter cannot read, or a stream the server broke off, ends the stream with an error
        event (the OpenAI SDKs raise it) and records nothing."""
        seen, recorded = _Events(), False
        try:
            async for block in resp.aiter_bytes():
                if seen.feed(block) and not recorded:
                    self._record(MeteredCompletion(asked, seen.reply, streamed=True, tag=tag))
                    recorded = True
                yield block
            if not recorded:
                self._record(MeteredCompletion(asked, seen.reply, streamed=True, tag=tag))
        except (ValueError, httpx.HTTPError) as exc:
            what = "unreadable stream event" if isinstance(exc, ValueError) else "stream broke"
            yield _error_event(f"upstream {self.target}: {what}: {exc}")
        finally:
            await resp.aclose()

    def _record(self, completion: MeteredCompletion) -> None:
        with self._lock:
            self._done.append(completion)


class _Events:
    """A stream's server-sent events read line by line as blocks arrive: the last `usage` and
    `timings` they carried, and whether `data: [DONE]` came."""

    def __init__(self) -> None:
        self.reply: dict[str, Any] = {}
        self._tail = b""

    def feed(self, block: bytes) -> bool:
        """Read the complete lines of `block`; True once `[DONE]` was read. A `data:` line that
        is not a JSON object is a ValueError naming it."""
        *lines, self._tail = (self._tail + block).split(b"\n")
        done = False
        for line in lines:
            payload = line.rstrip(b"\r").removeprefix(b"data:").strip()
            if not line.startswith(b"data:") or not payload:
                continue
            if payload == b"[DONE]":
                done = True
                continue
            chunk = _json_object(payload)
            if chunk is None:
                raise ValueError(f"{payload.decode('utf-8', 'replace')[:120]!r}")
            self.reply.update({k: chunk[k] for k in ("usage", "timings") if chunk.get(k)})
        return done


def _error_event(message: str) -> bytes:
    """A server-sent event carrying an OpenAI-shaped 502 error (the SDKs raise it)."""
    return b"data: " + json.dumps(front.error_body(502, message, "server_error")).encode() + b"\n\n"


def _json_object(data: bytes) -> dict[str, Any] | None:
    """`data` as a JSON object; None when it is no JSON object (the caller says what then)."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _forwarded(headers: Any) -> dict[str, str]:
    """The client's headers for the target: hop-by-hop ones dropped, the reply unencoded."""
    out = {k: v for k, v in headers if k.lower() not in _DROP_ASKED | {"accept-encoding"}}
    return out | {"accept-encoding": "identity"}  # the meter reads what it relays


def _said(resp: httpx.Response, *, decoded: bool) -> dict[str, str]:
    """The target's reply headers for the client (a decoded body loses `content-encoding`)."""
    drop = _DROP_SAID | ({"content-encoding"} if decoded else set())
    return {k: v for k, v in resp.headers.items() if k.lower() not in drop}


def _passed(resp: httpx.Response) -> StreamingResponse:
    """A reply not recorded (another path, or an error status) passed on as it arrives."""
    return StreamingResponse(
        resp.aiter_raw(),
        resp.status_code,
        headers=_said(resp, decoded=False),
        background=BackgroundTask(resp.aclose),
    )


async def _fault(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, front.Fault)
    return exc.response()


async def _failed(request: Request, exc: Exception) -> Response:
    """Any other failure of the relay (the hook's included): a 502 with one line."""
    msg = f"usage meter: {request.method} {request.url.path}: {type(exc).__name__}: {exc}"
    return front.Fault(502, " ".join(msg.split())[:300], "server_error").response()
