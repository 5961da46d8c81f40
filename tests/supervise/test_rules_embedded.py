"""The rule tier on the real embedded model (SmolLM2-135M): the loop breaker stops a real
agent that keeps calling a tool that always says "try again", and masking makes a later
prompt shorter than the same run's prompt without masking (token counts from the ledger's
`model_call` events)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from overseer.models import LlamaCppModel
from overseer.runtime import AgentSpec, Executor, RunResult, TeamSpec, ToolResult, read_trace
from overseer.supervise.rules import RuleSettings, rule_plugins

pytestmark = pytest.mark.e2e


class Busy:
    """A status tool that is never ready: a long, unchanging 'try again' page."""

    name = "status"
    description = "Check whether the report is ready. Call it until it says ready."
    parameters: Mapping[str, Any] = {
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
    }
    kind: Literal["tool", "memory"] = "tool"

    def __init__(self) -> None:
        self.calls = 0

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        self.calls += 1
        lines = [f"queue position {i}: waiting, try again" for i in range(40)]
        return ToolResult("Report 7 is not ready. Try again.\n" + "\n".join(lines))


TEAM = TeamSpec(
    agents=[
        AgentSpec(
            name="poller",
            tools=["status"],
            instructions=(
                'Always reply with the status action and args {"id": "7"}. '
                "Never use the answer action."
            ),
        )
    ],
    decision="last",
)


async def run(model: LlamaCppModel, rules: RuleSettings, tmp_path: Path) -> tuple[RunResult, Busy]:
    tool = Busy()
    ex = Executor(
        model,
        supervisors=rule_plugins(rules),
        tools={"status": tool},
        trace_dir=tmp_path,
        max_steps=4,
        max_tokens=96,
        seed=0,
    )
    # the reply spelled out: with its instructions in the shared team list (the prompt layout
    # of issue 30) SmolLM2 answers at once when only asked to call the tool
    reply = '{"thought": "check", "action": "status", "args": {"id": "7"}}'
    task = f"Is report 7 ready? Reply with {reply}."
    res = await ex.run(TEAM, task)
    return res, tool


def prompts(res: RunResult) -> list[int]:
    return [
        e["gen_ai.usage.input_tokens"]
        for e in read_trace(res.trace_path)
        if e["event"] == "model_call" and e["gen_ai.agent.name"] == "poller"
    ]


async def test_loop_breaker_and_masking_on_a_real_looping_agent(
    embedded_model: LlamaCppModel, tmp_path: Path
) -> None:
    plain = RuleSettings(loop_limit=2, masking=False)
    res, tool = await run(embedded_model, plain, tmp_path / "plain")
    events = list(read_trace(res.trace_path))
    fired = [e for e in events if e["event"] == "rule" and e["rule"] == "loop_breaker"]
    assert fired, "the small model should have repeated its status call"
    assert tool.calls == 2  # the third identical call was refused, not run
    assert res.plugin_stats["loop_breaker"]["rules"]["loop_breaker"] == len(fired)
    masked, _ = await run(embedded_model, RuleSettings(loop_limit=2, mask_keep=1), tmp_path / "m")
    without, with_ = prompts(res), prompts(masked)
    assert len(without) >= 3 and len(with_) >= 3
    # the third call reads two tool outputs: with masking the older one is a one-line stub
    print(f"poller prompt tokens per call, masking off {without}, on {with_}")
    assert with_[2] < without[2] - 100
    assert any(
        e["event"] == "rule" and e["rule"] == "masking" for e in read_trace(masked.trace_path)
    )
