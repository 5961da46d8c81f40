"""A rule of your own, as one small class, on every host overseer has.

    python examples/user_rule.py      # runs it on a plain overseer team with a scripted model

`ToolQuota` refuses a tool call once an agent has called that tool `limit` times in a run, and
tells the agent so in words it can act on. It is a bus plug-in (`BaseSupervisor`): the same
object runs unchanged on

- a team: `Executor(model, supervisors=[ToolQuota(2)])`;
- LangGraph, the OpenAI Agents SDK, pydantic-ai: `GuardSettings(plugins=(ToolQuota(2),))`
  given to `OverseerMiddleware`, `Overseer` or `OverseerCapability`;
- smolagents: `OverseerSupervisor(mode="rules", plugins=[ToolQuota(2)])`;
- the proxy: `Proxy(upstream, ProxySettings(plugins=(ToolQuota(2),)))`.

Its per-run state lives on the run (`run.state`), so one instance serves concurrent runs; its
`stats` are what a host reports for it (`stats["plugins"]["quota"]` on a framework run). It
never numbers anything in the note it writes: a small model copies numbers into its answer.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from overseer.models import ScriptedModel
from overseer.runtime import (
    AgentSpec,
    BaseSupervisor,
    Executor,
    Interaction,
    Run,
    TeamSpec,
    ToolResult,
)
from overseer.runtime.verdicts import Replace, Verdict


class ToolQuota(BaseSupervisor):
    """At most `limit` calls of each tool per agent and run; later calls are refused."""

    name = "quota"
    actions = frozenset({"approve", "replace"})

    def __init__(self, limit: int) -> None:
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"ToolQuota limit: expected an integer >= 1, got {limit!r}")
        self.limit = limit

    def _calls(self, run: Run) -> Counter[tuple[str, str]]:
        return run.state(self, Counter)

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None:
        calls = self._calls(run)
        key = (interaction.agent, interaction.tool or "")
        if calls[key] >= self.limit:
            calls["refused", ""] += 1
            note = (
                f"[quota] Not run: {interaction.tool} was called as often as this run allows. "
                "Use what it returned, take another step, or answer."
            )
            return Replace(note, "quota", by=self.name, reason=f"{key[1]} over its quota")
        calls[key] += 1
        return None

    def stats(self, run: Run) -> Mapping[str, object]:
        calls = self._calls(run)
        return {"refused": calls["refused", ""], "calls": sum(calls.values())}


async def _demo() -> None:
    """A researcher that would call `lookup` four times, then answer; the quota lets two run."""
    ran: list[str] = []

    class Lookup:
        name, description = "lookup", "Look a word up."
        parameters: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"q": {"type": "string"}},
        }
        kind = "tool"

        async def call(self, args: Mapping[str, object]) -> ToolResult:
            ran.append(str(args.get("q")))
            return ToolResult("nothing new")

    step = {"thought": "look", "action": "lookup", "args": {"q": "tower"}}
    model = ScriptedModel([step] * 4 + [{"thought": "", "action": "answer", "answer": "unknown"}])
    team = TeamSpec(agents=[AgentSpec(name="researcher", tools=["lookup"])], decision="last")
    with tempfile.TemporaryDirectory() as traces:
        res = await Executor(
            model, supervisors=[ToolQuota(2)], tools={"lookup": Lookup()}, trace_dir=traces
        ).run(team, "How tall is the tower?")
    print(f"lookup ran {len(ran)} times; answer: {res.answer!r}")


if __name__ == "__main__":
    asyncio.run(_demo())
