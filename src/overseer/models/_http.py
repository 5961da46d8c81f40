"""OpenAI-compatible HTTP backend (OpenAI, vLLM, Ollama, llama.cpp server) on the `openai` SDK."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
import weakref
from typing import Any

import openai

from overseer.models._openai_shape import (
    backend_temperature,
    build_request,
    estimate_tokens,
    is_context_overflow,
    parse_response,
)
from overseer.models._retry import (
    LoopThread,
    attempts_text,
    deadline_client,
    retry_delay,
    retryable_status,
)
from overseer.models._types import (
    Completion,
    ContextWindowError,
    Model,
    ModelConnectionError,
    ModelError,
    ModelOutputError,
    ModelRequestError,
    ModelTimeoutError,
    ModelUnavailableError,
    Request,
)


def _typed(exc: openai.OpenAIError, where: str, tries: int, timeout_s: float) -> ModelError:
    """Map the SDK's exceptions (after our retries) onto our typed errors."""
    after = attempts_text(tries)
    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeoutError(
            f"{where}: timed out (no complete reply within {timeout_s:g} s) {after}"
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return ModelConnectionError(f"{where}: cannot connect {after}: {cause}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if retryable_status(status):
            return ModelUnavailableError(f"{where}: HTTP {status} {after}: {exc.message}")
        if status in (400, 413) and is_context_overflow(f"{exc.message} {exc.body}"):
            return ContextWindowError(f"{where}: prompt over the context window: {exc.message}")
        return ModelRequestError(f"{where}: HTTP {status}: {exc.message}")
    if isinstance(exc, openai.APIResponseValidationError):
        return ModelOutputError(f"{where}: reply is not an OpenAI chat completion: {exc}")
    return ModelError(f"{where}: {exc}")


def _transient(exc: openai.OpenAIError) -> tuple[int | None, Any] | None:
    """(status, headers) of a failure worth another attempt; None when it is not."""
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return None, None
    if isinstance(exc, openai.APIStatusError) and retryable_status(exc.status_code):
        return exc.status_code, exc.response.headers
    return None


class OpenAIModel(Model):
    """A chat model behind an OpenAI-compatible `/v1/chat/completions` endpoint.

    `timeout_s` is a deadline for each whole HTTP request (connect and every read; a server
    trickling its reply is cut there). Connection errors, time-outs, 408/409/429 and 5xx are
    retried `max_retries` times with exponential backoff, honouring Retry-After up to 60 s (a
    longer one fails at once); after that a typed ModelError says what kept failing. A reply
    that is not an OpenAI chat completion (truncated JSON, an HTML page, no `choices`) is a
    ModelOutputError naming the URL, a prompt over the server's context window a
    ContextWindowError. A reply without `usage` is counted by estimate (`estimate_tokens`)
    and flagged `Usage.estimated`. `temperature`, when set, replaces every request's own.
    The async API works from any event loop (one client per loop); the sync API runs on a
    private loop of its own.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        temperature: float | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ModelRequestError(f"timeout_s: expected > 0, got {timeout_s}")
        if max_retries < 0:
            raise ModelRequestError(f"max_retries: expected >= 0, got {max_retries}")
        self.name = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.temperature = backend_temperature(temperature)
        self._key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._where = f"model {model} at {base_url or 'api.openai.com'}"
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._rng = random.Random()  # backoff jitter only
        self._sync: LoopThread | None = None

    def _client(self) -> openai.AsyncOpenAI:
        """This event loop's client (an httpx pool is bound to the loop that opened it)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = openai.AsyncOpenAI(
                api_key=self._key,
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=0,  # ours: see _acomplete
                http_client=deadline_client(self.timeout_s),
            )
            self._clients[loop] = client
        return client

    def _body(self, request: Request) -> dict[str, Any]:
        body = build_request(request, self.temperature)
        body["model"] = self.name
        return body

    def _parsed(self, resp: Any, start: float, request: Request) -> Completion:
        latency = time.perf_counter() - start
        if isinstance(resp, str):  # the SDK hands back the text of a non-JSON content type
            raise ModelOutputError(
                f"{self._where}: reply is not an OpenAI chat completion but text: {resp[:200]!r}"
            )
        try:
            return parse_response(
                resp.model_dump(),
                latency_s=latency,
                model=self.name,
                count=estimate_tokens,
                request=request,
            )
        except ModelOutputError as exc:
            detail = str(exc).removeprefix(f"model {self.name}: ")
            raise ModelOutputError(f"{self._where}: {detail}") from None

    async def _attempt(self, body: dict[str, Any]) -> Any:
        try:
            return await self._client().chat.completions.create(**body)
        except json.JSONDecodeError as exc:  # the SDK parses a JSON content type unchecked
            raise ModelOutputError(
                f"{self._where}: reply is not valid JSON ({exc.msg} at char {exc.pos}): "
                f"{exc.doc[:200]!r}"
            ) from exc

    async def _acomplete(self, request: Request) -> Completion:
        body, start, attempt = self._body(request), time.perf_counter(), 0
        while True:
            try:
                resp = await self._attempt(body)
                return self._parsed(resp, start, request)
            except openai.OpenAIError as exc:
                transient = _transient(exc)
                if transient is None:
                    raise _typed(exc, self._where, attempt + 1, self.timeout_s) from exc
                wait = retry_delay(self._where, *transient, attempt, self._rng)
                if attempt >= self.max_retries:
                    raise _typed(exc, self._where, attempt + 1, self.timeout_s) from exc
            await asyncio.sleep(wait)
            attempt += 1

    def _complete(self, request: Request) -> Completion:
        if self._sync is None:
            self._sync = LoopThread()
        return self._sync.run(lambda: self._acomplete(request))

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None
