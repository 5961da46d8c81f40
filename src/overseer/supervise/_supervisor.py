"""SupervisorAgent as a plug-in on the interaction bus, and a verifier agent with tools."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence

from overseer.models import Model
from overseer.runtime import AgentSpec, BaseSupervisor, Interaction, Run, RunResult, Tool, Verdict
from overseer.runtime._agent import Agent, AgentContext, AgentStepError
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
    """The seed's SupervisorAgent on the bus: an LLM-free filter, then an LLM decision.

    `model` is the supervisor's own model (None: the run's model); its calls are booked as
    kind "supervisor" in the run's ledger, so every reported figure is net. One instance may
    serve many runs: history, caps and stats live per run (keyed by run id) and are dropped at
    the run's end, after its stats are written to the trace (`supervisor_stats`).
    """

    def __init__(
        self,
        model: Model | None = None,
        settings: SupervisorSettings | None = None,
        *,
        name: str = "supervisor",
    ) -> None:
        self.name = name
        self.model = model
        self.settings = settings or SupervisorSettings()
        self._runs: dict[str, SupervisorCore] = {}  # per run id, until the run ends

    def core(self, run: Run) -> SupervisorCore:
        """The state of `run` (history, caps, stats), made at its first step."""
        if run.id not in self._runs:
            self._runs[run.id] = SupervisorCore(self.settings)
        return self._runs[run.id]

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        core = self.core(run)
        model = run.metered(self.name, "supervisor", self.model)
        r = await core.review(
            step_of(interaction, run),
            global_task=interaction.global_task,
            local_task=interaction.local_task,
            model=model,
        )
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
        )
        if d is None or r.note or d.action == "approve":
            reason = (d.fallback or d.analysis) if d else r.note
            return Verdict.approve(self.name, reason or r.note)
        why = f"{r.trigger.context}: {d.analysis}".strip()
        if d.action == "provide_guidance":
            return Verdict.guide(d.parameter, by=self.name, reason=why)
        if d.action == "run_verification":
            return Verdict.verify(d.parameter, by=self.name, reason=why)
        note = {
            "excessive": "purified: a shorter version keeping structure, links and numbers",
            "synthesis": "the sub-agent's report, synthesised",
            "error": "corrected by the supervisor",
        }.get(r.trigger.context, "corrected")
        return Verdict.replace(d.parameter, note=note, by=self.name, reason=why)

    async def on_run_end(self, run: Run, result: RunResult) -> None:
        core = self._runs.pop(run.id, None)
        if core is not None:
            run.trace.event("supervisor_stats", supervisor=self.name, **core.stats.as_dict())


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
