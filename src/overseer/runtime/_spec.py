"""TeamSpec: the agents, their spatial and temporal edges, the decision and the rounds of a team.

The same JSON is what presets produce, what AgentPrune prunes and what MASFly instantiates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from overseer.errors import read_failure

DecisionRule = Literal["llm", "vote", "last"]
AnswerFormat = Literal["json", "text"]
Edge = tuple[str, str]


class TeamSpecError(ValueError):
    """A team spec that does not validate; the message names the file and field."""


class AgentSpec(BaseModel):
    """One agent: its name, role profile, instructions, tool names and optional model name.

    `share_thought` sends the agent's thought along with its answer, so the whole response
    travels on each edge (AgentPrune's setting); by default only the answer is sent.
    `answer_format` "text": once the JSON step chooses to answer, the answer is written by
    one more call without a grammar (code in a JSON string is cut at its first raw `"`);
    "json" (the default): the answer is the step's "answer" string.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
    role: str = ""
    instructions: str = ""
    tools: tuple[str, ...] = ()
    model: str | None = None
    share_thought: bool = False
    answer_format: AnswerFormat = "json"

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The default answer format is left out, so specs (and their digests) that do not
        set it dump as they did before the field existed."""
        data: dict[str, Any] = handler(self)
        if self.answer_format == "json":
            data.pop("answer_format", None)
        return data


def topological_order(names: Iterable[str], edges: Iterable[Edge]) -> list[str]:
    """Kahn's order, ties broken by the given name order; raises ValueError on a cycle."""
    order_names = list(names)
    preds: dict[str, set[str]] = {n: set() for n in order_names}
    for a, b in edges:
        preds[b].add(a)
    out: list[str] = []
    done: set[str] = set()
    while len(out) < len(order_names):
        ready = [n for n in order_names if n not in done and preds[n] <= done]
        if not ready:
            cyc = sorted(n for n in order_names if n not in done)
            raise ValueError(f"spatial edges form a cycle among {cyc}")
        out.append(ready[0])
        done.add(ready[0])
    return out


class TeamSpec(BaseModel):
    """A team: agents, spatial edges (within a round, a DAG), temporal edges (round t-1 -> t)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agents: tuple[AgentSpec, ...] = Field(min_length=1)
    spatial_edges: tuple[Edge, ...] = ()
    temporal_edges: tuple[Edge, ...] = ()
    decision: DecisionRule = "llm"
    rounds: int = Field(default=1, ge=1, le=50)
    name: str = "team"

    @classmethod
    def placeholder(cls) -> TeamSpec:
        """The team a run holds while a team builder (e.g. MASFly's planner) makes the real one."""
        return cls(agents=(AgentSpec(name="planner", role="builds the team"),), decision="last")

    @model_validator(mode="after")
    def _check(self) -> TeamSpec:
        names = [a.name for a in self.agents]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"agents: names must be unique, repeated: {dup}")
        known = set(names)
        for field in ("spatial_edges", "temporal_edges"):
            edges = getattr(self, field)
            for i, (a, b) in enumerate(edges):
                for end in (a, b):
                    if end not in known:
                        raise ValueError(f"{field}[{i}]: unknown agent {end!r}")
            if len(set(edges)) != len(edges):
                raise ValueError(f"{field}: an edge is listed twice")
        for i, (a, b) in enumerate(self.spatial_edges):
            if a == b:
                raise ValueError(f"spatial_edges[{i}]: self-loop on {a!r}")
        topological_order(names, self.spatial_edges)
        return self

    # -- views ---------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [a.name for a in self.agents]

    def agent(self, name: str) -> AgentSpec:
        for a in self.agents:
            if a.name == name:
                return a
        raise KeyError(f"no agent named {name!r} in team {self.name!r}")

    def sharing_thoughts(self, share: bool = True) -> TeamSpec:
        """A copy whose agents all send (or all withhold) their thoughts with their answers."""
        agents = tuple(a.model_copy(update={"share_thought": share}) for a in self.agents)
        return self.model_copy(update={"agents": agents})

    def order(self) -> list[str]:
        """Agents in a topological order of the spatial edges."""
        return topological_order(self.names, self.spatial_edges)

    def spatial_preds(self, name: str) -> list[str]:
        return [a for a, b in self.spatial_edges if b == name]

    def temporal_preds(self, name: str) -> list[str]:
        return [a for a, b in self.temporal_edges if b == name]

    def sinks(self) -> list[str]:
        """Agents with no outgoing spatial edge: the ones whose output reaches the decision."""
        has_out = {a for a, _ in self.spatial_edges}
        return [n for n in self.order() if n not in has_out]

    def with_agent(self, spec: AgentSpec) -> TeamSpec:
        """The same team with one agent (matched by name) replaced."""
        self.agent(spec.name)
        agents = tuple(spec if a.name == spec.name else a for a in self.agents)
        return self.model_copy(update={"agents": agents})

    # -- JSON ----------------------------------------------------------------------------
    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n")
        return path

    @classmethod
    def from_json(cls, text: str, *, source: str = "team spec") -> TeamSpec:
        """Parse and validate; errors name the source and the field that is wrong."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise TeamSpecError(f"{source}: {read_failure(exc)}") from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            parts = []
            for e in exc.errors():
                loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
                parts.append(f"{loc}: {e['msg']}")
            raise TeamSpecError(f"{source}: " + "; ".join(parts)) from None

    @classmethod
    def load(cls, path: str | Path) -> TeamSpec:
        """The spec in file `path`; unreadable, not UTF-8, not JSON or invalid is one
        TeamSpecError naming the file."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TeamSpecError(f"team spec {path}: {read_failure(exc)}") from None
        return cls.from_json(text, source=f"team spec {path}")
