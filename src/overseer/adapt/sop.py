"""SOPs, need analyses and experiences as pydantic models, and SOP <-> TeamSpec conversion.

An SOP (and an OP, the query-specific instance of one) is a team of named agents with a
responsibility, instructions and tools, plus a directed communication graph and its
description. The graph may contain feedback edges (tester -> programmer); the runtime's
spatial edges must form a DAG, so feedback edges become temporal edges (read next round).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from overseer.runtime import AgentSpec, TeamSpec

NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_ .-]{0,47}$"


class SOPError(ValueError):
    """An SOP or OP that cannot become a team; the message says which field and why."""


class SOPAgent(BaseModel):
    """One agent of an SOP: its name, responsibility, instructions and tool names."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    responsibility: str = Field(max_length=600)
    instructions: str = Field(max_length=2000)
    tools: list[str] = Field(default_factory=list, max_length=32)


class SOP(BaseModel):
    """A collaboration pattern: agents, a directed communication graph and its description."""

    model_config = ConfigDict(extra="forbid")

    team: list[str] = Field(min_length=1, max_length=8)
    agents: list[SOPAgent] = Field(min_length=1, max_length=8)
    edges: list[tuple[str, str]] = Field(default_factory=list, max_length=32)
    description: str = Field(default="", max_length=1500)
    rounds: int = Field(default=1, ge=1, le=3)

    def render(self) -> str:
        """A compact text view for prompts."""
        lines = [f"team: {', '.join(self.team)}", f"flow: {self.description}"]
        lines.append("edges: " + "; ".join(f"{a} -> {b}" for a, b in self.edges))
        for a in self.agents:
            tools = f" tools: {', '.join(a.tools)}" if a.tools else ""
            lines.append(f"- {a.name}: {a.responsibility} | {a.instructions}{tools}")
        return "\n".join(lines)


class Need(BaseModel):
    """What a query needs: its objective, the capabilities, tools and roles it calls for."""

    model_config = ConfigDict(extra="forbid")

    objective: str = Field(min_length=1, max_length=600)
    capabilities: list[str] = Field(default_factory=list, max_length=12)
    tools: list[str] = Field(default_factory=list, max_length=12)
    roles: list[str] = Field(default_factory=list, max_length=8)

    def text(self) -> str:
        """The text that is embedded for need similarity."""
        return (
            f"objective: {self.objective}\ncapabilities: {', '.join(self.capabilities)}\n"
            f"tools: {', '.join(self.tools)}\nroles: {', '.join(self.roles)}"
        )


class AgentLesson(BaseModel):
    """One agent's share of a failure and how to avoid it next time."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(max_length=64)
    attribution: str = Field(max_length=600)
    strategy: str = Field(max_length=600)


class Reflection(BaseModel):
    """What a failed run teaches: the failure cause and agent-wise lessons."""

    model_config = ConfigDict(extra="forbid")

    failure_cause: str = Field(min_length=1, max_length=800)
    lessons: list[AgentLesson] = Field(default_factory=list, max_length=8)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema asked of the model for one of these records (grammar on llama.cpp)."""
    return model.model_json_schema()


def agent_name(name: str) -> str:
    """An SOP agent name as a runtime agent name (spaces become underscores)."""
    return re.sub(r"[ ]+", "_", name.strip())


def check_sop(sop: SOP, tools: Collection[str] | None = None) -> None:
    """Raise SOPError naming what is inconsistent: team vs agents, edges, unknown tools."""
    names = [a.name for a in sop.agents]
    if len(set(names)) != len(names):
        raise SOPError(f"agents: names must be unique, got {names}")
    if sorted(sop.team) != sorted(names):
        raise SOPError(f"team {sop.team} must list exactly the agents' names {names}")
    known = set(names)
    for i, (a, b) in enumerate(sop.edges):
        for end in (a, b):
            if end not in known:
                raise SOPError(f"edges[{i}]: unknown agent {end!r}; agents are {names}")
        if a == b:
            raise SOPError(f"edges[{i}]: self-loop on {a!r}")
    if tools is not None:
        for agent in sop.agents:
            bad = [t for t in agent.tools if t not in tools]
            if bad:
                raise SOPError(
                    f"agent {agent.name!r}: unknown tools {bad}; available: {sorted(tools)}"
                )


def _sop_edges(sop: SOP, n_rounds: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The spatial and temporal edges of an SOP's team (see `sop_to_team`)."""
    order = {n: i for i, n in enumerate(sop.team)}
    spatial: list[tuple[str, str]] = []
    temporal: list[tuple[str, str]] = []
    for a, b in sop.edges:
        edge = (agent_name(a), agent_name(b))
        target = spatial if order[a] < order[b] else temporal
        if edge not in target:
            target.append(edge)
    if n_rounds <= 1:
        return spatial, []
    for a, b in list(spatial):
        if (b, a) not in temporal:
            temporal.append((b, a))
    for n in sop.team:
        if (agent_name(n), agent_name(n)) not in temporal:
            temporal.append((agent_name(n), agent_name(n)))
    return spatial, temporal


def sop_to_team(
    sop: SOP, *, tools: Collection[str] | None = None, name: str = "masfly", rounds: int = 0
) -> TeamSpec:
    """The runtime team of an SOP/OP.

    Edges that go forward in the team's listed order are spatial (same round); edges that go
    back become temporal edges (delivered next round). The bidirectional rule of the seed
    (an agent may answer upstream agents it received from) is a temporal edge b -> a for every
    spatial edge a -> b, and each agent also reads its own previous answer. Those only carry
    messages when the team runs more than one round (`sop.rounds`, or `rounds` if given).
    """
    check_sop(sop, tools)
    n_rounds = rounds or sop.rounds
    spatial, temporal = _sop_edges(sop, n_rounds)
    by_name = {a.name: a for a in sop.agents}
    agents = tuple(
        AgentSpec(
            name=agent_name(n),
            role=by_name[n].responsibility,
            instructions=by_name[n].instructions,
            tools=tuple(dict.fromkeys(by_name[n].tools)),
        )
        for n in sop.team
    )
    sinks = {agent_name(n) for n in sop.team} - {a for a, _ in spatial}
    try:
        return TeamSpec(
            name=name,
            agents=agents,
            spatial_edges=tuple(spatial),
            temporal_edges=tuple(temporal),
            decision="last" if len(sinks) == 1 else "llm",
            rounds=n_rounds,
        )
    except ValidationError as exc:
        raise SOPError(f"the SOP does not make a valid team: {exc.errors()[0]['msg']}") from None


def team_to_sop(team: TeamSpec, description: str = "") -> SOP:
    """An SOP view of a runtime team (spatial edges; temporal feedback edges are dropped)."""
    return SOP(
        team=team.names,
        agents=[
            SOPAgent(
                name=a.name, responsibility=a.role, instructions=a.instructions, tools=list(a.tools)
            )
            for a in team.agents
        ],
        edges=[tuple(e) for e in team.spatial_edges],
        description=description or f"{team.name}: agents in order {', '.join(team.order())}",
        rounds=min(team.rounds, 3),
    )
