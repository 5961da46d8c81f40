"""At its step limit an agent that used tools answers from what it found (tools closed on the
last step), instead of losing the turn: a small model otherwise repeats a call until the limit."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from overseer.models import ScriptedModel
from overseer.runtime import AgentSpec, Executor, TeamSpec, ToolResult
from overseer.runtime.steps import closed_turn


class Page:
    """A tool that counts its calls."""

    name = "visit"
    description = "open a page"
    parameters: Mapping[str, Any] = {"type": "object", "properties": {"url": {"type": "string"}}}
    kind: Literal["tool", "memory"] = "tool"

    def __init__(self) -> None:
        self.calls = 0

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        self.calls += 1
        return ToolResult("Height: 41 m")


VISIT = {"thought": "open it", "action": "visit", "args": {"url": "u"}}
ANSWER = {"thought": "read it", "action": "answer", "answer": "41"}
TEAM = TeamSpec(agents=[AgentSpec(name="a", tools=["visit"])], decision="last")


async def test_the_last_step_may_only_answer(tmp_path: Path) -> None:
    tool = Page()
    model = ScriptedModel([VISIT, VISIT, ANSWER])
    res = await Executor(model, tools={"visit": tool}, trace_dir=tmp_path, max_steps=3).run(
        TEAM, "q"
    )
    assert res.stop_reason == "done" and res.answer == "41" and tool.calls == 2
    assert "anyOf" in model.calls[1]["schema"]  # not the last step: tools open
    last = model.calls[2]
    assert last["schema"]["properties"]["action"] == {"const": "answer"}
    assert last["messages"][-1]["content"] == closed_turn("q")  # the question, then leave


async def test_a_turn_without_tools_is_not_cut(tmp_path: Path) -> None:
    """One step only, or no tool call yet: the step limit closes nothing."""
    model = ScriptedModel([ANSWER])
    res = await Executor(model, tools={"visit": Page()}, trace_dir=tmp_path, max_steps=1).run(
        TEAM, "q"
    )
    assert res.answer == "41" and "anyOf" in model.calls[0]["schema"]
