"""The structured-output helper with the scripted model: validation, bounded re-asks, failure."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import BaseModel

from overseer.models import (
    ModelError,
    ScriptedModel,
    StructuredOutputError,
    TokenLogprob,
    Usage,
    ask_structured,
)
from overseer.models._scripted import count_tokens
from overseer.models._structured import Structured
from overseer.models._types import ModelConnectionError

MSG = [{"role": "user", "content": "Give a number."}]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def number(data: Any) -> int:
    if not isinstance(data, dict) or not isinstance(data.get("n"), int):
        raise ValueError('expected {"n": <integer>}')
    return data["n"]


def positive(n: int) -> None:
    if n <= 0:
        raise ValueError(f"n: expected > 0, got {n}")


class Point(BaseModel):
    x: int
    y: int


async def test_valid_first_time() -> None:
    m = ScriptedModel([{"n": 3}])
    got = await ask_structured(m, MSG, parse=number, schema=SCHEMA, seed=5, max_tokens=40)
    assert isinstance(got, Structured)
    assert (got.value, got.attempts, got.errors) == (3, 1, [])
    assert got.usage == got.completion.usage and got.completion.text == '{"n": 3}'
    call = m.calls[0]
    assert (call["schema"], call["seed"], call["max_tokens"]) == (SCHEMA, 5, 40)


async def test_invalid_json_is_shown_back_then_accepted() -> None:
    m = ScriptedModel(["n is three", {"n": 3}])
    got = await ask_structured(m, MSG, parse=number)
    assert got.value == 3 and got.attempts == 2
    assert len(got.errors) == 1 and got.errors[0].startswith("not JSON")
    second = m.calls[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "n is three"}
    assert second[-1]["content"] == (
        f"That reply is invalid: {got.errors[0]}. Reply again with one JSON object only."
    )
    first_prompt = sum(count_tokens(x["content"]) + 4 for x in m.calls[0]["messages"])
    assert got.usage == Usage(
        first_prompt + got.completion.usage.prompt_tokens,
        count_tokens("n is three") + count_tokens('{"n": 3}'),
    )


async def test_failing_check_then_valid_with_a_custom_reask() -> None:
    m = ScriptedModel([{"n": -1}, {"n": 2}])
    seen: list[tuple[str, str]] = []

    def reask(text: str, error: str) -> str:
        seen.append((text, error))
        return f"fix: {error}"

    got = await ask_structured(m, MSG, parse=number, check=positive, reask=reask)
    assert got.value == 2 and got.errors == ["n: expected > 0, got -1"]
    assert seen == [('{"n": -1}', "n: expected > 0, got -1")]
    assert m.calls[1]["messages"][-1]["content"] == "fix: n: expected > 0, got -1"


async def test_exhausted_reasks_raise_a_typed_error_with_everything_spent() -> None:
    m = ScriptedModel(["no", {"n": 0}, {"m": 1}])
    with pytest.raises(StructuredOutputError) as info:
        await ask_structured(m, MSG, parse=number, check=positive, max_reasks=2)
    err = info.value
    assert isinstance(err, ModelError)
    assert err.attempts == 3 and len(m.calls) == 3
    assert err.errors[0].startswith("not JSON")
    assert err.errors[1:] == ["n: expected > 0, got 0", 'expected {"n": <integer>}']
    assert err.last_text == '{"m": 1}' and err.completion.text == '{"m": 1}'
    assert err.usage.completion_tokens > 0 and err.usage.prompt_tokens > 0
    assert "after 3 attempts" in str(err)


async def test_no_reasks_means_one_reply() -> None:
    m = ScriptedModel(["no", {"n": 1}])
    with pytest.raises(StructuredOutputError):
        await ask_structured(m, MSG, parse=number, max_reasks=0)
    assert len(m.calls) == 1
    with pytest.raises(ValueError, match="max_reasks"):
        await ask_structured(m, MSG, parse=number, max_reasks=-1)


async def test_model_error_propagates_unchanged() -> None:
    boom = ModelConnectionError("server gone")
    m = ScriptedModel(["no", boom])
    with pytest.raises(ModelConnectionError) as info:
        await ask_structured(m, MSG, parse=number)
    assert info.value is boom


async def test_pydantic_class_brings_schema_and_validation() -> None:
    m = ScriptedModel([{"x": 1}, {"x": 1, "y": 2}])
    got = await ask_structured(m, MSG, parse=Point)
    assert got.value == Point(x=1, y=2)
    assert m.calls[0]["schema"] == Point.model_json_schema()
    assert got.errors == ["y: Field required"]
    own = {"type": "object"}
    m2 = ScriptedModel([{"x": 1, "y": 2}])
    await ask_structured(m2, MSG, parse=Point, schema=own)
    assert m2.calls[0]["schema"] == own


async def test_logprobs_of_the_accepted_completion_are_kept() -> None:
    m = ScriptedModel(
        ["bad", {"n": 4}],
        logprobs_fn=lambda i, t: TokenLogprob(t, math.log(0.5), ((t, math.log(0.5)),)),
    )
    got = await ask_structured(m, MSG, parse=number, top_logprobs=5)
    assert all(c["top_logprobs"] == 5 for c in m.calls)
    assert got.completion.logprobs is not None
    assert [t.token for t in got.completion.logprobs] == got.completion.text.split()


async def test_long_rejected_reply_is_cut_when_shown_back() -> None:
    m = ScriptedModel(["x" * 9000, {"n": 1}])
    await ask_structured(m, MSG, parse=number)
    assert m.calls[1]["messages"][-2]["content"] == "x" * 4000
