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


_ROLES = ("system", "user", "assistant", "tool")


def validate_messages(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Check the chat messages before they reach a backend, so errors name the bad message."""
    if not messages:
        raise ModelRequestError("messages: expected at least one message, got none")
    out: list[Message] = []
    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content")
        if role not in _ROLES:
            raise ModelRequestError(
                f"messages[{i}].role: expected system|user|assistant|tool, got {role!r}"
            )
        if not isinstance(content, str):
            raise ModelRequestError(
                f"messages[{i}].content: expected a string, got {type(content).__name__}"
            )
        out.append({"role": role, "content": content})
    return out


def _plain_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[Message, ...]:
    """`validate_messages` as a tuple; plain dicts of two strings (what callers write) are
    copied without a call per message, anything else goes through the full check."""
    try:
        out: tuple[Any, ...] = tuple(
            [{"role": m["role"], "content": m["content"]} for m in messages]
        )
    except (KeyError, TypeError, AttributeError):
        return tuple(validate_messages(messages))
    for m in out:
        if m["role"] not in _ROLES or type(m["content"]) is not str:
            return tuple(validate_messages(messages))
    return out or tuple(validate_messages(messages))  # none: the full check says so


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
    return type(x) is int or (isinstance(x, int) and not isinstance(x, bool))


def _check_request(d: dict[str, Any]) -> None:
    """Check and normalise a Request's fields in place (its `__dict__`): the messages copied
    as plain role/content dicts, `stop` as a tuple; a bad argument is a ModelRequestError."""
    d["messages"] = _plain_messages(d["messages"])
    stop, max_tokens, temperature = d["stop"], d["max_tokens"], d["temperature"]
    top, seed, schema = d["top_logprobs"], d["seed"], d["schema"]
    if (  # the usual types and ranges, read once; anything else gets the checks one by one
        type(stop) is tuple
        and not stop
        and type(max_tokens) is int
        and max_tokens >= 1
        and type(temperature) is float
        and 0.0 <= temperature <= 2.0
        and type(top) is int
        and 0 <= top <= 20
        and (seed is None or type(seed) is int)
        and (schema is None or type(schema) is dict)
    ):
        return
    d["stop"] = _checked_stop(stop)
    if not _is_int(max_tokens) or max_tokens < 1:
        raise ModelRequestError(f"max_tokens: expected an int >= 1, got {max_tokens!r}")
    if not isinstance(temperature, (int, float)) or not 0.0 <= temperature <= 2.0:
        raise ModelRequestError(f"temperature: expected 0..2, got {temperature!r}")
    if not _is_int(top) or not 0 <= top <= 20:
        raise ModelRequestError(f"top_logprobs: expected 0..20, got {top!r}")
    if seed is not None and not _is_int(seed):
        raise ModelRequestError(f"seed: expected an int or None, got {seed!r}")
    if schema is not None and not isinstance(schema, Mapping):
        raise ModelRequestError(f"schema: expected a JSON Schema object, got {schema!r}")


def _checked_stop(stop: Any) -> tuple[str, ...]:
    """The stop strings as a tuple (None: none); anything but a sequence of strings is a
    ModelRequestError."""
    stop = () if stop is None else stop
    if isinstance(stop, str) or not all(isinstance(s, str) for s in stop):
        raise ModelRequestError(f"stop: expected a list of strings, got {stop!r}")
    return tuple(stop)


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
        _check_request(self.__dict__)  # frozen: the checked fields go in without __setattr__

    @classmethod
    def of(
        cls, messages: Sequence[Mapping[str, Any]], **options: Unpack[RequestOptions]
    ) -> Request:
        """A request from chat messages as callers write them (role/content dicts, checked
        as `__post_init__` checks them); `stop=None` means no stop strings."""
        return cls.of_options(messages, options)

    @classmethod
    def of_options(
        cls, messages: Sequence[Mapping[str, Any]], options: Mapping[str, Any]
    ) -> Request:
        """`of(messages, **options)` for a caller that holds the options as a dict already (a
        model's `acomplete`): the same checks, without the dataclass's field-by-field
        `__init__` (a few microseconds per model call); an unknown option is the dataclass's
        TypeError."""
        if cls is not Request or not options.keys() <= _REQUEST_DEFAULTS.keys():
            return cls(cast("tuple[Message, ...]", tuple(messages)), **cast(Any, options))
        r = object.__new__(cls)
        d = r.__dict__
        d["messages"] = messages
        d.update(_REQUEST_DEFAULTS)
        d.update(options)
        _check_request(d)
        return r


_REQUEST_DEFAULTS: dict[str, Any] = {
    "max_tokens": 256,
    "temperature": 0.0,
    "stop": (),
    "schema": None,
    "top_logprobs": 0,
    "seed": None,
    "actor": "",
}


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
        return self._complete(Request.of_options(messages, options))

    async def acomplete(
        self, messages: Sequence[Mapping[str, Any]], **options: Unpack[RequestOptions]
    ) -> Completion:
        """`complete` for asyncio callers."""
        return await self._acomplete(Request.of_options(messages, options))

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
