"""OpenAI-compatible HTTP backend (OpenAI, vLLM, Ollama, llama.cpp server) on the `openai` SDK."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai

from overseer.models._openai_shape import (
    backend_temperature,
    build_request,
    is_context_overflow,
    parse_response,
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


def _typed(exc: openai.OpenAIError, where: str, tries: int) -> ModelError:
    """Map the SDK's exceptions (after its own retries) onto our typed errors."""
    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeoutError(f"{where}: timed out after retries ({tries} attempts): {exc}")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return ModelConnectionError(
            f"{where}: cannot connect after retries ({tries} attempts): {cause}"
        )
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status == 429 or status >= 500:
            return ModelUnavailableError(
                f"{where}: HTTP {status} after retries ({tries} attempts): {exc.message}"
            )
        if status in (400, 413) and is_context_overflow(f"{exc.message} {exc.body}"):
            return ContextWindowError(f"{where}: prompt over the context window: {exc.message}")
        return ModelRequestError(f"{where}: HTTP {status}: {exc.message}")
    if isinstance(exc, openai.APIResponseValidationError):
        return ModelOutputError(f"{where}: reply is not an OpenAI chat completion: {exc}")
    return ModelError(f"{where}: {exc}")


class OpenAIModel(Model):
    """A chat model behind an OpenAI-compatible `/v1/chat/completions` endpoint.

    Each attempt may take `timeout_s`; the SDK retries connection errors, time-outs,
    408/409/429 (honouring Retry-After up to 60 s) and 5xx with exponential backoff
    `max_retries` times; after that a typed ModelError says what kept failing. A reply that is
    not an OpenAI chat completion (truncated JSON, an HTML page, no `choices`) is a
    ModelOutputError, a prompt over the server's context window a ContextWindowError.
    `temperature`, when set, replaces every request's own.
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
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.name = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.temperature = backend_temperature(temperature)
        kwargs: dict[str, Any] = {
            "api_key": key,
            "base_url": base_url,
            "timeout": timeout_s,
            "max_retries": max_retries,
        }
        self._client = openai.OpenAI(**kwargs)
        self._aclient = openai.AsyncOpenAI(**kwargs)

    def _body(self, request: Request) -> dict[str, Any]:
        body = build_request(request, self.temperature)
        body["model"] = self.name
        return body

    @contextmanager
    def _typed_errors(self) -> Iterator[None]:
        """Raise the SDK's failures (after its own retries) as typed ModelErrors."""
        where = f"model {self.name} at {self.base_url or 'api.openai.com'}"
        try:
            yield
        except openai.OpenAIError as exc:
            raise _typed(exc, where, self.max_retries + 1) from exc
        except json.JSONDecodeError as exc:  # the SDK parses a JSON content type unchecked
            raise ModelOutputError(
                f"{where}: reply is not valid JSON ({exc.msg} at char {exc.pos}): "
                f"{exc.doc[:200]!r}"
            ) from exc

    def _parsed(self, resp: Any, start: float) -> Completion:
        latency = time.perf_counter() - start
        if isinstance(resp, str):  # the SDK hands back the text of a non-JSON content type
            raise ModelOutputError(
                f"model {self.name} at {self.base_url or 'api.openai.com'}: reply is not an "
                f"OpenAI chat completion but text: {resp[:200]!r}"
            )
        return parse_response(resp.model_dump(), latency_s=latency, model=self.name)

    def _complete(self, request: Request) -> Completion:
        start = time.perf_counter()
        with self._typed_errors():
            resp = self._client.chat.completions.create(**self._body(request))
        return self._parsed(resp, start)

    async def _acomplete(self, request: Request) -> Completion:
        start = time.perf_counter()
        with self._typed_errors():
            resp = await self._aclient.chat.completions.create(**self._body(request))
        return self._parsed(resp, start)

    def close(self) -> None:
        self._client.close()
