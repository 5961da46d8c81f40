"""What travels on the bus: Interactions in, Verdicts out, and the Supervisor plug-in protocol.

Plug-ins only return verdicts; the bus (`runtime._bus.Bus`) applies them. A plug-in registers
for the interaction kinds it cares about (`kinds`) and declares the verdict actions it may
return (`actions`), so a place that cannot honour an action refuses the plug-in up front.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

from overseer.models import TokenLogprob, Usage
from overseer.runtime._tools import ToolKind
from overseer.runtime.verdicts import (
    ALL_ACTIONS,
    Approve,
    Guide,
    Replace,
    ReplaceAgent,
    ReplaceTeam,
    Rollback,
    Verdict,
    VerdictAction,
    Verify,
)

if TYPE_CHECKING:
    from overseer.runtime._run import Run, RunResult

__all__ = [
    "ALL_ACTIONS",
    "ALL_KINDS",
    "Approve",
    "BaseSupervisor",
    "Guide",
    "Interaction",
    "InteractionKind",
    "Replace",
    "ReplaceAgent",
    "ReplaceTeam",
    "Rollback",
    "Supervisor",
    "ToolRecord",
    "Verdict",
    "VerdictAction",
    "Verify",
]

InteractionKind = Literal["message", ToolKind, "move"]
ALL_KINDS: frozenset[str] = frozenset(get_args(InteractionKind))


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
    #: what the bus adds: `blocked_by` (the plug-in that refused the call), `raw_observation`
    #: (the tool's own output, when a plug-in earlier in the chain rewrote it)
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolRecord:
    """One tool observation an agent has read: what a context-editing plug-in may shorten."""

    tool: str
    args: str
    text: str


@runtime_checkable
class Supervisor(Protocol):
    """A plug-in on the bus. `kinds`: interaction kinds it is asked about; `actions`: the
    verdict actions it may return (a host that cannot honour one refuses the plug-in).

    `on_interaction` judges one step. `before_tool` is asked before a tool runs (the
    interaction has no observation yet); a `Replace` or `Guide` verdict refuses the call and
    the agent reads the verdict's text instead. `view_observations` gives the texts an agent
    is shown for its earlier tool observations (oldest first, one per record), e.g. stubs for
    old ones; None leaves them whole. `on_round_end` may return a rollback or a new team;
    `on_run_end` sees the result. `BaseSupervisor` has a no-op default for each. State a
    plug-in keeps for one run lives on the run (`run.state(self, make)`), so one instance
    serves concurrent runs.
    """

    name: str
    kinds: frozenset[str]
    actions: frozenset[str]

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict: ...

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None: ...

    def view_observations(
        self, agent: str, records: Sequence[ToolRecord], run: Run
    ) -> list[str] | None: ...

    async def on_round_end(self, run: Run) -> Verdict | None: ...

    async def on_run_end(self, run: Run, result: RunResult) -> None: ...


class BaseSupervisor:
    """Convenience base: approves everything, lets every tool run, leaves observations whole,
    ignores round and run ends. Override what you need."""

    name: str = "supervisor"
    kinds: frozenset[str] = ALL_KINDS
    actions: frozenset[str] = ALL_ACTIONS

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        return self._approval()

    def _approval(self) -> Approve:
        """This plug-in's approve verdict, made once per name (verdicts are immutable; a
        chain asks every plug-in about every step)."""
        got: Approve | None = self.__dict__.get("_approve")
        if got is None or got.by != self.name:
            got = self.__dict__["_approve"] = Approve(by=self.name)
        return got

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None:
        return None

    def view_observations(
        self, agent: str, records: Sequence[ToolRecord], run: Run
    ) -> list[str] | None:
        return None

    async def on_round_end(self, run: Run) -> Verdict | None:
        return None

    async def on_run_end(self, run: Run, result: RunResult) -> None:
        return None

    async def on_model_call(self, agent: str, usage: Usage, run: Run) -> Verdict | None:
        """After a model call of `agent` is booked (by any host: a team's agent, a framework's
        model call, a request through the proxy): a verdict with a text (replace or guide) says
        `agent` may make no more calls (a spent budget) and is what it is told; None: go on."""
        return None

    def stats(self, run: Run) -> Mapping[str, object]:
        """What this plug-in did in `run` so far, by name (a host reports it as it is, never
        reading the plug-in's state)."""
        return {}
