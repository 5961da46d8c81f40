"""Schema-constrained JSON from a model, repaired by re-asking a bounded number of times."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from overseer.models import Message, Model, ModelError, Usage

T = TypeVar("T", bound=BaseModel)


@dataclass
class Asked(Generic[T]):
    """What a bounded ask returned: the value (None on failure), the errors, the tokens spent."""

    value: T | None
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0


def _errors(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(x) for x in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors()
    )


async def ask_json(
    model: Model,
    messages: list[Message],
    cls: type[T],
    *,
    check: Callable[[T], None] | None = None,
    max_tries: int = 3,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = 0,
) -> Asked[T]:
    """Ask for a `cls` under its JSON Schema; a reply that does not parse, validate or pass
    `check` (which raises ValueError) is shown back with the error, at most `max_tries` asks."""
    if max_tries < 1:
        raise ValueError(f"max_tries: expected >= 1, got {max_tries}")
    out: Asked[T] = Asked(None)
    convo = list(messages)
    schema: dict[str, Any] = cls.model_json_schema()
    for _ in range(max_tries):
        out.attempts += 1
        try:
            c = await model.acomplete(
                convo, max_tokens=max_tokens, temperature=temperature, schema=schema, seed=seed
            )
        except ModelError as exc:
            out.errors.append(f"model error: {exc}")
            break
        out.usage += c.usage
        try:
            value = cls.model_validate(json.loads(c.text))
            if check is not None:
                check(value)
        except json.JSONDecodeError as exc:
            err = f"not JSON ({exc.msg} at char {exc.pos})"
        except ValidationError as exc:
            err = _errors(exc)
        except ValueError as exc:
            err = str(exc)
        else:
            out.value = value
            return out
        out.errors.append(err)
        convo = [
            *convo,
            {"role": "assistant", "content": c.text[:4000]},
            {
                "role": "user",
                "content": f"That reply is invalid: {err}. Reply again with one "
                "corrected JSON object only.",
            },
        ]
    return out
