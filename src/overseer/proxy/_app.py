"""The proxy's HTTP face: OpenAI chat completions relayed to an upstream, the rule tier between.

Starlette on uvicorn (`HttpServer`, the same stack as `overseer serve`); the upstream is called
through one pooled `aiohttp.ClientSession` (a third of httpx's time per request on this hot path,
measured by benchmarks/proxy_overhead.py); a streamed reply is passed through chunk by chunk as it
arrives (its usage read on the way). API keys (`Authorization`) go to the upstream unchanged
and are never logged. Every reply carries `x-overseer-run`, `x-overseer-agent` and
`x-overseer-overhead-ms` (the time spent in the proxy, the upstream's excluded) and
`x-overseer-trace` (the id of the run's trace, for `overseer trace show`).

`Proxy` serves in a thread of the calling process (one worker, run state in memory unless a
Redis URL is given); `serve_workers` runs N uvicorn worker processes on one port, their run
state in Redis (`worker_app` builds each worker's app from the parent's options).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import logging
import os
import pickle
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from yarl import URL

from overseer.models import Model
from overseer.models import serve as front
from overseer.proxy._gateway import Clock, server_gc
from overseer.proxy._judge import Judges
from overseer.proxy._relay import Call, answer_of, asked_again, book_reply, relay, with_answer
from overseer.proxy._request import check_request
from overseer.proxy._runs import (
    BudgetExceeded,
    MemoryStore,
    ProxyRun,
    ProxySettings,
    Runs,
    RunStopped,
    RunStore,
    Who,
    identify,
)
from overseer.proxy._source import refuse_at_source
from overseer.runtime.steps import closed_turn

log = logging.getLogger("overseer.proxy")
#: how a request sent on a pooled connection the upstream had closed fails (before any reply):
#: sent once more on a new connection (the upstream had not read it, or not answered it)
_STALE = (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)
_PASS = ("authorization", "content-type", "accept", "openai-organization", "openai-project")
_CHAT = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class ProxyOptions:
    """Everything a proxy worker needs besides its socket (picklable: handed to worker
    processes). `redis_url`: run state in Redis (None: in this process's memory);
    `otlp_endpoint`: export the runs as OpenTelemetry spans (None: $OTEL_EXPORTER_OTLP_*
    when set, else no export)."""

    upstream: str
    settings: ProxySettings = field(default_factory=ProxySettings)
    max_body_bytes: int = front.MAX_BODY_BYTES
    redis_url: str | None = None
    otlp_endpoint: str | None = None
    sweep_s: float | None = None  # how often idle runs are looked for (default: idle_s / 4)


class ProxyApp:
    """The proxy's ASGI app (`.app`) for one worker: routes, pooled upstream client, runs."""

    def __init__(self, options: ProxyOptions, *, supervisor_model: Model | None = None) -> None:
        self.options = options
        self.upstream = options.upstream.rstrip("/")
        self.settings = options.settings
        self.supervisor_model = supervisor_model
        self.max_body_bytes = options.max_body_bytes
        self.runs: Runs | None = None
        self.judges: Judges | None = None
        self._client: aiohttp.ClientSession | None = None
        self._via: dict[str, Any] = {}  # proxy= / proxy_auth= for the upstream (`_env_proxy`)
        self.app = Starlette(
            routes=[
                *(Route(p, self._chat, methods=["POST"]) for p in _CHAT),
                Route("/overseer/health", self._health, methods=["GET"]),
                Route("/{path:path}", self._pass, methods=["GET", "POST", "DELETE"]),
            ],
            exception_handlers={front.Fault: _fault},
            lifespan=self._lifespan,
        )

    def _store(self) -> RunStore:
        if self.options.redis_url is None:
            return MemoryStore()
        from overseer.proxy._redis import RedisStore

        return RedisStore(self.options.redis_url, idle_s=self.settings.idle_s)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        # aiohttp sets TCP_NODELAY on its connections (no 40 ms wait for a delayed ACK);
        # HTTP(S)_PROXY / NO_PROXY are honoured, as the SDKs' clients do, read once here
        # (`trust_env` reads the environment and ~/.netrc on every request: 0.28 ms each)
        # idle upstream connections closed after 4 s: under the 5 s keep-alive of uvicorn and
        # Node servers, so the pool seldom hands out one the upstream is closing
        pool = aiohttp.TCPConnector(limit=1000, keepalive_timeout=4)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=600.0)
        spans = _spans(self.options.otlp_endpoint)
        store = self._store()
        self.judges = judges = Judges()
        self.runs = Runs(
            self.settings,
            supervisor_model=self.supervisor_model,
            store=store,
            spans=spans.open if spans is not None else None,
            judges=judges,
        )
        await judges.start(self.settings.rules)  # the first long output pays no first use
        sweeper = asyncio.create_task(self._sweep())
        try:
            async with aiohttp.ClientSession(connector=pool, timeout=timeout) as client:
                self._client, self._via = client, _env_proxy(self.upstream)
                yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            await self.runs.close()  # every run's run_end, after the replies in flight
            judges.close()
            if spans is not None:
                spans.shutdown()

    async def _sweep(self) -> None:
        every = self.options.sweep_s or max(0.05, self.settings.idle_s / 4)
        while True:
            await asyncio.sleep(every)
            assert self.runs is not None
            await self.runs.sweep()

    def _url(self, path: str) -> str:
        """The upstream URL of one of our paths (/v1/x -> UPSTREAM/x)."""
        tail = path.removeprefix("/v1")
        return self.upstream + tail

    async def _send(
        self, method: str, path: str, data: bytes, headers: dict[str, str], params: Any = None
    ) -> aiohttp.ClientResponse:
        """One upstream request, its reply not read yet; an upstream that cannot be reached
        is a 502 naming it."""
        assert self._client is not None
        url = self._url(path)
        for attempt in (1, 2):
            try:
                return await self._client.request(
                    method, url, data=data, headers=headers, params=params, **self._via
                )
            except _STALE as exc:  # a pooled connection the upstream had closed: once more
                if attempt == 2:
                    raise _unreachable(self.upstream, exc) from None
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise _unreachable(self.upstream, exc) from None
        raise AssertionError("unreachable")

    async def _read(self, resp: aiohttp.ClientResponse) -> bytes:
        """The whole reply (the connection back to the pool); a reply cut off is a 502."""
        try:
            return await resp.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _unreachable(self.upstream, exc) from None
        finally:
            resp.release()

    async def _health(self, request: Request) -> Response:
        """This worker's process id and live runs (which worker served a connection), how
        many tool outputs are being judged now, whether the judges are warm, and whether the
        run store answers (a 503 naming it when it does not)."""
        live = len(self.runs._runs) if self.runs is not None else 0
        judges = self.judges
        busy, warm = (judges.busy, judges.warm) if judges is not None else (0, False)
        got: dict[str, Any] = {"ok": True, "worker": os.getpid(), "runs": live}
        got |= {"judging": busy, "warm": warm, "store": "memory"}
        if self.runs is not None:
            try:
                got["store"] = await self.runs.store.ping()
            except front.Fault as exc:
                got |= {"ok": False, "store": exc.message}
        return JSONResponse(got, 200 if got["ok"] else 503)

    async def _chat(self, request: Request) -> Response:
        """A chat completion relayed (see the module docstring); anything that goes wrong
        in overseer itself is a JSON 500 naming it, the connection kept."""
        clock = Clock()
        try:
            return await self._chat_relayed(request, clock)
        except front.Fault:
            raise
        except Exception as exc:  # a bug, never a plain-text 500 and a dropped connection
            log.exception("proxy: chat request failed")
            raise front.Fault(500, f"proxy: {type(exc).__name__}: {exc}", "server_error") from None

    async def _chat_relayed(self, request: Request, clock: Clock) -> Response:
        body = await front.read_json_object(request, self.max_body_bytes)
        check_request(body)  # messages, and the fields naming a run: a JSON 400 naming it
        who = identify(request.headers, body)
        assert self.runs is not None and self._client is not None
        run = await self.runs.get(who, body)
        try:
            await run.check(who.agent)
        except (BudgetExceeded, RunStopped) as exc:
            kind = "budget_exceeded" if isinstance(exc, BudgetExceeded) else "run_stopped"
            msg = f"run {who.run}: {exc}; expected no more calls from this run"
            return JSONResponse(front.error_body(400, msg, kind), 400, headers=_who(who, run))
        if self.settings.rules is not None:
            body = await self._shown(run, who, body)
        headers = {h: v for h in _PASS if (v := request.headers.get(h))}
        headers["content-type"] = "application/json"
        call = Call(run, who.agent, str(body.get("model") or ""), body["messages"], clock)
        clock.away()
        t1 = time.perf_counter()
        resp = await self._send("POST", request.url.path, _json_bytes(body), headers)
        clock.back()
        kind = resp.headers.get("content-type", "application/json")
        if "text/event-stream" in kind:
            out_headers = _who(who, run) | {"x-overseer-overhead-ms": clock.ms()}
            stream = relay(resp, call, self.upstream, t1)
            return StreamingResponse(stream, resp.status, media_type=kind, headers=out_headers)
        data, status = await self._reply(request.url.path, resp, body, headers, call, t1)
        out_headers = _who(who, run) | {"x-overseer-overhead-ms": clock.ms()}
        return Response(data, status, media_type=kind, headers=out_headers)

    async def _shown(self, run: ProxyRun, who: Who, body: dict[str, Any]) -> dict[str, Any]:
        """The request as the model should read it (the rule tier's view of its messages;
        tools closed when the agent's calls keep being refused)."""
        shown, answer = await run.apply(who.agent, body["messages"])
        body = dict(body, messages=shown)
        if answer and body.get("tools"):  # its calls keep being refused: tools closed
            closing = {"role": "user", "content": closed_turn(run.run.task)}
            body.update(messages=[*shown, closing], tool_choice="none")
        return body

    async def _reply(
        self,
        path: str,
        resp: aiohttp.ClientResponse,
        body: dict[str, Any],
        headers: dict[str, str],
        call: Call,
        t1: float,
    ) -> tuple[bytes, int]:
        """A JSON reply read and booked; asked again once when it only copied overseer's
        words, and its answer replaced when it states a value no tool result supports after
        overseer closed the tools (the upstream's time excluded from overseer's share)."""
        call.clock.away()
        data, status = await self._read(resp), resp.status
        call.clock.back()
        if status != 200:
            return data, status
        text = await book_reply(data, call, t1)
        if text is None and self.settings.refuse_at_source and self.settings.rules is not None:
            ask = functools.partial(self._asked, path, headers, call)
            data, status = await refuse_at_source(data, body, call, ask)
            text = answer_of(data) if status == 200 else None
        turn = None if text is None else await call.run.reask(call.agent, text)
        if turn is not None:  # the answer only repeated overseer's words: asked once more
            data, status = await self._asked(
                path, headers, call, asked_again(body, text or "", turn)
            )
            text = answer_of(data) if status == 200 else None
        instead = None if text is None else await call.run.settle(call.agent, text)
        return (data, status) if instead is None else (with_answer(data, instead), status)

    async def _asked(
        self, path: str, headers: dict[str, str], call: Call, body: dict[str, Any]
    ) -> tuple[bytes, int]:
        """One more upstream call for this request, booked like the first (its time is the
        upstream's, not overseer's)."""
        call.clock.away()
        t2 = time.perf_counter()
        resp = await self._send("POST", path, _json_bytes(body), headers)
        data = await self._read(resp)
        call.clock.back()
        if resp.status == 200:
            asked = Call(call.run, call.agent, call.model, body["messages"], call.clock)
            await book_reply(data, asked, t2)
        return data, resp.status

    async def _pass(self, request: Request) -> Response:
        """Any other path (/v1/models, ...) to the upstream and back as it comes."""
        data = (
            b"" if request.method == "GET" else await front.read_body(request, self.max_body_bytes)
        )
        headers = {h: v for h in _PASS if (v := request.headers.get(h))}
        params = list(request.query_params.multi_items())
        resp = await self._send(request.method, request.url.path, data, headers, params)
        kind = resp.headers.get("content-type", "application/json")
        done = BackgroundTask(_release, resp)
        return StreamingResponse(
            resp.content.iter_any(), resp.status, media_type=kind, background=done
        )


