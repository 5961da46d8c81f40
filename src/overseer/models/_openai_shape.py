"""Build OpenAI-shaped chat requests and read OpenAI-shaped responses (servers and llama.cpp)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from overseer.models._types import (
    Completion,
    ModelOutputError,
    ModelRequestError,
    Request,
    TokenLogprob,
    Usage,
)

# How servers say a prompt does not fit: llama.cpp ("exceed_context_size_error", "exceeds the
# available context size"), OpenAI ("context_length_exceeded"), vLLM ("maximum context length").
_CONTEXT_OVERFLOW = re.compile(
    r"exceed_context_size|context_length_exceeded|exceeds the available context"
    r"|maximum context length|context window|input is too large",
    re.IGNORECASE,
)


def is_context_overflow(error: object) -> bool:
    """Whether a backend's error (a message, or an error body) says the prompt is too long."""
    return bool(_CONTEXT_OVERFLOW.search(str(error)))


def backend_temperature(value: float | None) -> float | None:
    """A backend's fixed sampling temperature (None: each request's own), checked once."""
    if value is not None and not 0.0 <= value <= 2.0:
        raise ModelRequestError(f"temperature: expected 0..2, got {value!r}")
    return value


def build_request(request: Request, temperature: float | None = None) -> dict[str, Any]:
    """The chat-completions body shared by every OpenAI-compatible backend; `temperature`
    (the backend's own setting, if any) replaces the request's."""
    body: dict[str, Any] = {
        "messages": list(request.messages),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature if temperature is None else temperature,
    }
    if request.stop:
        body["stop"] = list(request.stop)
    if request.seed is not None:
        body["seed"] = request.seed
    if request.top_logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = request.top_logprobs
    if request.schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": dict(request.schema)},
        }
    return body


def logprobs_of(choice: Mapping[str, Any]) -> tuple[TokenLogprob, ...] | None:
    """A chat-completion choice's token logprobs (`{"logprobs": {"content": [...]}}`, as the
    OpenAI API and llama.cpp write them), None when it has none."""
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


CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4


def estimate_tokens(text: str) -> int:
    """Tokens of `text` by the usual rule for English with BPE tokenizers: one per 4 characters,
    rounded up. Used only for HTTP servers that report no usage (a documented approximation)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimated_usage(request: Request, text: str, count: Callable[[str], int]) -> Usage:
    """Usage counted by `count` (a tokenizer) when the backend reported none: each message's
    content plus `MESSAGE_OVERHEAD_TOKENS` for its role and separators, and the reply."""
    prompt = sum(count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in request.messages)
    return Usage(prompt_tokens=prompt, completion_tokens=count(text) if text else 0, estimated=True)


def _usage(data: Mapping[str, Any]) -> Usage | None:
    """The reported usage, or None when the reply has none (or only zeros)."""
    usage = data.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    u = Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_prompt_tokens=int(details.get("cached_tokens") or 0),
    )
    return u if u.total_tokens else None


def parse_response(
    data: Mapping[str, Any],
    *,
    latency_s: float,
    model: str,
    count: Callable[[str], int] | None = None,
    request: Request | None = None,
) -> Completion:
    """Turn an OpenAI chat-completions response dict into a Completion; shape errors are typed.
    A reply without usage is counted with `count` over `request` and the text (estimated)."""
    if data.get("choices") == []:
        raise ModelOutputError(
            f"model {model}: response is not an OpenAI chat completion: the reply has no "
            'choices ("choices": [])'
        )
    try:
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        usage = _usage(data)
        if usage is None:
            usage = Usage()
            if count is not None and request is not None:
                usage = estimated_usage(request, text, count)
        return Completion(
            text=text,
            usage=usage,
            latency_s=latency_s,
            model=model,
            finish_reason=str(choice.get("finish_reason") or ""),
            logprobs=logprobs_of(choice),
            raw=data,
        )
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ModelOutputError(
            f"model {model}: response is not an OpenAI chat completion ({exc!r}): {str(data)[:300]}"
        ) from exc
