"""The bus: the one place that asks the supervisor chain and applies its verdicts.

Teams (the Executor) and games (`GameSession`) send every step here. The bus records the
interaction, asks the plug-ins in order, applies the verdict (guidance, a replaced
observation, a verification, a rollback within its cap, a replaced agent or team), writes
the trace events and calls the lifecycle hooks. A plug-in that may return an action its
host cannot honour is refused when the bus is built, never ignored at run time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from overseer.runtime._interaction import (
    ALL_ACTIONS,
    Interaction,
    Supervisor,
    ToolRecord,
    Verdict,
)
from overseer.runtime._run import Run, RunResult, StopReason

if TYPE_CHECKING:
    from overseer.runtime._channel import ChannelMessage
    from overseer.runtime._spec import TeamSpec

Verifier = Callable[[str, "Run"], Awaitable[str]]


class UnsupportedVerdictError(ValueError):
    """A plug-in may return a verdict action that its host (a team, a game) cannot honour."""


class SupervisorChain:
    """Asks each supervisor in order; the first verdict that is not approve wins."""

    def __init__(self, supervisors: Sequence[Supervisor] = ()) -> None:
        names = [s.name for s in supervisors]
        if len(set(names)) != len(names):
            raise ValueError(f"supervisors: names must be unique, got {names}")
        self.supervisors = list(supervisors)

    @staticmethod
    def check_names(supervisors: Sequence[Supervisor]) -> None:
        """Raise ValueError if two plug-ins share a name (their trace events would mix)."""
        SupervisorChain(supervisors)

    def __bool__(self) -> bool:
        return bool(self.supervisors)

    async def judge(self, interaction: Interaction, run: Run) -> Verdict:
        for s in self.supervisors:
            if interaction.kind not in s.kinds:
                continue
            v = _checked(s, await s.on_interaction(interaction, run))
            if v.action != "approve":
                return v
        return Verdict.approve()

    async def round_end(self, run: Run) -> Verdict | None:
        for s in self.supervisors:
            v = await s.on_round_end(run)
            if v is not None and v.action != "approve":
                return _checked(s, v)
        return None

    async def run_end(self, run: Run, result: RunResult) -> None:
        for s in self.supervisors:
            await s.on_run_end(run, result)


def _checked(s: Supervisor, v: Verdict) -> Verdict:
    """The verdict with its author filled in; an action the plug-in did not declare is an error."""
    declared = getattr(s, "actions", ALL_ACTIONS)
    if v.action != "approve" and v.action not in declared:
        raise UnsupportedVerdictError(
            f"supervisor {s.name}: returned {v.action!r}, not among its declared actions "
            f"{sorted(declared)}"
        )
    return v if v.by else replace(v, by=s.name)


@dataclass(frozen=True)
class Outcome:
    """What the bus made of one interaction: the observation the agent sees next, the verdict,
    and whether the host must roll back (the cap allowed it) or replace the agent."""

    observation: str
    verdict: Verdict
    rollback: bool = False

    @property
    def replace_agent(self) -> bool:
        return self.verdict.action == "replace_agent"


class Bus:
    """Judges the interactions of one run and applies the verdicts, within their caps."""

    def __init__(
        self,
        run: Run,
        supervisors: Sequence[Supervisor] = (),
        *,
        host: str = "team",
        honours: frozenset[str] = ALL_ACTIONS,
        verifier: Verifier | None = None,
        max_rollbacks: int = 2,
        verify_tokens: int = 512,
        seed: int | None = 0,
    ) -> None:
        for s in supervisors:
            declared = frozenset(getattr(s, "actions", ALL_ACTIONS)) - {"approve"}
            if not declared <= honours:
                raise UnsupportedVerdictError(
                    f"supervisor {s.name}: may return {sorted(declared - honours)}, which a "
                    f"{host} cannot honour (it honours {sorted(honours - {'approve'})})"
                )
        if max_rollbacks < 0:
            raise ValueError(f"max_rollbacks: expected >= 0, got {max_rollbacks}")
        self.run = run
        self.chain = SupervisorChain(supervisors)
        self.verifier = verifier
        self.max_rollbacks = max_rollbacks
        self.verify_tokens = verify_tokens
        self.seed = seed
        self.rollbacks = 0

    # -- interactions ------------------------------------------------------------------------
    async def judge(self, i: Interaction, *, ask: bool = True) -> Outcome:
        """Record `i`, ask the chain (unless `ask` is False) and apply what it says."""
        run = self.run
        run.interactions.append(i)
        run.trace.event("interaction", **interaction_fields(i))
        v = await self.chain.judge(i, run) if ask and self.chain else Verdict.approve()
        if v.action == "approve":
            return Outcome(i.observation, v)
        self._record(v, agent=i.agent, round=i.round, step=i.step)
        if v.action == "guide":
            return Outcome(f"{i.observation}\n\n[guidance from {v.by}] {v.text}", v)
        if v.action == "replace":
            return Outcome(f"{v.text}\n\n[observation replaced by {v.by}: {v.note}]", v)
        if v.action == "verify":
            finding = await self._verify(v.task)
            run.trace.event("verification", agent=i.agent, by=v.by, task=v.task, finding=finding)
            return Outcome(f"{i.observation}\n\n[verification requested by {v.by}] {finding}", v)
        if v.action == "rollback":
            return Outcome(i.observation, v, rollback=self._may_roll_back(v))
        if v.action == "replace_agent":
            if v.agent_spec is None or v.agent_spec.name != i.agent:
                raise ValueError(f"{v.by}: replace_agent must carry a spec named {i.agent!r}")
            return Outcome(i.observation, v)
        raise UnsupportedVerdictError(f"{v.by}: {v.action!r} is a round-end verdict")

    async def before_tool(self, i: Interaction) -> str | None:
        """Ask the plug-ins with a `before_tool` hook whether the call `i` may run; None: run
        it. A refusal is recorded (interaction with the note as observation, and the verdict)
        and its text is what the agent reads instead of a tool output."""
        for s in self.chain.supervisors:
            hook = getattr(s, "before_tool", None)
            if hook is None or i.kind not in s.kinds:
                continue
            v = await hook(i, self.run)
            if v is None or v.action == "approve":
                continue
            v = _checked(s, v)
            if v.action not in ("replace", "guide") or not v.text:
                raise UnsupportedVerdictError(
                    f"{v.by}: before_tool may return replace or guide with a text, got {v.action!r}"
                )
            blocked = replace(i, observation=v.text, meta={**i.meta, "blocked_by": v.by})
            self.run.interactions.append(blocked)
            self.run.trace.event("interaction", **interaction_fields(blocked))
            self._record(v, agent=i.agent, round=i.round, step=i.step)
            return v.text
        return None

    def view(self, agent: str, records: Sequence[ToolRecord]) -> list[str]:
        """The texts `agent` is shown for its tool observations: the first plug-in with a
        `view_observations` hook that answers decides; otherwise they stay whole."""
        for s in self.chain.supervisors:
            hook = getattr(s, "view_observations", None)
            texts = hook(agent, records, self.run) if hook is not None else None
            if texts is None:
                continue
            if len(texts) != len(records):
                raise ValueError(
                    f"{s.name}: view_observations returned {len(texts)} texts for "
                    f"{len(records)} records"
                )
            return list(texts)
        return [r.text for r in records]

    def _record(self, v: Verdict, **where: object) -> None:
        self.run.verdicts.append(v)
        fields = {k: getattr(v, k) for k in ("action", "by", "reason", "text", "note", "task")}
        self.run.trace.event("verdict", **where, **fields)

    async def _verify(self, task: str) -> str:
        if self.verifier is not None:
            return await self.verifier(task, self.run)
        c = await self.run.metered("verifier", "verifier").acomplete(
            [
                {"role": "system", "content": "You check one claim or question carefully."},
                {"role": "user", "content": f"Task context:\n{self.run.query}\n\nCheck: {task}"},
            ],
            max_tokens=self.verify_tokens,
            seed=self.seed,
        )
        return c.text.strip()

    # -- rollback ----------------------------------------------------------------------------
    def _may_roll_back(self, v: Verdict) -> bool:
        if self.rollbacks < self.max_rollbacks:
            return True
        self.run.trace.event("verdict_ignored", by=v.by, action=v.action, reason="rollback cap")
        return False

    def roll_back(self, v: Verdict, *, round: int, agent: str = "") -> list[ChannelMessage]:
        """Roll the channel back to its last irreversible mark; one trace event, one count."""
        self.rollbacks += 1
        removed = self.run.channel.rollback()
        self.run.trace.event(
            "rollback",
            round=round,
            agent=agent,
            by=v.by,
            reason=v.reason,
            removed=len(removed),
            count=self.rollbacks,
        )
        return removed

    # -- lifecycle ---------------------------------------------------------------------------
    async def round_end(
        self, round: int, check_team: Callable[[TeamSpec], None] | None = None
    ) -> Verdict | None:
        """Ask the plug-ins at a round's end. A new team is applied here; a rollback the cap
        allows is returned for the host to apply (`roll_back`)."""
        v = await self.chain.round_end(self.run) if self.chain else None
        if v is None:
            return None
        self._record(v, round=round)
        if v.action == "replace_team":
            if v.team_spec is None:
                raise ValueError(f"{v.by}: replace_team must carry a team spec")
            if check_team is not None:
                check_team(v.team_spec)
            self.run.team = v.team_spec
            self.run.trace.event(
                "team_replaced",
                round=round,
                by=v.by,
                reason=v.reason,
                team=v.team_spec.model_dump(),
            )
            return None
        if v.action == "rollback":
            return v if self._may_roll_back(v) else None
        raise UnsupportedVerdictError(
            f"{v.by}: on_round_end may return rollback or replace_team, got {v.action!r}"
        )

    def start(self) -> None:
        """Write the run's first trace event: query, team, model and plug-ins."""
        run = self.run
        run.trace.event(
            "run_start",
            query=run.query,
            team=run.team.model_dump(),
            model=run.model.name,
            supervisors=[s.name for s in self.chain.supervisors],
        )

    async def finish(self, stop: StopReason, answer: str, error: str | None) -> RunResult:
        """Call the run-end hooks, then take the totals (calls made in the hooks count), write
        the run's last event and close the trace."""
        run = self.run
        result = run.result(stop, answer, error)
        try:
            await self.chain.run_end(run, result)
        finally:
            result = run.result(stop, answer, error)
            run.trace.run_end(answer, stop, error, result.total, result.usage_by_actor)
            run.trace.close()
        return result


def interaction_fields(i: Interaction) -> dict[str, object]:
    """The trace fields of an interaction (logprobs are summarised, not copied)."""
    return {
        "kind": i.kind,
        "agent": i.agent,
        "role": i.role,
        "round": i.round,
        "step": i.step,
        "tool": i.tool,
        "thought": i.thought,
        "input": i.input,
        "observation": i.observation,
        "error": i.error,
        "local_task": i.local_task,
        "logprob_tokens": len(i.logprobs) if i.logprobs else 0,
        "decision_positions": list(i.decision_positions),
        "gen_ai.usage.input_tokens": i.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": i.usage.completion_tokens,
    }
