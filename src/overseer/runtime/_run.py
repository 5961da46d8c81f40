"""The state of one run that plug-ins may read: team, channel, ledger, trace, interactions."""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar, cast

from overseer.models import Model, Usage
from overseer.runtime._channel import Channel, ChannelMessage
from overseer.runtime._interaction import Interaction, Verdict
from overseer.runtime._ledger import ActorKind, Budget, Ledger, MeteredModel
from overseer.runtime._spec import TeamSpec
from overseer.runtime._trace import Trace

S = TypeVar("S")

# empty_answer: the run finished, but with an empty answer (every reply unparsable or empty)
StopReason = Literal[
    "done",
    "empty_answer",
    "budget_tokens",
    "budget_steps",
    "budget_time",
    "context_window",
    "error",
]


@dataclass(frozen=True)
class AgentFailure:
    """An agent that produced no message this round, and why (never an empty message)."""

    agent: str
    round: int
    reason: Literal["unparsable", "no_answer", "model_error", "tool_error"]
    detail: str


@dataclass
class Run:
    """One query through one team. The Executor owns it; supervisors read it and book calls."""

    id: str
    query: str
    team: TeamSpec
    model: Model
    ledger: Ledger
    trace: Trace
    channel: Channel = field(default_factory=Channel)
    round: int = 0
    interactions: list[Interaction] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    failures: list[AgentFailure] = field(default_factory=list)
    plugin_stats: dict[str, dict[str, object]] = field(default_factory=dict)  # by plug-in name
    _states: dict[int, object] = field(default_factory=dict, init=False, repr=False)

    def state(self, plugin: object, make: Callable[[], S]) -> S:
        """The state `plugin` keeps for this run, made by `make()` at its first use.

        The one place plug-ins keep per-run state: it lives and ends with the run, so one
        plug-in instance serves concurrent runs (teams and games) without mixing them.
        """
        key = id(plugin)
        if key not in self._states:
            self._states[key] = make()
        return cast(S, self._states[key])

    def has_state(self, plugin: object) -> bool:
        """Whether `plugin` has made its state for this run yet."""
        return id(plugin) in self._states

    def metered(self, actor: str, kind: ActorKind, model: Model | None = None) -> MeteredModel:
        """A model for `actor` whose calls are budget-checked, booked and traced in this run."""
        return MeteredModel(model or self.model, self.ledger, actor, kind, self.trace)

    def interactions_of(self, agent: str) -> list[Interaction]:
        return [i for i in self.interactions if i.agent == agent]

    def result(self, stop: StopReason, answer: str, error: str | None = None) -> RunResult:
        """The run's result as of now: answer, stop reason, books and messages."""
        return RunResult(
            run_id=self.id,
            answer=answer,
            stop_reason=stop,
            usage_by_actor=self.ledger.by_actor(),
            calls_by_actor=self.ledger.calls_by_actor(),
            total=self.ledger.total,
            rounds=self.round + 1,
            trace_path=self.trace.path,
            failures=tuple(self.failures),
            messages=self.channel.snapshot(),
            error=error,
            plugin_stats={k: dict(v) for k, v in self.plugin_stats.items()},
        )


@dataclass(frozen=True)
class RunResult:
    """The answer of a run, why it stopped, and where its books and trace are."""

    run_id: str
    answer: str
    stop_reason: StopReason
    usage_by_actor: dict[str, Usage]
    calls_by_actor: dict[str, int]
    total: Usage
    rounds: int
    trace_path: Path
    failures: tuple[AgentFailure, ...] = ()
    messages: tuple[ChannelMessage, ...] = ()
    error: str | None = None
    plugin_stats: dict[str, dict[str, object]] = field(default_factory=dict)  # set at run end

    def calls_all_failed(self) -> str | None:
        """Why no model call of the run succeeded (the last model error, or the context-window
        stop), or None when at least one call did: such a run has no answer to score."""
        failed = [f for f in self.failures if f.reason == "model_error"]
        if any(self.calls_by_actor.values()):
            return None
        if failed:
            return failed[-1].detail
        return self.error if self.stop_reason == "context_window" else None


def open_run(
    query: str,
    team: TeamSpec,
    model: Model,
    *,
    run_id: str | None = None,
    trace_dir: str | Path | None = "runs",
    budget: Budget | None = None,
) -> Run:
    """A new Run with its ledger and trace: the one place run ids are made.

    Without `run_id` the id is a timestamp and a random suffix; a given id is made safe for
    a file name. A run whose trace file already exists gets a suffixed id, so a rerun never
    appends to an old trace. `trace_dir=None` writes the trace nowhere (os.devnull).
    """
    rid = (
        re.sub(r"[^A-Za-z0-9_.-]+", "-", run_id)
        if run_id
        else (f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}")
    )
    if trace_dir is None:
        trace = Trace(os.devnull, rid)
    else:
        try:  # one system call: the file is created, or found to exist
            trace = Trace(Path(trace_dir, f"{rid}.jsonl"), rid, new=True)
        except FileExistsError:
            rid = f"{rid}-{uuid.uuid4().hex[:6]}"
            trace = Trace(Path(trace_dir, f"{rid}.jsonl"), rid, new=True)
    return Run(rid, query, team, model, Ledger(rid, budget), trace)