class Proxy:
    """`overseer proxy` in a thread of this process: an OpenAI-compatible server on
    `host`:`port` relaying to `upstream` (its base URL, e.g. http://127.0.0.1:8080/v1),
    overseeing each run."""

    def __init__(
        self,
        upstream: str,
        settings: ProxySettings | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_body_bytes: int = front.MAX_BODY_BYTES,
        supervisor_model: Model | None = None,
        redis_url: str | None = None,
        otlp_endpoint: str | None = None,
        sweep_s: float | None = None,
    ) -> None:
        options = ProxyOptions(
            upstream,
            settings or ProxySettings(),
            max_body_bytes,
            redis_url,
            otlp_endpoint,
            sweep_s,
        )
        self.face = ProxyApp(options, supervisor_model=supervisor_model)
        self.upstream = self.face.upstream
        self.settings = self.face.settings
        self._http = front.HttpServer(self.face.app, host, port)  # TCP_NODELAY on its socket

    @property
    def base_url(self) -> str:
        """The proxy's OpenAI-compatible endpoint (ends in /v1)."""
        return self._http.url + "/v1"

    def close(self) -> None:
        """Stop listening, finish the replies in flight, end every run's trace."""
        self._http.stop(flush_s=600)


_WORKER_ENV = "OVERSEER_PROXY_WORKER"


