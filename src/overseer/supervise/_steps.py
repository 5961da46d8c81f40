"""A runtime interaction as the SupervisorAgent's filter and the rules read it (a `Step`)."""

from __future__ import annotations

import json

from overseer.runtime import Interaction, Run
from overseer.supervise.filters import Step


def _reads_it(run: Run, agent: str, round_: int) -> bool:
    """Whether another agent will read this agent's message (it is a sub-agent's report)."""
    team = run.team
    if any(agent in team.spatial_preds(n) for n in team.names):
        return True
    return round_ < team.rounds - 1 and any(agent in team.temporal_preds(n) for n in team.names)


def step_of(i: Interaction, run: Run) -> Step:
    """The filter's view of a runtime interaction; a sub-task is the agent's round."""
    code = ""
    if i.kind == "tool" and i.tool == "python":
        try:
            code = str(json.loads(i.input).get("code", ""))
        except (json.JSONDecodeError, AttributeError):
            code = ""
    return Step(
        agent=i.agent,
        subtask=i.local_task or f"round {i.round}",
        kind=i.kind,
        tool=i.tool,
        args="" if code else i.input,
        code=code,
        observation=i.observation,
        error=i.error,
        thought=i.thought,
        to_agent=i.kind == "message" and _reads_it(run, i.agent, i.round),
    )
