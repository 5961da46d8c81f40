"""The SupervisorAgent as a smolagents step callback, with a scripted smolagents model."""

from __future__ import annotations

import json
from typing import Any

from smolagents import ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
)
from smolagents.models import (
    Model as SmolModel,
)
from smolagents.monitoring import TokenUsage

from overseer.integrations.smolagents import OverseerSupervisor
from overseer.models import ScriptedModel
from overseer.supervise import FilterConfig, SupervisorSettings, reply_template

LONG_PAGE = "<div class='ad'>buy now</div> " * 150 + "The tower is 312 metres tall."


@tool
def fetch(url: str) -> str:
    """Fetch a page.

    Args:
        url: the address to fetch
    """
    return LONG_PAGE if "tower" in url else "short page"


class ScriptedAgentModel(SmolModel):
    """A smolagents model replaying tool calls, recording the messages it was sent."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        super().__init__(model_id="scripted")
        self.calls = calls
        self.seen: list[list[Any]] = []

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        name, args = self.calls[min(len(self.seen) - 1, len(self.calls) - 1)]
        call = ChatMessageToolCall(
            id=f"c{len(self.seen)}",
            type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=args),
        )
        return ChatMessage(
            role="assistant",
            content="",
            tool_calls=[call],
            token_usage=TokenUsage(input_tokens=10, output_tokens=5),
        )


def last_input_text(model: ScriptedAgentModel) -> str:
    msgs = model.seen[-1]
    return json.dumps([m.dict() if hasattr(m, "dict") else str(m) for m in msgs], default=str)


def test_long_observation_is_replaced_before_the_next_step() -> None:
    short = "The tower is 312 metres tall."
    sup_model = ScriptedModel([reply_template("correct_observation", "noise", short)])
    sup = OverseerSupervisor(sup_model)
    agent_model = ScriptedAgentModel(
        [("fetch", {"url": "https://x/tower"}), ("final_answer", {"answer": "312"})]
    )
    agent = ToolCallingAgent(tools=[fetch], model=agent_model, max_steps=4, verbosity_level=0)
    sup.attach(agent)
    assert agent.run("How tall is the tower?") == "312"
    assert [(e.context, e.action) for e in sup.log] == [("excessive", "correct_observation")]
    # the agent's second prompt carries the purified observation, not the page
    assert short in last_input_text(agent_model)
    assert "buy now" not in last_input_text(agent_model)
    # the supervisor's tokens are in the step and in smolagents' totals
    step = agent.memory.steps[1]
    assert (step.observations or "").startswith(short)
    assert "[observation replaced by supervisor:" in (step.observations or "")
    assert sup.usage.prompt_tokens > 0
    assert step.token_usage.input_tokens == 10 + sup.usage.prompt_tokens
    assert agent.monitor.get_total_token_counts().input_tokens >= 10 + sup.usage.prompt_tokens


def test_loop_gets_guidance_appended_and_cap_holds() -> None:
    sup_model = ScriptedModel(
        lambda msgs: reply_template("provide_guidance", "loop", "Stop fetching; answer now.")
    )
    settings = SupervisorSettings(filter=FilterConfig(tau_loop=2, tau_step=100), max_guidance=1)
    sup = OverseerSupervisor(sup_model, settings)
    agent_model = ScriptedAgentModel([("fetch", {"url": "https://x/a"})] * 5)
    agent = ToolCallingAgent(tools=[fetch], model=agent_model, max_steps=5, verbosity_level=0)
    sup.attach(agent)
    agent.run("Find it.")
    guided = [e for e in sup.log if e.action == "provide_guidance"]
    assert len(guided) == 1, sup.log  # the cap: one guidance per (agent, sub-task)
    assert any(e.note == "guidance cap reached" for e in sup.log)
    texts = [s.observations or "" for s in agent.memory.steps[1:]]
    assert sum("[guidance from supervisor] Stop fetching" in t for t in texts) == 1
    assert sup.stats["triggers"]["inefficient"] >= 2


def test_ordinary_steps_cost_no_supervisor_call() -> None:
    sup_model = ScriptedModel([])  # any call would raise: ran out of replies
    sup = OverseerSupervisor(sup_model)
    agent_model = ScriptedAgentModel(
        [("fetch", {"url": "https://x/a"}), ("final_answer", {"answer": "ok"})]
    )
    agent = ToolCallingAgent(
        tools=[fetch], model=agent_model, max_steps=3, verbosity_level=0, step_callbacks=[sup]
    )
    assert agent.run("Fetch a.") == "ok"
    assert sup.log == [] and sup_model.calls == [] and sup.stats["steps"] == 1


def test_error_step_runs_the_verifier() -> None:
    asked: list[str] = []

    def verifier(q: str) -> str:
        asked.append(q)
        return "confirmed: 312"

    sup_model = ScriptedModel(
        [reply_template("run_verification", "the tool failed", "Is the tower 312 m tall?")]
    )

    @tool
    def lookup(q: str) -> str:
        """A lookup service that is down.

        Args:
            q: the query
        """
        raise ConnectionError("lookup service unavailable")

    sup = OverseerSupervisor(sup_model, verifier=verifier)
    agent_model = ScriptedAgentModel(
        [("lookup", {"q": "tower height"}), ("final_answer", {"answer": "312"})]
    )
    agent = ToolCallingAgent(tools=[lookup], model=agent_model, max_steps=3, verbosity_level=0)
    sup.attach(agent)
    agent.run("How tall is the tower?")
    assert [(e.context, e.action) for e in sup.log] == [("error", "run_verification")]
    assert asked == ["Is the tower 312 m tall?"]
    assert "confirmed: 312" in (agent.memory.steps[1].observations or "")
    assert "confirmed: 312" in last_input_text(agent_model)