def worker_app() -> Starlette:
    """The app of one worker process of `serve_workers` (uvicorn's factory)."""
    options = pickle.loads(base64.b64decode(os.environ[_WORKER_ENV]))
    assert isinstance(options, ProxyOptions)
    app = ProxyApp(options).app
    server_gc()  # the worker process only serves
    return app


def serve_workers(options: ProxyOptions, *, host: str, port: int, workers: int) -> None:
    """Serve with `workers` uvicorn processes on one port until SIGINT/SIGTERM (each drains
    its replies in flight and ends its runs); their run state in Redis, which is required."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from overseer.models.serve import BACKLOG

    if options.redis_url is None:
        raise ValueError("proxy workers: expected a Redis URL for the runs' shared state")
    os.environ[_WORKER_ENV] = base64.b64encode(pickle.dumps(options)).decode()
    config = uvicorn.Config(
        "overseer.proxy._app:worker_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        backlog=BACKLOG,
        **front.uvicorn_settings(),
    )
    sock = front.listening_socket(host, port, BACKLOG)
    sock.set_inheritable(True)
    Multiprocess(config, sockets=[sock]).run()


def _spans(endpoint: str | None) -> Any:
    """The OpenTelemetry span exporter of the runs, when an endpoint is given or set."""
    if endpoint is None and not any(
        os.environ.get(v)
        for v in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
    ):
        return None
    from overseer.integrations.otel import otlp_spans

    return otlp_spans(endpoint)


def _env_proxy(upstream: str) -> dict[str, Any]:
    """The proxy (and its credentials) the environment names for `upstream`, as aiohttp's
    `trust_env` would find them per request: `proxy=` and `proxy_auth=` arguments, or none."""
    try:
        proxy, auth = get_env_proxy_for_url(URL(upstream))
    except LookupError:  # no proxy for it, or NO_PROXY names it
        return {}
    return {"proxy": proxy, "proxy_auth": auth}


def _json_bytes(body: dict[str, Any]) -> bytes:
    """A request body as compact UTF-8 JSON."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _unreachable(upstream: str, exc: BaseException) -> front.Fault:
    """A 502 naming the upstream and what went wrong on the way to it."""
    why = str(exc) or "no reply in time"
    return front.Fault(502, f"upstream {upstream}: {type(exc).__name__}: {why}", "server_error")


async def _release(resp: aiohttp.ClientResponse) -> None:
    """The connection of a reply passed through, back to the pool (in the event loop)."""
    resp.release()


def _who(who: Who, run: ProxyRun) -> dict[str, str]:
    return {"x-overseer-run": who.run, "x-overseer-agent": who.agent, "x-overseer-trace": run.id}


async def _fault(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, front.Fault)
    return exc.response()
