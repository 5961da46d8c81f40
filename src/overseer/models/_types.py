"""The one model interface every LLM call goes through, and the records it returns."""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict


class Message(TypedDict):
    """A chat message in the OpenAI shape: role plus text content."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str


@dataclass(frozen=True)
class Usage:
    """Tokens as the backend counted them; `cached_prompt_tokens` came from its prefix cache."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_prompt_tokens + other.cached_prompt_tokens,
        )


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token with its log-probability and the top-k alternatives at that position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Completion:
    """What one model call produced: text, usage, optional per-token logprobs, wall latency."""

    text: str
    usage: Usage
    latency_s: float
    model: str = ""
    finish_reason: str = ""
    logprobs: tuple[TokenLogprob, ...] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def json(self) -> Any:
        """Parse the text as JSON; raises ModelOutputError naming the text when it is not JSON."""
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise ModelOutputError(
                f"model {self.model or '?'} returned text that is not JSON ({exc.msg} at "
                f"char {exc.pos}): {self.text[:200]!r}"
            ) from exc


class ModelError(RuntimeError):
    """Base of every typed failure of a model backend."""


class ModelNotInstalledError(ModelError):
    """A named model's package or file is missing; the message says how to install it."""


class ModelConnectionError(ModelError):
    """The server could not be reached after the bounded retries."""


class ModelTimeoutError(ModelError):
    """The call exceeded its time limit after the bounded retries."""


class ModelUnavailableError(ModelError):
    """The server kept answering 429 or 5xx after the bounded retries."""


class ModelRequestError(ModelError):
    """The backend rejected the request itself (bad parameters, prompt too long, ...)."""


class ModelOutputError(ModelError):
    """The backend answered, but not in the shape that was asked for."""


def validate_messages(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Check the chat messages before they reach a backend, so errors name the bad message."""
    if not messages:
        raise ModelRequestError("messages: expected at least one message, got none")
    out: list[Message] = []
    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content")
        if role not in ("system", "user", "assistant", "tool"):
            raise ModelRequestError(
                f"messages[{i}].role: expected system|user|assistant|tool, got {role!r}"
            )
        if not isinstance(content, str):
            raise ModelRequestError(
                f"messages[{i}].content: expected a string, got {type(content).__name__}"
            )
        out.append({"role": role, "content": content})
    return out


class Model(ABC):
    """A chat model. Backends implement `complete`; `acomplete` defaults to a worker thread.

    `schema` asks for JSON that fits a JSON Schema; `top_logprobs` > 0 asks for per-token
    logprobs with that many alternatives.
    """

    name: str = "model"

    @abstractmethod
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
    ) -> Completion: ...

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
        return await asyncio.to_thread(
            self.complete,
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            schema=schema,
            top_logprobs=top_logprobs,
            seed=seed,
        )

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release the backend's resources (model weights, connections)."""

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
