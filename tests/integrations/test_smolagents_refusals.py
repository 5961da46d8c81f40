"""The smolagents callback after refused steps in a row (issue 32, item 2), on smolagents' own
ToolCallingAgent with a scripted smolagents model that ignores every refusal: the agent goes
to smolagents' final-answer call (no tools), or the run is interrupted, or (switched off) it
goes on to its step limit."""

from __future__ import annotations

from typing import Any

import pytest
from smolagents import ToolCallingAgent, tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction
from smolagents.models import Model as SmolModel
from smolagents.monitoring import TokenUsage
from smolagents.utils import AgentError

from overseer.integrations.smolagents import OverseerSupervisor
from overseer.supervise.rules import RuleSettings

RUNS: list[str] = []


@tool
def job_status(job: str) -> str:
    """Check whether a job has finished.

    Args:
        job: the job's number
    """
    RUNS.append(job)
    return f"job {job} is still pending"


class Stubborn(SmolModel):
    """Calls job_status(42) (or writes `text`) whenever tools are offered; answers without."""

    def __init__(self, text: str | None = None) -> None:
        super().__init__(model_id="stubborn")
        self.text = text
        self.requests: list[bool] = []  # whether each request offered tools

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        offered = bool(kwargs.get("tools_to_call_from"))
        self.requests.append(offered)
        usage = TokenUsage(input_tokens=10, output_tokens=5)
        if not offered:
            return ChatMessage(role="assistant", content="job 42: pending", token_usage=usage)
        if self.text is not None:
            return ChatMessage(role="assistant", content=self.text, token_usage=usage)
        fn = ChatMessageToolCallFunction(name="job_status", arguments={"job": "42"})
        call = ChatMessageToolCall(id=f"c{len(self.requests)}", type="function", function=fn)
        return ChatMessage(role="assistant", content="", tool_calls=[call], token_usage=usage)


def _run(model: Stubborn, **kw: Any) -> tuple[OverseerSupervisor, Any]:
    RUNS.clear()
    sup = OverseerSupervisor(mode="rules", rules=RuleSettings(loop_limit=2), **kw)
    agent = sup.attach(ToolCallingAgent(tools=[job_status], model=model, max_steps=10))
    agent.verbosity_level = -1
    return sup, agent.run("Is job 42 done?")


def test_refused_repeats_in_a_row_lead_to_the_final_answer_call() -> None:
    model = Stubborn()
    sup, answer = _run(model)
    # two calls ran, two were refused, then smolagents' final-answer call without tools
    assert RUNS == ["42", "42"] and model.requests == [True] * 4 + [False]
    assert answer == "job 42: pending" and sup.stats["escalations"] == 1
    assert [e.action for e in sup.log if e.action == "refusals"] == ["refusals"]


def test_the_same_unparsable_reply_in_a_row_leads_to_the_final_answer_call() -> None:
    text = "I call job_status for job 42 now."  # no call smolagents can parse
    model = Stubborn(text=text)
    sup, answer = _run(model)
    # replies 1-2 are counted, 3-4 refused (the note), then the answer: not 10 steps
    assert RUNS == [] and model.requests == [True] * 4 + [False]
    assert sup.stats["rules"]["loop_breaker"] == 2 and sup.stats["escalations"] == 1
    assert answer == "job 42: pending"


def test_on_refusals_stop_interrupts_the_run() -> None:
    model = Stubborn()
    with pytest.raises(AgentError, match="interrupted"):
        _run(model, on_refusals="stop")
    assert RUNS == ["42", "42"] and model.requests == [True] * 4


def test_switched_off_the_agent_goes_on_to_its_step_limit() -> None:
    model = Stubborn()
    sup, _ = _run(model, answer_after_refusals=0)
    assert RUNS == ["42", "42"] and model.requests == [True] * 10 + [False]
    assert sup.stats["escalations"] == 0


def test_bad_refusal_settings_are_one_clear_line() -> None:
    with pytest.raises(ValueError, match="answer_after_refusals >= 0"):
        OverseerSupervisor(mode="rules", answer_after_refusals=-1)
    with pytest.raises(ValueError, match="'answer' or 'stop'"):
        OverseerSupervisor(mode="rules", on_refusals="x")  # type: ignore[arg-type]
