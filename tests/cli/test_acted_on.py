"""The report's 'acted on' line: runs whose trace holds a verdict, a rule or a rollback."""

from __future__ import annotations

from pathlib import Path

import pytest

from overseer.bench import ResultRecord
from overseer.bench._store import ResultKey
from overseer.cli._report_text import acted_on
from overseer.models import ScriptedModel
from overseer.runtime import (
    AgentSpec,
    BaseSupervisor,
    Executor,
    Interaction,
    Run,
    TeamSpec,
    Verdict,
)


class Hinter(BaseSupervisor):
    """Gives one hint on every answer."""

    name = "hinter"

    async def on_interaction(self, i: Interaction, run: Run) -> Verdict:
        return Verdict.guide("check it", by=self.name)


ANSWER = {"thought": "t", "action": "answer", "answer": "4"}
TEAM = TeamSpec(agents=[AgentSpec(name="a")], decision="last")


def rec(config: str, trace: Path | None) -> ResultRecord:
    extra = {"trace": str(trace)} if trace else {}
    return ResultRecord(ResultKey(config, "m", "s", "t/1", 0), "4", "4", True, 1.0, {}, 0.1,
                        extra=extra)  # fmt: skip


@pytest.mark.asyncio
async def test_counts_runs_with_a_verdict_and_skips_untraced(tmp_path: Path) -> None:
    plain = await Executor(ScriptedModel([ANSWER]), trace_dir=tmp_path / "p").run(TEAM, "q")
    hinted = await Executor(
        ScriptedModel([ANSWER, ANSWER]), supervisors=[Hinter()], trace_dir=tmp_path / "h"
    ).run(TEAM, "q")
    got = acted_on([rec("team", plain.trace_path), rec("team+hint", hinted.trace_path),
                    rec("direct", None)])  # fmt: skip
    assert got == {"team": (0, 1), "team+hint": (1, 1)}
