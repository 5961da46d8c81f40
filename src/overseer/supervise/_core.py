"""The framework-neutral SupervisorAgent: filter -> context window -> decision, with its books.

Both the runtime plug-in (the interaction bus) and the smolagents callback feed it `Step`s and
apply the `Decision` it returns in their own way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from overseer.models import Model
from overseer.supervise._context import WindowBounds, build_window, clip
from overseer.supervise._decide import Decision, decide
from overseer.supervise._prompts import ALLOWED, Action
from overseer.supervise.filters import (
    Context,
    FilterConfig,
    Step,
    StepHistory,
    Trigger,
    classify,
    normalize_action,
)

# The seed's ablations switch off one strategy each.
STRATEGIES: dict[str, tuple[Context, ...]] = {
    "correction": ("error",),
    "guidance": ("inefficient",),
    "purification": ("excessive", "synthesis"),
}


@dataclass(frozen=True)
class SupervisorSettings:
    """Everything a SupervisorAgent can be tuned by; `disable` names ablated strategies."""

    filter: FilterConfig = field(default_factory=FilterConfig)
    bounds: WindowBounds = field(default_factory=WindowBounds)
    disable: frozenset[str] = frozenset()
    max_guidance: int = 2  # guidance interventions per (agent, sub-task)
    max_verifications: int = 1  # verifier runs per (agent, sub-task): each is a whole agent run
    max_same_error: int = 2  # reviews of one identical (action, error) per (agent, sub-task)
    max_reasks: int = 2
    max_tokens: int = 768
    max_observation_chars: int = 24000  # what a purification prompt may carry
    seed: int | None = 0

    def __post_init__(self) -> None:
        unknown = set(self.disable) - set(STRATEGIES)
        if unknown:
            raise ValueError(
                f"disable: unknown strategies {sorted(unknown)}; expected some of "
                f"{sorted(STRATEGIES)}"
            )
        for name in ("max_guidance", "max_verifications", "max_reasks", "max_same_error"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: expected >= 0, got {getattr(self, name)}")

    @classmethod
    def ablation(cls, without: Iterable[str] = (), **kw: object) -> SupervisorSettings:
        return cls(disable=frozenset(without), **kw)  # type: ignore[arg-type]


@dataclass
class SupervisorStats:
    """Counts for reports: how often each context fired and each action was taken."""

    steps: int = 0
    triggers: Counter[str] = field(default_factory=Counter)
    actions: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    fallbacks: int = 0
    repairs: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "steps": self.steps,
            "triggers": dict(self.triggers),
            "actions": dict(self.actions),
            "skipped": dict(self.skipped),
            "fallbacks": self.fallbacks,
            "repairs": self.repairs,
        }


@dataclass(frozen=True)
class Review:
    """The outcome for one step: the trigger (None: filtered out) and the decision, if any."""

    trigger: Trigger | None
    decision: Decision | None
    note: str = ""  # why no LLM was asked although the filter fired


class SupervisorCore:
    """State of one supervised run (or one smolagents agent tree): history, caps, stats."""

    def __init__(self, settings: SupervisorSettings | None = None) -> None:
        self.settings = settings or SupervisorSettings()
        self.history = StepHistory()
        self.guidance: Counter[tuple[str, str]] = Counter()
        self.verifications: Counter[tuple[str, str]] = Counter()
        self.errors_seen: Counter[tuple[str, str, str, str]] = Counter()
        self.stats = SupervisorStats()

    def _allowed(self, trigger: Trigger, step: Step) -> tuple[tuple[Action, ...], str]:
        s = self.settings
        for strategy, contexts in STRATEGIES.items():
            if trigger.context in contexts and strategy in s.disable:
                return (), f"{strategy} disabled"
        allowed = ALLOWED[trigger.context]
        if trigger.context == "error":
            key = (step.agent, step.subtask, normalize_action(step), step.error or "")
            self.errors_seen[key] += 1
            if self.errors_seen[key] > s.max_same_error:
                return (), "same error already reviewed"
        if self.verifications[(step.agent, step.subtask)] >= s.max_verifications:
            allowed = tuple(a for a in allowed if a != "run_verification")
        if self.guidance[(step.agent, step.subtask)] >= s.max_guidance:
            allowed = tuple(a for a in allowed if a != "provide_guidance")
            if trigger.context == "inefficient":
                return (), "guidance cap reached"
        return allowed, ""

    def _decision_text(
        self, step: Step, trigger: Trigger, sub: list[Step], global_task: str, local_task: str
    ) -> str:
        """What the supervisor model is shown for a flagged step, by the trigger's context."""
        s = self.settings
        if trigger.context == "excessive":
            # Purification is context-agnostic: the raw observation, nothing about the task.
            return f"Observation to rewrite:\n{clip(step.observation, s.max_observation_chars)}"
        window = build_window(
            step,
            local_task,
            global_task,
            sub,
            self.history.order,
            s.bounds,
            extended=trigger.context == "inefficient",
        )
        if trigger.context == "synthesis":
            return (
                f"Global task:\n{window.global_task}\n\nThe request the sub-agent worked on:\n"
                f"{window.local_task or window.global_task}\n\nThe sub-agent's report:\n"
                f"{clip(step.observation, s.max_observation_chars)}"
            )
        return window.render()

    async def review(
        self, step: Step, *, global_task: str, local_task: str, model: Model
    ) -> Review:
        """Filter the step; when it is flagged, ask `model` what to do about it."""
        s = self.settings
        sub = self.history.add(step)
        self.stats.steps += 1
        trigger = classify(sub, s.filter)
        if trigger is None:
            return Review(None, None)
        self.stats.triggers[trigger.context] += 1
        allowed, why = self._allowed(trigger, step)
        if not allowed:
            self.stats.skipped[why] += 1
            return Review(trigger, None, why)
        d = await decide(
            model,
            trigger.context,
            allowed,
            self._decision_text(step, trigger, sub, global_task, local_task),
            max_reasks=s.max_reasks,
            max_tokens=s.max_tokens,
            seed=s.seed,
        )
        if d.repaired:
            self.stats.repairs += 1
        if d.fallback:
            self.stats.fallbacks += 1
        if (
            d.action == "correct_observation"
            and trigger.context in ("excessive", "synthesis")
            and len(d.parameter) >= len(step.observation)
        ):
            self.stats.skipped["rewrite not shorter"] += 1
            return Review(trigger, d, "rewrite not shorter than the original: kept the original")
        self.stats.actions[d.action] += 1
        if d.action == "provide_guidance":
            self.guidance[(step.agent, step.subtask)] += 1
        if d.action == "run_verification":
            self.verifications[(step.agent, step.subtask)] += 1
        return Review(trigger, d)
