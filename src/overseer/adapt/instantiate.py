"""Instantiation: an LLM writes the operating procedure (OP) for a query from K retrieved SOPs.

The OP must validate as an SOP whose tools exist and which converts to a TeamSpec; a bad OP
is shown back with the error a bounded number of times, then the best retrieved SOP is used
(or, with none, a one-agent team), and the fallback is recorded.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from overseer.adapt._llm import failure
from overseer.adapt.sop import SOP, Need, SOPAgent, sop_to_team
from overseer.models import Model, ModelError, Usage, ask_structured
from overseer.runtime import TeamSpec

OP_PROMPT = (
    "You design a small team of AI agents for one task. You get the task, an analysis of what "
    "it needs, and reference procedures (SOPs) that worked on similar tasks. Write the "
    "operating procedure (OP) for this task as JSON in the same format: the team's agent "
    "names, each agent's responsibility, instructions made specific to this task and the tools "
    "it may use (only from the available tools), the directed edges of who sends work to whom, "
    "a short description of the flow, and rounds (1 unless agents must revise each other's "
    "work). Keep what the references do well; drop roles the task does not need. Use as few "
    "agents as the task allows. The last agent in the flow gives the final answer in the "
    "format the task asks for."
)

MINIMAL_NOTE = (
    "No reference procedure is given: start with the smallest team that can do the task, "
    "one agent if it is enough."
)

Source = Literal["llm", "fallback_sop", "fallback_single", "fixed"]


@dataclass
class Instantiation:
    """The OP, its team, where it came from, and the validation errors seen on the way."""

    op: SOP
    team: TeamSpec
    source: Source
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def single_agent_sop(tools: Collection[str] = ()) -> SOP:
    """The one-agent OP used when nothing better is available."""
    return SOP(
        team=["Solver"],
        agents=[
            SOPAgent(
                name="Solver",
                responsibility="Solve the task completely on your own.",
                instructions="Work step by step, use tools when they help, and give the final "
                "answer in the format the task asks for.",
                tools=sorted(tools),
            )
        ],
        edges=[],
        description="The Solver answers the task.",
    )


def op_messages(
    query: str, need: Need, sops: Sequence[SOP], tools: Collection[str], *, minimal: bool
) -> list[dict[str, str]]:
    refs = "\n\n".join(f"Reference SOP {i + 1}:\n{s.model_dump_json()}" for i, s in enumerate(sops))
    tool_line = f"Available tools: {', '.join(sorted(tools))}." if tools else "No tools."
    parts = [tool_line, f"Need analysis:\n{need.model_dump_json()}"]
    parts.append(refs if sops else MINIMAL_NOTE if minimal else "No reference procedure.")
    parts.append(f"Task:\n{query[:3000]}")
    return [
        {"role": "system", "content": OP_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


async def instantiate(
    model: Model,
    query: str,
    need: Need,
    sops: Sequence[SOP],
    *,
    tools: Collection[str] = (),
    minimal: bool = False,
    max_tries: int = 2,
    max_tokens: int = 900,
    max_agents: int = 6,
    seed: int | None = 0,
) -> Instantiation:
    """Write and validate the OP; fall back to the best SOP, else one agent (recorded)."""
    tool_set = set(tools)

    def check(op: SOP) -> None:
        if len(op.agents) > max_agents:
            raise ValueError(f"agents: at most {max_agents} agents, got {len(op.agents)}")
        sop_to_team(op, tools=tool_set)

    try:
        got = await ask_structured(
            model,
            op_messages(query, need, sops, tool_set, minimal=minimal),
            parse=SOP,
            check=check,
            max_reasks=max_tries - 1,
            max_tokens=max_tokens,
            seed=seed,
        )
    except ModelError as exc:
        errors, usage = failure(exc)
        return fallback(sops, tools=tool_set, errors=errors, usage=usage)
    op = got.value
    return Instantiation(op, sop_to_team(op, tools=tool_set), "llm", got.errors, got.usage)


def fallback(
    sops: Sequence[SOP],
    *,
    tools: Collection[str],
    errors: list[str] | None = None,
    usage: Usage | None = None,
) -> Instantiation:
    """The first retrieved SOP that makes a valid team with these tools, else one agent."""
    errs = list(errors or [])
    for i, sop in enumerate(sops):
        try:
            team = sop_to_team(sop, tools=tools)
        except ValueError as exc:
            errs.append(f"retrieved SOP {i + 1} unusable: {exc}")
            continue
        return Instantiation(sop, team, "fallback_sop", errs, usage or Usage())
    op = single_agent_sop(tools)
    return Instantiation(
        op, sop_to_team(op, tools=tools), "fallback_single", errs, usage or Usage()
    )
