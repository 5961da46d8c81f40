"""What travels on the bus: Interactions in, Verdicts out, and the Supervisor plug-in protocol.

Plug-ins only return verdicts; the bus (`runtime._bus.Bus`) applies them. A plug-in registers
for the interaction kinds it cares about (`kinds`) and declares the verdict actions it may
return (`actions`), so a place that cannot honour an action refuses the plug-in up front.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from overseer.models import TokenLogprob, Usage
from overseer.runtime._spec import AgentSpec, TeamSpec

if TYPE_CHECKING:
    from overseer.runtime._run import Run, RunResult

InteractionKind = Literal["message", "tool", "memory", "move"]
VerdictAction = Literal[
    "approve", "guide", "replace", "verify", "rollback", "replace_agent", "replace_team"
]
ALL_KINDS: frozenset[str] = frozenset({"message", "tool", "memory", "move"})
ALL_ACTIONS: frozenset[str] = frozenset(
    {"approve", "guide", "replace", "verify", "rollback", "replace_agent", "replace_team"}
)


@dataclass(frozen=True)
class Interaction:
    """One agent step seen by the supervisors: a message, a tool call, a memory read, a move.

    `input` is what the agent sent (message text, tool arguments as JSON, memory query, the raw
    move); `observation` is what came back (for a message or move: the text others will read).
    `logprobs` are the step's generated tokens with their top-k alternatives when the agent
    asked for them; `decision_positions` index the tokens that carry the decision (for an
    answer: the tokens of the answer value).
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
    logprobs: tuple[TokenLogprob, ...] | None = None
    decision_positions: tuple[int, ...] = ()
    role: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolRecord:
    """One tool observation an agent has read: what a context-editing plug-in may shorten."""

    tool: str
    args: str
    text: str


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
    team_spec: TeamSpec | None = None  # the new team for replace_team

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
        """A new team for the next rounds (returned from `on_round_end`)."""
        return cls("replace_team", by, reason, team_spec=spec)


@runtime_checkable
class Supervisor(Protocol):
    """A plug-in on the bus. `kinds`: interaction kinds it is asked about; `actions`: the
    verdict actions it may return.

    Two optional hooks, found by name, let a plug-in act before and around tool calls:
    `async before_tool(interaction, run) -> Verdict | None` is asked before a tool runs (the
    interaction has no observation yet); a `replace` or `guide` verdict refuses the call and
    the agent reads the verdict's text instead. `view_observations(agent, records, run) ->
    list[str] | None` gives the texts an agent is shown for its earlier tool observations
    (oldest first, one per record), e.g. stubs for old ones; None leaves them whole.
    """

    name: str
    kinds: frozenset[str]
    actions: frozenset[str]

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict: ...

    async def on_round_end(self, run: Run) -> Verdict | None: ...

    async def on_run_end(self, run: Run, result: RunResult) -> None: ...


class BaseSupervisor:
    """Convenience base: approves everything, ignores round and run ends. Override what you need."""

    name: str = "supervisor"
    kinds: frozenset[str] = ALL_KINDS
    actions: frozenset[str] = ALL_ACTIONS

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        return Verdict.approve(self.name)

    async def on_round_end(self, run: Run) -> Verdict | None:
        return None

    async def on_run_end(self, run: Run, result: RunResult) -> None:
        return None
