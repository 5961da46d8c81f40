"""Is an OpenAI-compatible server there? Two requests before a run, one line when it is not.

The pre-check asks `GET /models` (a 404/405 there is fine: not every server lists models), then
for a one-token chat completion, which must come back with at least one choice. It uses the
same rules as a run's calls: `timeout_s` is a deadline for each whole request, and what a run
would retry (refused or closed connections, time-outs, 408, 409, 429, 5xx) is retried
`retries` times with the same backoff and Retry-After cap.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from typing import Any

import httpx2 as httpx  # the HTTP library of the openai SDK (3.x)

from overseer.models import _types as t
from overseer.models._retry import LoopThread, attempts_text, retry_delay, retryable_status

PROBE_CHAT = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}


def _refused_connection(exc: BaseException) -> bool:
    """Whether a connect error was, somewhere down its chain, a refused connection."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "refused" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class _Probe:
    """One server's pre-check requests, each under the deadline and the retry policy."""

    def __init__(self, base: str, api_key: str | None, timeout_s: float, retries: int) -> None:
        self.base, self.timeout_s, self.retries = base, timeout_s, retries
        self.headers = {"Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.where = f"model server {base}"
        self.rng = random.Random()

    async def _once(self, client: httpx.AsyncClient, path: str, body: Any) -> httpx.Response:
        async with asyncio.timeout(self.timeout_s):
            if body is None:
                return await client.get(self.base + path, headers=self.headers)
            return await client.post(self.base + path, json=body, headers=self.headers)

    def _failure(self, what: str, exc: BaseException, tries: int) -> t.ModelError:
        where, after = f"{self.where} ({what})", attempts_text(tries)
        if isinstance(exc, (TimeoutError, httpx.TimeoutException)):
            return t.ModelTimeoutError(f"{where}: timed out after {self.timeout_s:g} s {after}")
        if isinstance(exc, httpx.ConnectError) and _refused_connection(exc):
            return t.ModelConnectionError(f"{where}: connection refused {after}")
        if isinstance(exc, httpx.RemoteProtocolError):
            return t.ModelConnectionError(f"{where}: connection closed without a reply {after}")
        return t.ModelConnectionError(f"{where}: cannot connect {after}: {exc}")

    async def request(self, client: httpx.AsyncClient, path: str, body: Any) -> httpx.Response:
        """The reply to `path` (GET, or POST of `body`); transport faults and retryable
        statuses are retried, then raised as typed errors naming the URL."""
        what = f"GET {path}" if body is None else f"POST {path}"
        attempt = 0
        while True:
            try:
                resp = await self._once(client, path, body)
            except (TimeoutError, httpx.TransportError) as exc:
                if attempt >= self.retries:
                    raise self._failure(what, exc, attempt + 1) from None
                wait = retry_delay(self.where, None, None, attempt, self.rng)
            else:
                if not retryable_status(resp.status_code):
                    return resp
                wait = retry_delay(
                    f"{self.where} ({what})", resp.status_code, resp.headers, attempt, self.rng
                )
                if attempt >= self.retries:
                    raise t.ModelUnavailableError(
                        f"{self.where} ({what}): HTTP {resp.status_code} "
                        f"{resp.reason_phrase} {attempts_text(attempt + 1)}"
                    )
            await asyncio.sleep(wait)
            attempt += 1


def _json_with(raw: bytes, key: str, where: str, what: str) -> dict[str, Any]:
    """The JSON object `raw`, whose `key` is a list; ModelOutputError otherwise."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        text = raw[:80].decode("utf-8", "replace")
        raise t.ModelOutputError(f"{where}: not an OpenAI-compatible {what} reply: {text!r}")
    return data


def _refused(resp: httpx.Response, where: str) -> t.ModelError:
    return t.ModelRequestError(f"{where}: HTTP {resp.status_code} {resp.reason_phrase}")


async def _check(probe: _Probe, model: str) -> None:
    where = probe.where
    async with httpx.AsyncClient(timeout=probe.timeout_s) as client:
        resp = await probe.request(client, "/models", None)
        if resp.status_code not in (404, 405):
            if resp.status_code >= 400:
                raise _refused(resp, f"{where} (GET /models)")
            _json_with(resp.content, "data", where, "/models")
        resp = await probe.request(client, "/chat/completions", {**PROBE_CHAT, "model": model})
        if resp.status_code in (401, 403, 404):
            raise _refused(resp, f"{where} (POST /chat/completions)")
        if resp.status_code >= 400:
            return  # the server answered our one-token ping in its own error shape: it is there
        data = _json_with(resp.content, "choices", where, "chat")
        if not data["choices"]:
            raise t.ModelOutputError(
                f'{where} (POST /chat/completions): the reply has no choices ("choices": [])'
            )


def check_server(
    base_url: str | None,
    *,
    model: str = "",
    api_key: str | None = None,
    timeout_s: float = 10.0,
    retries: int = 0,
) -> None:
    """Raise a typed ModelError naming `base_url` and what failed unless the server answers
    `GET /models` (or 404/405) and a one-token chat completion the OpenAI way.

    Each request may take `timeout_s` seconds in all and is retried `retries` times on what a
    run would retry. `base_url` and `api_key` default as in `load_model` ($OPENAI_BASE_URL,
    $OPENAI_API_KEY), then api.openai.com.
    """
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    base = base_url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise t.ModelRequestError(f"--base-url {base_url!r}: expected an http:// or https:// URL")
    probe = _Probe(base, api_key, timeout_s, retries)
    runner = LoopThread()
    try:
        runner.run(lambda: _check(probe, model))
    finally:
        runner.close()
