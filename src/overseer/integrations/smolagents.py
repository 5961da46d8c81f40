"""SupervisorAgent for smolagents: a step callback that reviews every ActionStep.

smolagents calls step callbacks after a step ran and before the next prompt is built from
memory, so changing `step.observations` in place changes what the agent reads next. The
callback turns the step into an overseer `Step`, lets `SupervisorCore` filter it (no LLM for
ordinary steps) and, when flagged, applies the supervisor's decision: guidance and verifier
results are appended to the observation, a correction replaces it. The supervisor's tokens
are added to the step's `token_usage`, so smolagents' own totals include them.

    sup = OverseerSupervisor(load_model("qwen2.5-coder-0.5b"))
    agent = ToolCallingAgent(tools=[...], model=..., step_callbacks=[sup])
    sup.attach(manager)  # or: register on a manager and all its managed agents
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from overseer.integrations._guard import run_sync
from overseer.models import Model, Usage
from overseer.supervise import Review, Step, SupervisorCore, SupervisorSettings

try:
    from smolagents.memory import ActionStep
    from smolagents.monitoring import TokenUsage
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "overseer.integrations.smolagents needs smolagents: pip install 'overseer[smolagents]'"
    ) from exc

#: question -> answer; runs the check a `run_verification` decision asks for.
QuestionVerifier = Callable[[str], str]


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def step_from_smolagents(memory_step: ActionStep, agent_name: str, subtask: str) -> Step:
    """The overseer view of one smolagents ActionStep (first tool call, code, output, error)."""
    calls = memory_step.tool_calls or []
    first = calls[0] if calls else None
    tool = first.name if first is not None else None
    args = _text(first.arguments) if first is not None else ""
    if tool == "python_interpreter" and memory_step.code_action:
        args = ""
    error = str(memory_step.error) if memory_step.error is not None else None
    observation = memory_step.observations or ""
    return Step(
        agent=agent_name,
        subtask=subtask,
        kind="tool" if first is not None else "message",
        tool=tool,
        args=args,
        code=memory_step.code_action or "",
        observation=observation,
        error=error,
        thought=_text(memory_step.model_output),
    )


@dataclass
class SmolagentsSupervisionLog:
    """One flagged step: what fired, what was decided, for reports and tests."""

    agent: str
    step: int
    context: str
    reason: str
    action: str | None
    note: str = ""


@dataclass
class OverseerSupervisor:
    """A smolagents step callback running the SupervisorAgent on each ActionStep.

    One instance keeps one history (loops are found across steps); register it on a manager
    and its managed agents with `attach` so sub-agent reports are seen in context.
    """

    model: Model
    settings: SupervisorSettings = field(default_factory=SupervisorSettings)
    verifier: QuestionVerifier | None = None
    core: SupervisorCore = field(init=False)
    usage: Usage = field(default_factory=Usage)
    log: list[SmolagentsSupervisionLog] = field(default_factory=list)
    _root: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.core = SupervisorCore(self.settings)

    def attach(self, agent: Any) -> Any:
        """Register on `agent` and, recursively, its managed agents; `agent`'s task is global."""
        self._root = agent
        self._register(agent)
        return agent

    def _register(self, agent: Any) -> None:
        agent.step_callbacks.register(ActionStep, self)
        for sub in (getattr(agent, "managed_agents", None) or {}).values():
            self._register(sub)

    def _global_task(self, agent: Any) -> str:
        task = getattr(self._root, "task", None) if self._root is not None else None
        return str(task or getattr(agent, "task", "") or "")

    def __call__(self, memory_step: ActionStep, agent: Any = None) -> None:
        """The callback smolagents calls after each step (other memory steps are ignored)."""
        if not isinstance(memory_step, ActionStep) or memory_step.is_final_answer:
            return
        name = str(getattr(agent, "name", None) or "agent")
        local = str(getattr(agent, "task", "") or "")
        step = step_from_smolagents(memory_step, name, subtask=local[:200])
        review = run_sync(
            self.core.review(
                step, global_task=self._global_task(agent), local_task=local, model=self.model
            )
        )
        self._apply(review, memory_step, name, agent)

    def _apply(self, r: Review, memory_step: ActionStep, agent: str, agent_obj: Any) -> None:
        if r.trigger is None:
            return
        d = r.decision
        self.log.append(
            SmolagentsSupervisionLog(
                agent=agent,
                step=memory_step.step_number,
                context=r.trigger.context,
                reason=r.trigger.reason,
                action=d.action if d else None,
                note=r.note or (d.fallback if d else ""),
            )
        )
        if d is None:
            return
        self._book(memory_step, d.usage, agent_obj)
        if r.note or d.action == "approve":
            return
        obs = memory_step.observations or ""
        if d.action == "provide_guidance":
            memory_step.observations = f"{obs}\n\n[Supervisor guidance] {d.parameter}".strip()
        elif d.action == "correct_observation":
            memory_step.observations = d.parameter
        elif d.action == "run_verification":
            if self.verifier is None:
                result = "no verifier is configured; check this yourself before going on"
            else:
                result = self.verifier(d.parameter)
            memory_step.observations = (
                f"{obs}\n\n[Supervisor verification] {d.parameter}\n{result}".strip()
            )

    def _book(self, memory_step: ActionStep, used: Usage, agent: Any) -> None:
        """Add the supervisor's tokens to the step, and to smolagents' totals."""
        self.usage = self.usage + used
        before = memory_step.token_usage
        memory_step.token_usage = TokenUsage(
            input_tokens=(before.input_tokens if before else 0) + used.prompt_tokens,
            output_tokens=(before.output_tokens if before else 0) + used.completion_tokens,
        )
        monitor = getattr(agent, "monitor", None)
        # Registered after the agent's monitor (attach() on a built agent), the monitor has
        # already counted this step: it appends one duration per action step it counts.
        if monitor is not None and len(monitor.step_durations) >= memory_step.step_number:
            monitor.total_input_token_count += used.prompt_tokens
            monitor.total_output_token_count += used.completion_tokens

    @property
    def stats(self) -> dict[str, object]:
        """Steps seen, filter triggers by context, decisions by action, fallbacks."""
        return self.core.stats.as_dict()
