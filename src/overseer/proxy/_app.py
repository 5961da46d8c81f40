"""The proxy's HTTP face: OpenAI chat completions relayed to an upstream, the rule tier between.

Starlette on uvicorn (`HttpServer`, the same stack as `overseer serve`); the upstream is called
through one pooled `httpx.AsyncClient`; a streamed reply is passed through chunk by chunk as it
arrives (its usage read on the way). API keys (`Authorization`) go to the upstream unchanged
and are never logged. Every reply carries `x-overseer-run`, `x-overseer-agent` and
`x-overseer-overhead-ms` (the time spent in the proxy, the upstream's excluded).
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from overseer.models import Usage
from overseer.models.serve import (
    MAX_BODY_BYTES,
    Fault,
    HttpServer,
    error_body,
    read_body,
    read_json_object,
)
from overseer.proxy._runs import ProxyRun, ProxySettings, Runs, identify, text_of, usage_of
from overseer.runtime.books import BudgetExceeded

_PASS = ("authorization", "content-type", "accept", "openai-organization", "openai-project")
_CHAT = ("/v1/chat/completions", "/chat/completions")


class Proxy:
    """`overseer proxy`: an OpenAI-compatible server on `host`:`port` relaying to `upstream`
    (its base URL, e.g. http://127.0.0.1:8080/v1), overseeing each run."""

    def __init__(
        self,
        upstream: str,
        settings: ProxySettings | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.settings = settings or ProxySettings()
        self.runs = Runs(self.settings)
        self.max_body_bytes = max_body_bytes
        self._client: httpx.AsyncClient | None = None
        app = Starlette(
            routes=[
                *(Route(p, self._chat, methods=["POST"]) for p in _CHAT),
                Route("/{path:path}", self._pass, methods=["GET", "POST", "DELETE"]),
            ],
            exception_handlers={Fault: _fault},
            lifespan=self._lifespan,
        )
        self._http = HttpServer(app, host, port)

    @property
    def base_url(self) -> str:
        """The proxy's OpenAI-compatible endpoint (ends in /v1)."""
        return self._http.url + "/v1"

    def close(self) -> None:
        """Stop listening, finish the replies in flight, end every run's trace."""
        self._http.stop(flush_s=600)
        self.runs.close()

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200)
        timeout = httpx.Timeout(600.0, connect=10.0)
        # TCP_NODELAY: httpx sends headers and body in two writes; with Nagle's algorithm the
        # body waits for the upstream's delayed ACK (40 ms on Linux) on every request
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        transport = httpx.AsyncHTTPTransport(limits=limits, socket_options=nodelay)
        async with httpx.AsyncClient(timeout=timeout, transport=transport) as client:
            self._client = client
            yield

    def _url(self, path: str) -> str:
        """The upstream URL of one of our paths (/v1/x -> UPSTREAM/x)."""
        tail = path.removeprefix("/v1")
        return self.upstream + tail

    async def _chat(self, request: Request) -> Response:
        t0 = time.perf_counter()
        body = await read_json_object(request, self.max_body_bytes)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Fault(
                400, f"messages: expected a non-empty list of messages, got {messages!r:.80}"
            )
        who = identify(request.headers, body)
        run = self.runs.get(who, body)
        try:
            run.run.ledger.check()
        except BudgetExceeded as exc:
            msg = f"run {who.run}: {exc}; expected no more calls from this run"
            return JSONResponse(error_body(400, msg, "budget_exceeded"), 400, headers=_who(who))
        if self.settings.rules is not None:
            body = dict(body, messages=run.apply(who.agent, messages))
        assert self._client is not None
        headers = {h: v for h in _PASS if (v := request.headers.get(h))}
        sent = self._client.build_request(
            "POST", self._url(request.url.path), json=body, headers=headers
        )
        overhead = time.perf_counter() - t0
        t1 = time.perf_counter()
        try:
            resp = await self._client.send(sent, stream=True)
        except httpx.HTTPError as exc:
            raise Fault(
                502, f"upstream {self.upstream}: {type(exc).__name__}: {exc}", "server_error"
            ) from None
        out_headers = _who(who) | {"x-overseer-overhead-ms": f"{overhead * 1000:.3f}"}
        kind = resp.headers.get("content-type", "application/json")
        model = str(body.get("model") or "")
        if "text/event-stream" in kind:
            relay = self._relay(resp, run, who.agent, model, body["messages"], t1)
            return StreamingResponse(relay, resp.status_code, media_type=kind, headers=out_headers)
        data = await resp.aread()
        await resp.aclose()
        if resp.status_code == 200:
            _book_reply(data, run, who.agent, model, body["messages"], t1)
        return Response(data, resp.status_code, media_type=kind, headers=out_headers)

    async def _relay(
        self, resp: httpx.Response, run: ProxyRun, agent: str, model: str, messages: Any, t1: float
    ) -> AsyncIterator[bytes]:
        """The upstream's stream as it arrives; its usage and text booked at the end."""
        tail, usage, text = b"", None, []
        try:
            async for block in resp.aiter_raw():
                yield block
                tail += block
                *events, tail = tail.split(b"\n\n")
                for event in events:
                    if not event.startswith(b"data: {"):
                        continue
                    try:
                        chunk = json.loads(event[6:])
                    except ValueError:
                        continue
                    usage = usage_of(chunk) or usage
                    for c in chunk.get("choices") or ():
                        text.append(text_of((c.get("delta") or {}).get("content")))
        finally:
            await resp.aclose()
        run.book(
            agent,
            model,
            usage or Usage(estimated=True),
            time.perf_counter() - t1,
            messages,
            "".join(text),
        )

    async def _pass(self, request: Request) -> Response:
        """Any other path (/v1/models, ...) to the upstream and back as it comes."""
        assert self._client is not None
        data = b"" if request.method == "GET" else await read_body(request, self.max_body_bytes)
        headers = {h: v for h in _PASS if (v := request.headers.get(h))}
        url = self._url(request.url.path)
        sent = self._client.build_request(
            request.method, url, content=data, headers=headers, params=request.query_params
        )
        try:
            resp = await self._client.send(sent, stream=True)
        except httpx.HTTPError as exc:
            raise Fault(
                502, f"upstream {self.upstream}: {type(exc).__name__}", "server_error"
            ) from None
        kind = resp.headers.get("content-type", "application/json")
        return StreamingResponse(
            resp.aiter_raw(),
            resp.status_code,
            media_type=kind,
            background=BackgroundTask(resp.aclose),
        )


def _book_reply(
    data: bytes, run: ProxyRun, agent: str, model: str, messages: Any, t1: float
) -> None:
    """Book a relayed reply with the usage it reports (an estimate flag when none)."""
    try:
        reply = json.loads(data)
    except ValueError:
        reply = {}
    if not isinstance(reply, dict):
        reply = {}
    usage = usage_of(reply) or Usage(estimated=True)
    choice = (reply.get("choices") or [{}])[0]
    text = text_of((choice.get("message") or {}).get("content"))
    latency = time.perf_counter() - t1
    run.book(agent, str(reply.get("model") or model), usage, latency, messages, text)


def _who(who: Any) -> dict[str, str]:
    return {"x-overseer-run": who.run, "x-overseer-agent": who.agent}


async def _fault(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Fault)
    return exc.response()
