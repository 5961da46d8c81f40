"""The bus: the one place that asks the supervisor chain and applies its verdicts.

Teams (the Executor), games (`GameSession`) and framework guards send every step here. The
bus records the interaction, asks the plug-ins in order, applies the verdict (guidance, a
replaced observation, a verification, a rollback within its cap, a replaced agent or team)
through its `Host`, writes the verdict's text and the trace events, and calls the lifecycle
hooks. A verdict that ends the step (a rollback, a replaced agent) comes back as a value
(`Outcome.stop`), never as an exception. A plug-in that may return an action its host cannot
honour is refused when the bus is built, never ignored at run time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from overseer.models import Usage
from overseer.runtime._interaction import (
    Approve,
    BaseSupervisor,
    Guide,
    Interaction,
    Replace,
    ReplaceAgent,
    ReplaceTeam,
    Rollback,
    Supervisor,
    ToolRecord,
    Verdict,
    Verify,
)
from overseer.runtime._run import Run, RunResult, StopReason

Verifier = Callable[[str, "Run"], Awaitable[str]]
_APPROVED = Approve()  # the chain's verdict when every plug-in approves (verdicts are frozen)


class UnsupportedVerdictError(ValueError):
    """A plug-in may return a verdict action that its host (a team, a game) cannot honour."""


class Host(Protocol):
    """What the bus needs of the place a run lives in (a team run, a game, a framework guard).

    `label` names it in errors, `honours` lists the actions it can apply. The bus rolls the
    channel back, purges a replaced agent's messages, sets the run's team and writes the
    trace; the host does what only it knows: stop the work that ran on a rolled-back state,
    and check that a new agent or team can run here (its tools and models exist).
    """

    label: str
    honours: frozenset[str]

    def roll_back(self, v: Rollback) -> None: ...

    def replace_agent(self, v: ReplaceAgent) -> None: ...

    def replace_team(self, v: ReplaceTeam) -> None: ...


class SupervisorChain:
    """Asks each supervisor in order; the first verdict that is not approve wins.

    A hook a plug-in leaves as `BaseSupervisor` wrote it (approve, None, nothing) is not
    called: the chain keeps, per hook, the plug-ins that have their own (`asks`, ...), so a
    plug-in that only edits the context costs nothing per step.
    """

    def __init__(self, supervisors: Sequence[Supervisor] = ()) -> None:
        names = [s.name for s in supervisors]
        if len(set(names)) != len(names):
            raise ValueError(f"supervisors: names must be unique, got {names}")
        for s in supervisors:
            # a BaseSupervisor subclass has every hook; the protocol's structural check is slow
            if not isinstance(s, BaseSupervisor) and not isinstance(s, Supervisor):
                raise TypeError(
                    f"supervisor {getattr(s, 'name', s)!r}: expected the Supervisor protocol "
                    "(name, kinds, actions and every hook; subclass BaseSupervisor)"
                )
        self.supervisors = list(supervisors)
        #: the plug-ins with their own `on_interaction`, `before_tool`, `view_observations`,
        #: `on_round_end`, `on_run_end`
        self.asks = [s for s in supervisors if _own(s, "on_interaction", "_approval")]
        self.tool_checkers = [s for s in supervisors if _own(s, "before_tool")]
        self.viewers = [s for s in supervisors if _own(s, "view_observations")]
        self.round_enders = [s for s in supervisors if _own(s, "on_round_end")]
        self.run_enders = [s for s in supervisors if _own(s, "on_run_end")]
        #: optional hooks (a plug-in without them is still a plug-in): model calls, stats
        self.callers = [s for s in supervisors if _has(s, "on_model_call")]
        self.reporters = [s for s in supervisors if _has(s, "stats")]
        self._honoured: set[frozenset[str]] = set()  # host action sets found to suffice

    @staticmethod
    def check_names(supervisors: Sequence[Supervisor]) -> None:
        """Raise ValueError if two plug-ins share a name (their trace events would mix)."""
        SupervisorChain(supervisors)

    def check_host(self, host: Host) -> None:
        """Raise UnsupportedVerdictError if a plug-in may return an action `host` cannot
        honour (checked once per set of honoured actions)."""
        if host.honours in self._honoured:
            return
        for s in self.supervisors:
            declared = frozenset(s.actions) - {"approve"}
            if not declared <= host.honours:
                raise UnsupportedVerdictError(
                    f"supervisor {s.name}: may return {sorted(declared - host.honours)}, which "
                    f"a {host.label} cannot honour (it honours {sorted(host.honours)})"
                )
        self._honoured.add(host.honours)

    def __bool__(self) -> bool:
        return bool(self.supervisors)

    async def judge(self, interaction: Interaction, run: Run) -> Verdict:
        """The chain's verdict on `interaction`: the first that is not approve (or a rewrite)
        of the plug-ins asked in order (see `Bus.judge`, which also applies rewrites)."""
        rewrite: Verdict | None = None
        for s in self.asks:
            if interaction.kind not in s.kinds:
                continue
            v = await s.on_interaction(interaction, run)
            if isinstance(v, Replace) and v.rewrite:
                rewrite = rewrite or _checked(s, v)
                interaction = replace(interaction, observation=v.observation)
            elif not isinstance(v, Approve):
                return _checked(s, v)
        return rewrite or _APPROVED

    async def round_end(self, run: Run) -> Verdict | None:
        for s in self.round_enders:
            v = await s.on_round_end(run)
            if v is not None and not isinstance(v, Approve):
                return _checked(s, v)
        return None

    async def run_end(self, run: Run, result: RunResult) -> None:
        for s in self.run_enders:
            await s.on_run_end(run, result)


def _observer(s: Supervisor) -> bool:
    """Whether `s` declares no action but approve: it only looks (and may trace, count)."""
    return frozenset(s.actions) <= {"approve"}


def _has(s: Supervisor, hook: str) -> bool:
    """Whether `s` has its own optional `hook` (one the Supervisor protocol does not require)."""
    return hasattr(s, hook) and _own(s, hook)


def _own(s: Supervisor, *hooks: str) -> bool:
    """Whether `s` has its own version of any of `hooks` (not BaseSupervisor's default)."""
    if not isinstance(s, BaseSupervisor):
        return True
    cls = type(s)
    return any(h in vars(s) or getattr(cls, h) is not getattr(BaseSupervisor, h) for h in hooks)


def _checked(s: Supervisor, v: Verdict) -> Verdict:
    """The verdict with its author filled in; an action the plug-in did not declare is an error."""
    if not isinstance(v, Approve) and v.action not in s.actions:
        raise UnsupportedVerdictError(
            f"supervisor {s.name}: returned {v.action!r}, not among its declared actions "
            f"{sorted(s.actions)}"
        )
    return v if v.by else replace(v, by=s.name)


def observation_after(v: Verdict, observation: str, finding: str = "") -> str:
    """What an agent reads after verdict `v` on a step that returned `observation` (for a
    verification, `finding` is the verifier's answer): the bus's wording, written only here."""
    if isinstance(v, Guide):
        return f"{observation}\n\n[guidance from {v.by}] {v.text}"
    if isinstance(v, Replace):
        text = f"{v.observation}\n\n[observation replaced by {v.by}: {v.note}]"
        return f"{text}\n\n[guidance from {v.by}] {v.guidance}" if v.guidance else text
    if isinstance(v, Verify):
        return f"{observation}\n\n[verification requested by {v.by}] {finding}"
    return observation


def _refusal(s: Supervisor, got: Verdict, hook: str) -> tuple[Verdict, str]:
    """A refusing verdict of plug-in `s` from `hook`, checked, and the text the agent reads
    instead; a verdict without a text is an error."""
    v = _checked(s, got)
    text = _refusal_text(v)
    if not text:
        raise UnsupportedVerdictError(
            f"{v.by}: {hook} may return replace or guide with a text, got {v.action!r}"
        )
    return v, text


def _refusal_text(v: Verdict) -> str:
    """What an agent reads instead of a refused tool call: the verdict's own text."""
    if isinstance(v, Replace):
        return v.observation
    return v.text if isinstance(v, Guide) else ""


@dataclass(frozen=True)
class Outcome:
    """What the bus made of one interaction: the observation the agent sees next, the verdict,
    and whether the step's turn ends here (`stop`: it was rolled back, or its agent replaced;
    the host plays it again)."""

    observation: str
    verdict: Verdict
    stop: bool = False


@dataclass(frozen=True)
class Verification:
    """How a run answers a verify verdict: its `verifier`, or else one call of the run's
    model (as actor "verifier", at most `tokens` tokens, with `seed`)."""

    verifier: Verifier | None = None
    tokens: int = 512
    seed: int | None = 0

    async def check(self, task: str, run: Run) -> str:
        """The finding on `task`: what the verifier or the model says about it."""
        if self.verifier is not None:
            return await self.verifier(task, run)
        c = await run.metered("verifier", "verifier").acomplete(
            [
                {"role": "system", "content": "You check one claim or question carefully."},
                {"role": "user", "content": f"Task context:\n{run.query}\n\nCheck: {task}"},
            ],
            max_tokens=self.tokens,
            seed=self.seed,
        )
        return c.text.strip()


class Bus:
    """Judges the interactions of one run and applies the verdicts through its host."""

    def __init__(
        self,
        run: Run,
        supervisors: Sequence[Supervisor] | SupervisorChain = (),
        *,
        host: Host,
        verifier: Verifier | None = None,
        max_rollbacks: int = 2,
        verify_tokens: int = 512,
        seed: int | None = 0,
    ) -> None:
        self.chain = (
            supervisors
            if isinstance(supervisors, SupervisorChain)
            else SupervisorChain(supervisors)
        )
        self.chain.check_host(host)
        if max_rollbacks < 0:
            raise ValueError(f"max_rollbacks: expected >= 0, got {max_rollbacks}")
        self.run = run
        self.host = host
        self.max_rollbacks = max_rollbacks
        self.verification = Verification(verifier, verify_tokens, seed)
        #: one record per rollback applied: round, agent, by, reason, messages removed
        self.rolled_back: list[dict[str, Any]] = []
        #: agent -> its tool calls refused in a row (`before_tool`); a call that runs or an
        #: answer resets it. The one refusal counter: every host closes tools by it
        self.refused: Counter[str] = Counter()

    @property
    def rollbacks(self) -> int:
        return len(self.rolled_back)

    # -- interactions ------------------------------------------------------------------------
    async def judge(self, i: Interaction, *, ask: bool = True) -> Outcome:
        """Record `i`, ask the chain and apply what it says. `ask=False` (a step the host can
        no longer change, e.g. a framework agent's answer once its run ended) shows `i` only
        to the plug-ins that take no action (observers, such as a monitor that estimates)."""
        run = self.run
        run.interactions.append(i)
        run.trace.record("interaction", interaction_fields(i))
        self.refused[i.agent] = 0
        shown, seen, rewrite = i.observation, i, None  # what the agent and the plug-ins read
        for s in self.chain.asks:  # the chain's `judge`, without a coroutine of its own
            if i.kind not in s.kinds or not (ask or _observer(s)):
                continue
            v = await s.on_interaction(seen, run)
            if isinstance(v, Replace) and v.rewrite:  # applied; the rest judge the new text
                rewrite = _checked(s, v)
                self._record(rewrite, agent=i.agent, round=i.round, step=i.step)
                shown = observation_after(rewrite, shown)
                meta = {**seen.meta, "raw_observation": i.observation}
                seen = replace(seen, observation=v.observation, meta=meta)
            elif not isinstance(v, Approve):
                return await self.apply(_checked(s, v), replace(seen, observation=shown))
        return Outcome(shown, rewrite or _APPROVED)

    async def apply(self, v: Verdict, i: Interaction) -> Outcome:
        """Apply verdict `v` on step `i` (already recorded): the one place a step's verdict
        takes effect."""
        if isinstance(v, Approve):
            return Outcome(i.observation, v)
        self._record(v, agent=i.agent, round=i.round, step=i.step)
        if isinstance(v, Guide | Replace):
            return Outcome(observation_after(v, i.observation), v)
        if isinstance(v, Verify):
            finding = await self.verification.check(v.task, self.run)
            self.run.trace.event(
                "verification", agent=i.agent, by=v.by, task=v.task, finding=finding
            )
            return Outcome(observation_after(v, i.observation, finding), v)
        if isinstance(v, Rollback):
            return Outcome(i.observation, v, stop=self._roll_back(v, i.round, i.agent))
        if isinstance(v, ReplaceAgent):
            self._replace_agent(v, i.agent)
            return Outcome(i.observation, v, stop=True)
        raise UnsupportedVerdictError(f"{v.by}: {v.action!r} is a round-end verdict")

    async def before_tool(self, i: Interaction) -> str | None:
        """Ask the plug-ins' `before_tool` hooks whether the call `i` may run; None: run it. A
        refusal is recorded (interaction with the note as observation, and the verdict) and
        its text is what the agent reads instead of a tool output."""
        for s in self.chain.tool_checkers:
            if i.kind not in s.kinds:
                continue
            got = await s.before_tool(i, self.run)
            if got is None or isinstance(got, Approve):
                continue
            v, text = _refusal(s, got, "before_tool")
            blocked = replace(i, observation=text, meta={**i.meta, "blocked_by": v.by})
            self.refused[i.agent] += 1
            self.run.interactions.append(blocked)
            self.run.trace.event("interaction", **interaction_fields(blocked))
            self._record(v, agent=i.agent, round=i.round, step=i.step)
            return text
        self.refused[i.agent] = 0
        return None

    async def model_call(self, agent: str, usage: Usage) -> str | None:
        """A model call of `agent` that its host booked, through the plug-ins'
        `on_model_call` in order: the text of the first verdict that ends the agent's calls
        (recorded, as a refusal is), else None."""
        for s in self.chain.callers:
            got = await s.on_model_call(agent, usage, self.run)  # type: ignore[attr-defined]
            if got is None or isinstance(got, Approve):
                continue
            v, text = _refusal(s, got, "on_model_call")
            self._record(v, agent=agent, round=self.run.round)
            return text
        return None

    def stats(self) -> dict[str, dict[str, object]]:
        """What each plug-in did in this run so far, by plug-in name (its own `stats`)."""
        return {s.name: dict(s.stats(self.run)) for s in self.chain.reporters}  # type: ignore[attr-defined]

    def view(self, agent: str, records: Sequence[ToolRecord]) -> list[str]:
        """The texts `agent` is shown for its tool observations: the first plug-in whose
        `view_observations` answers decides; otherwise they stay whole."""
        for s in self.chain.viewers:
            texts = s.view_observations(agent, records, self.run)
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
        self.run.trace.event("verdict", **where, **v.trace_fields())

    # -- rollback and replacement ------------------------------------------------------------
    def _roll_back(self, v: Rollback, round: int, agent: str) -> bool:
        """Roll the channel back to its last mark and have the host stop what ran on it,
        within the cap; one record, one trace event. False: the cap refused it."""
        if self.rollbacks >= self.max_rollbacks:
            self.run.trace.event("verdict_ignored", by=v.by, action=v.action, reason="rollback cap")
            return False
        removed = self.run.channel.rollback()
        self.rolled_back.append(
            {
                "round": round,
                "agent": agent,
                "by": v.by,
                "reason": v.reason,
                "removed": len(removed),
            }
        )
        self.run.trace.event("rollback", **self.rolled_back[-1], count=self.rollbacks)
        self.host.roll_back(v)
        return True

    def _replace_agent(self, v: ReplaceAgent, agent: str) -> None:
        if v.spec.name != agent:
            raise ValueError(f"{v.by}: replace_agent must carry a spec named {agent!r}")
        self.host.replace_agent(v)
        removed = self.run.channel.purge(agent)
        self.run.team = self.run.team.with_agent(v.spec)
        self.run.trace.event(
            "agent_replaced",
            agent=agent,
            by=v.by,
            reason=v.reason,
            purged=len(removed),
            spec=v.spec.model_dump(),
        )

    # -- lifecycle ---------------------------------------------------------------------------
    async def round_end(self, round: int) -> bool:
        """Ask the plug-ins at a round's end and apply what they say (a new team for the next
        rounds, or a rollback); True when the round was rolled back."""
        v = await self.chain.round_end(self.run)
        if v is None:
            return False
        self._record(v, round=round)
        if isinstance(v, ReplaceTeam):
            self.host.replace_team(v)
            self.run.team = v.spec
            self.run.trace.event(
                "team_replaced", round=round, by=v.by, reason=v.reason, team=v.spec.model_dump()
            )
            return False
        if isinstance(v, Rollback):
            return self._roll_back(v, round, "")
        raise UnsupportedVerdictError(
            f"{v.by}: on_round_end may return rollback or replace_team, got {v.action!r}"
        )

    def start(
        self, team_dump: Mapping[str, Any] | None = None, *, model: str | None = None
    ) -> None:
        """Write the run's first trace event: query, team (`team_dump`: the team's
        `model_dump()` when the host keeps it), model (`model`: the agents' own, when it is
        not the run's) and plug-ins."""
        run = self.run
        run.trace.event(
            "run_start",
            query=run.query,
            team=team_dump if team_dump is not None else run.team.model_dump(),
            model=run.model.name if model is None else model,
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
            if self.chain.run_enders:  # the hooks may have booked calls or stats
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
