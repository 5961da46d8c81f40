"""The interaction bus: Interactions in, Verdicts out, through an ordered chain of Supervisors.

Plug-ins only return verdicts; the Executor applies them. A plug-in registers for the
interaction kinds it cares about (`kinds`), so it is not even asked about the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from overseer.models import Usage
from overseer.runtime._spec import AgentSpec, TeamSpec

if TYPE_CHECKING:
    from overseer.runtime._run import Run, RunResult

InteractionKind = Literal["message", "tool", "memory"]
VerdictAction = Literal[
    "approve", "guide", "replace", "verify", "rollback", "replace_agent", "replace_team"
]
ALL_KINDS: frozenset[str] = frozenset({"message", "tool", "memory"})


@dataclass(frozen=True)
class Interaction:
    """One agent step seen by the supervisors: a message to others, a tool call, a memory read.

    `input` is what the agent sent (message text, tool arguments as JSON, memory query);
    `observation` is what came back (for a message: the text the recipients will read).
    """

    kind: InteractionKind
    agent: str
    global_task: str
    local_task: str
    round: int
    step: int
    input: str
    observation: str
    error: str | None = None
    tool: str | None = None
    thought: str = ""
    usage: Usage = field(default_factory=Usage)
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """What a supervisor decided about one interaction, who decided it and why."""

    action: VerdictAction
    by: str = ""
    reason: str = ""
    text: str = ""  # guidance to append, or the replacement observation
    note: str = ""  # the visible note that goes with a replaced observation
    task: str = ""  # the question handed to the verifier
    agent_spec: AgentSpec | None = None  # the new agent for replace_agent
    team_spec: TeamSpec | None = None  # the next round's team for replace_team (round end only)

    @classmethod
    def approve(cls, by: str = "", reason: str = "") -> Verdict:
        return cls("approve", by, reason)

    @classmethod
    def guide(cls, text: str, *, by: str, reason: str = "") -> Verdict:
        return cls("guide", by, reason, text=text)

    @classmethod
    def replace(cls, observation: str, *, note: str, by: str, reason: str = "") -> Verdict:
        return cls("replace", by, reason, text=observation, note=note)

    @classmethod
    def verify(cls, task: str, *, by: str, reason: str = "") -> Verdict:
        return cls("verify", by, reason, task=task)

    @classmethod
    def rollback(cls, *, by: str, reason: str) -> Verdict:
        return cls("rollback", by, reason)

    @classmethod
    def replace_agent(cls, spec: AgentSpec, *, by: str, reason: str) -> Verdict:
        return cls("replace_agent", by, reason, agent_spec=spec)

    @classmethod
    def replace_team(cls, spec: TeamSpec, *, by: str, reason: str) -> Verdict:
        return cls("replace_team", by, reason, team_spec=spec)


@runtime_checkable
class Supervisor(Protocol):
    """A plug-in on the bus. `kinds` lists the interaction kinds it is asked about."""

    name: str
    kinds: frozenset[str]

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict: ...

    async def on_round_end(self, run: Run) -> Verdict | None: ...

    async def on_run_end(self, run: Run, result: RunResult) -> None: ...


class BaseSupervisor:
    """Convenience base: approves everything, ignores round and run ends. Override what you need."""

    name: str = "supervisor"
    kinds: frozenset[str] = ALL_KINDS

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        return Verdict.approve(self.name)

    async def on_round_end(self, run: Run) -> Verdict | None:
        return None

    async def on_run_end(self, run: Run, result: RunResult) -> None:
        return None


class SupervisorChain:
    """Asks each supervisor in order; the first verdict that is not approve wins."""

    def __init__(self, supervisors: Sequence[Supervisor] = ()) -> None:
        names = [s.name for s in supervisors]
        if len(set(names)) != len(names):
            raise ValueError(f"supervisors: names must be unique, got {names}")
        self.supervisors = list(supervisors)

    def __bool__(self) -> bool:
        return bool(self.supervisors)

    async def judge(self, interaction: Interaction, run: Run) -> Verdict:
        for s in self.supervisors:
            if interaction.kind not in s.kinds:
                continue
            v = await s.on_interaction(interaction, run)
            if v.action != "approve":
                return v if v.by else _with_by(v, s.name)
        return Verdict.approve()

    async def round_end(self, run: Run) -> Verdict | None:
        for s in self.supervisors:
            v = await s.on_round_end(run)
            if v is not None and v.action != "approve":
                return v if v.by else _with_by(v, s.name)
        return None

    async def run_end(self, run: Run, result: RunResult) -> None:
        for s in self.supervisors:
            await s.on_run_end(run, result)


def _with_by(v: Verdict, by: str) -> Verdict:
    from dataclasses import replace

    return replace(v, by=by)
