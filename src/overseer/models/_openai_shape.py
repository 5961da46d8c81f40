"""Build OpenAI-shaped chat requests and read OpenAI-shaped responses (servers and llama.cpp)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from overseer.models._types import (
    Completion,
    Message,
    ModelOutputError,
    ModelRequestError,
    TokenLogprob,
    Usage,
)


def build_request(
    messages: list[Message],
    *,
    max_tokens: int,
    temperature: float,
    stop: Sequence[str] | None,
    schema: Mapping[str, Any] | None,
    top_logprobs: int,
    seed: int | None,
) -> dict[str, Any]:
    """The chat-completions body shared by every OpenAI-compatible backend."""
    if max_tokens < 1:
        raise ModelRequestError(f"max_tokens: expected >= 1, got {max_tokens}")
    if not 0.0 <= temperature <= 2.0:
        raise ModelRequestError(f"temperature: expected 0..2, got {temperature}")
    if not 0 <= top_logprobs <= 20:
        raise ModelRequestError(f"top_logprobs: expected 0..20, got {top_logprobs}")
    body: dict[str, Any] = {
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    if stop:
        body["stop"] = list(stop)
    if seed is not None:
        body["seed"] = seed
    if top_logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = top_logprobs
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": dict(schema)},
        }
    return body


def _logprobs(choice: Mapping[str, Any]) -> tuple[TokenLogprob, ...] | None:
    content = (choice.get("logprobs") or {}).get("content")
    if content is None:
        return None
    return tuple(
        TokenLogprob(
            token=str(t["token"]),
            logprob=float(t["logprob"]),
            top=tuple((str(a["token"]), float(a["logprob"])) for a in t.get("top_logprobs") or ()),
        )
        for t in content
    )


def parse_response(data: Mapping[str, Any], *, latency_s: float, model: str) -> Completion:
    """Turn an OpenAI chat-completions response dict into a Completion; shape errors are typed."""
    try:
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        return Completion(
            text=text,
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                cached_prompt_tokens=int(details.get("cached_tokens") or 0),
            ),
            latency_s=latency_s,
            model=model,
            finish_reason=str(choice.get("finish_reason") or ""),
            logprobs=_logprobs(choice),
            raw=data,
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ModelOutputError(
            f"model {model}: response is not an OpenAI chat completion ({exc!r}): {str(data)[:300]}"
        ) from exc
