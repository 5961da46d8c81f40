"""The agent step through the structured-output helper: logprobs, accepted completion, errors."""

from __future__ import annotations

import pytest

from overseer.models import ScriptedModel
from overseer.models.errors import ModelConnectionError
from overseer.runtime import AgentSpec
from overseer.runtime._agent import Agent, AgentStepError

MSG = [{"role": "user", "content": "Task: say hi"}]
ANSWER = {"thought": "easy", "action": "answer", "answer": "hi"}


async def test_ask_returns_the_accepted_completion_with_its_logprobs() -> None:
    model = ScriptedModel(["not json", ANSWER])
    agent = Agent(AgentSpec(name="a1"), model, [], top_logprobs=5, seed=7)
    data, completion = await agent._ask(MSG)  # type: ignore[arg-type]
    assert data == ANSWER
    assert completion.logprobs is not None and len(completion.logprobs[0].top) == 5
    assert [c["top_logprobs"] for c in model.calls] == [5, 5]
    assert [c["seed"] for c in model.calls] == [7, 7]
    assert "That reply is invalid: not JSON" in model.calls[1]["messages"][-1]["content"]


async def test_ask_without_logprobs_by_default() -> None:
    model = ScriptedModel([ANSWER])
    _, completion = await Agent(AgentSpec(name="a1"), model, [])._ask(MSG)  # type: ignore[arg-type]
    assert completion.logprobs is None and model.calls[0]["top_logprobs"] == 0


async def test_ask_failures_keep_their_reasons() -> None:
    bad = Agent(AgentSpec(name="a1"), ScriptedModel(["x", {"action": "fly"}]), [], max_reasks=1)
    with pytest.raises(AgentStepError) as info:
        await bad._ask(MSG)  # type: ignore[arg-type]
    assert info.value.reason == "unparsable" and "must be one of ['answer']" in info.value.detail
    down = Agent(AgentSpec(name="a1"), ScriptedModel([ModelConnectionError("gone")]), [])
    with pytest.raises(AgentStepError) as info:
        await down._ask(MSG)  # type: ignore[arg-type]
    assert (info.value.reason, info.value.detail) == ("model_error", "gone")
