"""A rewrite (`Replace(..., rewrite=True)`) is applied and the chain goes on: the plug-ins after
it judge the new text (the raw output in `meta["raw_observation"]`), a later verdict applies on
top of it, and both are recorded (the rule tier's purification before the LLM tier)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

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
from overseer.runtime.verdicts import Guide, Replace

RAW = "a long page " * 50


class Page:
    name = "fetch"
    description = "fetch a page"
    parameters: Mapping[str, Any] = {"type": "object", "properties": {"url": {"type": "string"}}}
    kind: Literal["tool", "memory"] = "tool"

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return ToolResult(RAW)


class Cutter(BaseSupervisor):
    name, actions = "cutter", frozenset({"approve", "replace"})

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        if interaction.kind == "tool":
            return Replace("a short page", "cut", by=self.name, rewrite=True)
        return self._approval()


class Reader(BaseSupervisor):
    """Records what it was shown; guides on a tool step when `guide`."""

    name, actions = "reader", frozenset({"approve", "guide"})

    def __init__(self, guide: bool) -> None:
        self.guide, self.seen = guide, []

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        if interaction.kind != "tool":
            return self._approval()
        self.seen.append((interaction.observation, interaction.meta.get("raw_observation")))
        return Guide("read it twice", by=self.name) if self.guide else self._approval()


async def _run(tmp_path: Path, reader: Reader) -> tuple[list[str], Any]:
    call = {"thought": "", "action": "fetch", "args": {"url": "u"}}
    model = ScriptedModel([call, {"thought": "", "action": "answer", "answer": "done"}])
    team = TeamSpec(agents=[AgentSpec(name="a", tools=["fetch"])], decision="last")
    res = await Executor(
        model, supervisors=[Cutter(), reader], tools={"fetch": Page()}, trace_dir=tmp_path
    ).run(team, "Q")
    shown = [m["content"] for m in model.calls[1]["messages"] if "short page" in m["content"]]
    return shown, res


async def test_a_later_plugin_judges_the_rewritten_text_and_its_verdict_applies_on_top(
    tmp_path: Path,
) -> None:
    reader = Reader(guide=True)
    shown, res = await _run(tmp_path, reader)
    assert reader.seen == [("a short page", RAW)]
    (text,) = shown
    assert RAW not in text and "[observation replaced by cutter: cut]" in text
    assert text.endswith("[guidance from reader] read it twice")
    verdicts = [e for e in read_trace(res.trace_path) if e["event"] == "verdict"]
    assert [(v["by"], v["action"]) for v in verdicts] == [
        ("cutter", "replace"),
        ("reader", "guide"),
    ]


async def test_a_rewrite_alone_is_what_the_agent_reads(tmp_path: Path) -> None:
    reader = Reader(guide=False)
    shown, res = await _run(tmp_path, reader)
    assert reader.seen == [("a short page", RAW)]
    assert shown == [
        "Observation from fetch:\na short page\n\n[observation replaced by cutter: cut]"
    ]
    verdicts = [e for e in read_trace(res.trace_path) if e["event"] == "verdict"]
    assert [(v["by"], v["action"]) for v in verdicts] == [("cutter", "replace")]
