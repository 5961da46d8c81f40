"""The one model interface every LLM call goes through, and the records it returns."""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, Unpack, cast


class Message(TypedDict):
    """A chat message in the OpenAI shape: role plus text content."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str


@dataclass(frozen=True)
class Usage:
    """Tokens as the backend counted them; `cached_prompt_tokens` came from its prefix cache.
    `estimated`: the backend reported no usage and the counts are our estimate (see
    `estimate_tokens`); a sum is estimated when any of its parts is."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_prompt_tokens + other.cached_prompt_tokens,
            self.estimated or other.estimated,
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


class ModelCancelledError(ModelError):
    """The call was stopped before it finished (its caller was cancelled or the model closed)."""


class ModelRequestError(ModelError):
    """The backend rejected the request itself (bad parameters, prompt too long, ...)."""


class ContextWindowError(ModelRequestError):
    """The prompt (plus the tokens asked for) does not fit the model's context window; the
    same request fails again on every retry, so a run stops the first time (`n_ctx` sets it)."""


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


class RequestOptions(TypedDict, total=False):
    """The keyword options of `Model.complete`/`acomplete`; their defaults are `Request`'s."""

    max_tokens: int
    temperature: float
    stop: Sequence[str] | None
    schema: Mapping[str, Any] | None
    top_logprobs: int
    seed: int | None
    actor: str


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@dataclass(frozen=True)
class Request:
    """One chat request, validated once when built, so every backend gets checked arguments.

    `schema` asks for JSON that fits a JSON Schema; `top_logprobs` > 0 asks for per-token
    logprobs with that many alternatives (at most 20); `stop` ends generation at any of its
    strings. `actor` names who asks (set by the run's metered model: an agent's name,
    "supervisor", "decision", ...); real backends ignore it, the scripted test double may
    answer by it. A bad argument raises ModelRequestError naming it.
    """

    messages: tuple[Message, ...]
    max_tokens: int = 256
    temperature: float = 0.0
    stop: Sequence[str] = ()
    schema: Mapping[str, Any] | None = None
    top_logprobs: int = 0
    seed: int | None = None
    actor: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(validate_messages(self.messages)))
        stop = () if self.stop is None else self.stop
        if isinstance(stop, str) or not all(isinstance(s, str) for s in stop):
            raise ModelRequestError(f"stop: expected a list of strings, got {stop!r}")
        object.__setattr__(self, "stop", tuple(stop))
        if not _is_int(self.max_tokens) or self.max_tokens < 1:
            raise ModelRequestError(f"max_tokens: expected an int >= 1, got {self.max_tokens!r}")
        if not isinstance(self.temperature, (int, float)) or not 0.0 <= self.temperature <= 2.0:
            raise ModelRequestError(f"temperature: expected 0..2, got {self.temperature!r}")
        if not _is_int(self.top_logprobs) or not 0 <= self.top_logprobs <= 20:
            raise ModelRequestError(f"top_logprobs: expected 0..20, got {self.top_logprobs!r}")
        if self.seed is not None and not _is_int(self.seed):
            raise ModelRequestError(f"seed: expected an int or None, got {self.seed!r}")
        if self.schema is not None and not isinstance(self.schema, Mapping):
            raise ModelRequestError(f"schema: expected a JSON Schema object, got {self.schema!r}")

    @classmethod
    def of(
        cls, messages: Sequence[Mapping[str, Any]], **options: Unpack[RequestOptions]
    ) -> Request:
        """A request from chat messages as callers write them (role/content dicts, checked
        in `__post_init__`); `stop=None` means no stop strings."""
        return cls(cast("tuple[Message, ...]", tuple(messages)), **cast(Any, options))


class Model(ABC):
    """A chat model. Backends implement `_complete(request)`; `_acomplete` defaults to a thread.

    Callers use `complete`/`acomplete(messages, *, max_tokens=256, temperature=0.0, stop=None,
    schema=None, top_logprobs=0, seed=None, actor="")`: both build one validated `Request`
    here, so a backend never sees (or re-checks) a bad argument.
    """

    name: str = "model"

    def complete(
        self, messages: Sequence[Mapping[str, Any]], **options: Unpack[RequestOptions]
    ) -> Completion:
        """One completion of `messages`; see `Request` for the options."""
        return self._complete(Request.of(messages, **options))

    async def acomplete(
        self, messages: Sequence[Mapping[str, Any]], **options: Unpack[RequestOptions]
    ) -> Completion:
        """`complete` for asyncio callers."""
        return await self._acomplete(Request.of(messages, **options))

    @abstractmethod
    def _complete(self, request: Request) -> Completion:
        """The backend's call for one validated request."""

    async def _acomplete(self, request: Request) -> Completion:
        """The asyncio twin of `_complete`; by default it runs in a worker thread."""
        return await asyncio.to_thread(self._complete, request)

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release the backend's resources (model weights, connections)."""

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
