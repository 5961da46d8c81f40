"""OpenAI-compatible HTTP backend (OpenAI, vLLM, Ollama, llama.cpp server) on the `openai` SDK."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import openai

from overseer.models._openai_shape import build_request, parse_response
from overseer.models._types import (
    Completion,
    Model,
    ModelConnectionError,
    ModelError,
    ModelRequestError,
    ModelTimeoutError,
    ModelUnavailableError,
    validate_messages,
)


def _typed(exc: openai.OpenAIError, where: str) -> ModelError:
    """Map the SDK's exceptions (after its own retries) onto our typed errors."""
    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeoutError(f"{where}: timed out after retries: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        return ModelConnectionError(f"{where}: cannot connect after retries: {exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status == 429 or status >= 500:
            return ModelUnavailableError(f"{where}: HTTP {status} after retries: {exc.message}")
        return ModelRequestError(f"{where}: HTTP {status}: {exc.message}")
    return ModelError(f"{where}: {exc}")


class OpenAIModel(Model):
    """A chat model behind an OpenAI-compatible `/v1/chat/completions` endpoint.

    The SDK retries connection errors, 408/409/429 and 5xx with exponential backoff
    `max_retries` times; after that a typed ModelError says what kept failing.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
    ) -> None:
        if timeout_s <= 0:
            raise ModelRequestError(f"timeout_s: expected > 0, got {timeout_s}")
        if max_retries < 0:
            raise ModelRequestError(f"max_retries: expected >= 0, got {max_retries}")
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.name = model
        self.base_url = base_url
        kwargs: dict[str, Any] = {
            "api_key": key,
            "base_url": base_url,
            "timeout": timeout_s,
            "max_retries": max_retries,
        }
        self._client = openai.OpenAI(**kwargs)
        self._aclient = openai.AsyncOpenAI(**kwargs)

    def _body(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> dict[str, Any]:
        body = build_request(validate_messages(messages), **kw)
        body["model"] = self.name
        return body

    def _where(self) -> str:
        return f"model {self.name} at {self.base_url or 'api.openai.com'}"

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        schema: Mapping[str, Any] | None = None,
        top_logprobs: int = 0,
        seed: int | None = None,
    ) -> Completion:
        body = self._body(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            schema=schema,
            top_logprobs=top_logprobs,
            seed=seed,
        )
        start = time.perf_counter()
        try:
            resp = self._client.chat.completions.create(**body)
        except openai.OpenAIError as exc:
            raise _typed(exc, self._where()) from exc
        return parse_response(
            resp.model_dump(), latency_s=time.perf_counter() - start, model=self.name
        )

    async def acomplete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        stop: Sequence[str] | None = None,
        schema: Mapping[str, Any] | None = None,
        top_logprobs: int = 0,
        seed: int | None = None,
    ) -> Completion:
        body = self._body(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            schema=schema,
            top_logprobs=top_logprobs,
            seed=seed,
        )
        start = time.perf_counter()
        try:
            resp = await self._aclient.chat.completions.create(**body)
        except openai.OpenAIError as exc:
            raise _typed(exc, self._where()) from exc
        return parse_response(
            resp.model_dump(), latency_s=time.perf_counter() - start, model=self.name
        )

    def close(self) -> None:
        self._client.close()
