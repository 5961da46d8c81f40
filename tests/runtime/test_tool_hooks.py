"""The bus's tool hooks: a plug-in refuses a tool call before it runs, or edits how an agent's
earlier tool observations are shown (masking), and writes typed `rule` events."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from overseer.models import ScriptedModel
from overseer.runtime import (
    AgentSpec,
    BaseSupervisor,
    Executor,
    Interaction,
    Run,
    TeamSpec,
    ToolResult,
    Verdict,
    read_trace,
)
from overseer.runtime._events import validate_event
from overseer.runtime._interaction import ToolRecord
from overseer.runtime._turns import closed_turn


class Echo:
    """A tool that counts its calls and returns a long text."""

    name = "fetch"
    description = "fetch a page"
    parameters: Mapping[str, Any] = {"type": "object", "properties": {"url": {"type": "string"}}}
    kind: Literal["tool", "memory"] = "tool"

    def __init__(self) -> None:
        self.calls = 0

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        self.calls += 1
        return ToolResult(f"page {args.get('url')}: the answer is 42. " + "lorem " * 200)


def fetch(url: str) -> dict[str, Any]:
    return {"thought": "look", "action": "fetch", "args": {"url": url}}


ANSWER = {"thought": "done", "action": "answer", "answer": "42"}
TEAM = TeamSpec(agents=[AgentSpec(name="a", tools=["fetch"])], decision="last")


class Refuser(BaseSupervisor):
    """Refuses every call of url `b`; shows records older than the last one as a stub."""

    name = "refuser"

    def __init__(self, action: str = "replace") -> None:
        self.action = action
        self.seen: list[Interaction] = []

    async def before_tool(self, i: Interaction, run: Run) -> Verdict | None:
        self.seen.append(i)
        assert i.observation == ""
        if '"b"' not in i.input:
            return None
        if self.action == "rollback":
            return Verdict.rollback(by=self.name, reason="no")
        run.trace.event(
            "rule", by=self.name, rule="loop_breaker", agent=i.agent, subtask="s", detail="no b"
        )
        return Verdict.replace("[not run: b is refused]", note="refused", by=self.name)

    def view_observations(
        self, agent: str, records: Sequence[ToolRecord], run: Run
    ) -> list[str] | None:
        return [f"[stub {r.tool}]" for r in records[:-1]] + [records[-1].text]


async def test_a_refused_call_is_not_run_and_the_agent_reads_the_note(tmp_path: Path) -> None:
    tool = Echo()
    model = ScriptedModel([fetch("a"), fetch("b"), fetch("c"), ANSWER])
    sup = Refuser()
    res = await Executor(
        model, supervisors=[sup], tools={"fetch": tool}, trace_dir=tmp_path, max_steps=5
    ).run(TEAM, "q")
    assert res.answer == "42"
    assert tool.calls == 2  # a and c ran, b did not
    assert len(sup.seen) == 3
    third_prompt = model.calls[2]["messages"]
    assert "[not run: b is refused]" in third_prompt[-1]["content"]
    events = list(read_trace(res.trace_path))
    for e in events:
        validate_event(e)
    blocked = [e for e in events if e["event"] == "interaction" and "refused" in e["observation"]]
    assert len(blocked) == 1
    assert any(e["event"] == "rule" and e["rule"] == "loop_breaker" for e in events)
    assert any(e["event"] == "verdict" and e["by"] == "refuser" for e in events)


async def test_after_two_refusals_in_a_row_the_next_step_may_only_answer(
    tmp_path: Path,
) -> None:
    """A small model repeats a refused call until max_steps; after two refusals in a row the
    tools close: the next step's schema and parser accept only an answer."""
    tool = Echo()
    # the scripted third reply still calls the tool: with tools closed it is unparsable and
    # re-asked, and the re-ask's answer is accepted
    model = ScriptedModel([fetch("a"), fetch("b"), fetch("b"), fetch("b"), ANSWER])
    res = await Executor(
        model, supervisors=[Refuser()], tools={"fetch": tool}, trace_dir=tmp_path, max_steps=6
    ).run(TEAM, "q")
    assert res.answer == "42" and tool.calls == 1
    assert "anyOf" in model.calls[2]["schema"]  # one refusal: tools still open
    closed = model.calls[3]
    assert closed["schema"]["properties"]["action"] == {"const": "answer"}
    # the question first, with leave to say it could not be found (issue 48)
    assert closed["messages"][-1]["content"] == closed_turn("q")
    assert "could not find" in closed["messages"][-1]["content"]
    assert len(model.calls) == 5  # the tool call at step 3 was re-asked, not run or refused


async def test_view_hook_masks_older_observations_in_the_next_prompts(tmp_path: Path) -> None:
    tool = Echo()
    model = ScriptedModel([fetch("a"), fetch("c"), fetch("d"), ANSWER])
    res = await Executor(
        model, supervisors=[Refuser()], tools={"fetch": tool}, trace_dir=tmp_path, max_steps=5
    ).run(TEAM, "q")
    assert res.answer == "42" and tool.calls == 3
    last = [m["content"] for m in model.calls[3]["messages"]]
    assert sum("[stub fetch]" in c for c in last) == 2
    assert sum("lorem" in c for c in last) == 1
    plain = ScriptedModel([fetch("a"), fetch("c"), fetch("d"), ANSWER])
    await Executor(plain, tools={"fetch": Echo()}, trace_dir=tmp_path, max_steps=5).run(TEAM, "q")
    assert (
        sum(len(m["content"]) for m in model.calls[3]["messages"])
        < sum(len(m["content"]) for m in plain.calls[3]["messages"]) - 2000
    )


async def test_before_tool_may_not_return_other_actions(tmp_path: Path) -> None:
    model = ScriptedModel([fetch("b"), ANSWER])
    res = await Executor(
        model,
        supervisors=[Refuser("rollback")],
        tools={"fetch": Echo()},
        trace_dir=tmp_path,
    ).run(TEAM, "q")
    assert res.stop_reason == "error" and "before_tool" in (res.error or "")


def test_rule_event_is_typed() -> None:
    base = {"v": 2, "ts": 0.0, "run": "r", "event": "rule"}
    ok = {**base, "by": "s", "rule": "masking", "agent": "a", "subtask": "t", "detail": "d"}
    assert validate_event(ok).event == "rule"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="rule"):
        validate_event({**ok, "extra_field": 1})


async def test_the_agent_closes_its_tools_by_the_hosts_refusal_count() -> None:
    """One refusal counter: the agent keeps none of its own; it reads the count its host (the
    bus) keeps, so refusals the host counted close the tools at the turn's first step."""
    from overseer.runtime._agent import Agent, AgentContext
    from overseer.runtime._bus import Outcome
    from overseer.runtime.verdicts import Approve

    async def judge(i: Interaction) -> Outcome:
        return Outcome(i.observation, Approve(by="test"))

    ctx = AgentContext(global_task="q", round=0, spatial_inputs=[], temporal_inputs=[])
    spec = TEAM.agents[0]
    for counted, closed in (({"a": 2}, True), ({"a": 1}, False), ({"b": 5}, False), (None, False)):
        model = ScriptedModel([ANSWER])
        agent = Agent(spec, model, [Echo()])
        assert await agent.run(ctx, judge, refused=counted) == "42"
        schema = model.calls[0]["schema"]
        assert ("anyOf" not in schema) is closed, counted  # closed: an answer is all it may write
        assert schema.get("properties", {}).get("action", {"const": "answer"}) == {
            "const": "answer"
        }
