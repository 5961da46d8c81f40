"""Structured output: ask for JSON under a schema, validate it, re-ask a bounded number of times.

Every caller that wants JSON from a model (agent steps, supervisor decisions, MASFly planning,
the Watcher) goes through `ask_structured`: one place for the schema, the validation, the
re-ask turns and the typed failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel, ValidationError

from overseer.models._types import Completion, Message, Model, ModelOutputError, Usage

T = TypeVar("T")

REPLY_CUT = 4000  # characters of a rejected reply shown back to the model


@dataclass(frozen=True)
class Structured(Generic[T]):
    """An accepted reply: its parsed value, its Completion (text, logprobs), the number of
    replies read, the tokens of all of them, and the errors of the rejected ones."""

    value: T
    completion: Completion
    attempts: int
    usage: Usage
    errors: list[str] = field(default_factory=list)


class StructuredOutputError(ModelOutputError):
    """No reply was valid after the bounded re-asks; carries every error and the tokens spent."""

    def __init__(self, attempts: int, errors: list[str], usage: Usage, completion: Completion):
        super().__init__(f"no valid reply after {attempts} attempts: {errors[-1]}")
        self.attempts = attempts
        self.errors = errors
        self.usage = usage
        self.completion = completion
        self.last_text = completion.text


def default_reask(text: str, error: str) -> str:
    """The user turn after a rejected reply: what is wrong, and what to send instead."""
    return f"That reply is invalid: {error}. Reply again with one JSON object only."


def _describe(exc: ValueError) -> str:
    """A one-line error; pydantic's errors as `field.path: message; ...`."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '(top level)'}: {e['msg']}"
            for e in exc.errors()
        )
    return str(exc)


def _parser(
    parse: type[T] | Callable[[Any], T], schema: Mapping[str, Any] | None
) -> tuple[Callable[[Any], T], Mapping[str, Any] | None]:
    """(parse function, schema); a pydantic class brings its own JSON Schema and validator."""
    if isinstance(parse, type) and issubclass(parse, BaseModel):
        validate: Callable[[Any], T] = parse.model_validate  # type: ignore[assignment]
        return validate, parse.model_json_schema() if schema is None else schema
    return cast("Callable[[Any], T]", parse), schema  # a function, or a class called as one


def _accept(
    text: str, parse: Callable[[Any], T], check: Callable[[T], None] | None, as_json: bool
) -> T:
    """The value of a reply; ValueError (or pydantic's ValidationError) says what is wrong."""
    data: Any = text
    if as_json:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc.msg} at char {exc.pos})") from None
    value = parse(data)
    if check is not None:
        check(value)
    return value


async def ask_structured(
    model: Model,
    messages: Sequence[Mapping[str, Any]],
    *,
    parse: type[T] | Callable[[Any], T],
    schema: Mapping[str, Any] | None = None,
    check: Callable[[T], None] | None = None,
    max_reasks: int = 2,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
    top_logprobs: int = 0,
    reask: Callable[[str, str], str] | None = None,
    as_json: bool = True,
) -> Structured[T]:
    """Ask `model` for one JSON value under `schema`, parsed by `parse` and vetted by `check`.

    `parse` takes the decoded JSON; a pydantic class means its `model_validate`, and its JSON
    Schema when `schema` is None. `parse` and `check` raise ValueError saying what is wrong.
    A reply that is not JSON, does not parse or fails the check is shown back (cut to 4,000
    characters) with `reask(text, error)` as the next user turn, at most `max_reasks` times;
    then StructuredOutputError. A ModelError of the model call itself propagates unchanged
    (the tokens of earlier replies are then only in the ledger of a metered model).
    With `as_json=False`, `parse` gets the raw text (e.g. code in a fenced block).
    """
    if max_reasks < 0:
        raise ValueError(f"max_reasks: expected >= 0, got {max_reasks}")
    parse_fn, schema = _parser(parse, schema)
    convo: list[Mapping[str, Any]] = list(messages)
    errors: list[str] = []
    usage: Usage | None = None  # the replies' tokens (no sum to make for a first-time reply)
    for attempt in range(1, max_reasks + 2):
        c = await model.acomplete(
            convo,
            max_tokens=max_tokens,
            temperature=temperature,
            schema=schema,
            seed=seed,
            top_logprobs=top_logprobs,
        )
        usage = c.usage if usage is None else usage + c.usage
        try:
            value = _accept(c.text, parse_fn, check, as_json)
        except ValueError as exc:
            errors.append(_describe(exc))
        else:
            return Structured(value, c, attempt, usage, errors)
        convo += _reask_turns(c.text, errors[-1], reask or default_reask)
    raise StructuredOutputError(max_reasks + 1, errors, usage or Usage(), c)


def _reask_turns(text: str, error: str, reask: Callable[[str, str], str]) -> list[Message]:
    """The rejected reply (cut to REPLY_CUT characters) and the user turn that asks again."""
    return [
        {"role": "assistant", "content": text[:REPLY_CUT]},
        {"role": "user", "content": reask(text, error)},
    ]
