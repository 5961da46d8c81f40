"""The framework-neutral SupervisorAgent, the LLM tier: filter -> context window -> decision,
with its books. The rule tier is not in it: its rules are plug-ins of their own that a chain
asks first (`overseer.supervise.rules`); this tier then reads what they left (an extract in
place of a long page) and leaves repeats and loops to the loop breaker.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from overseer.models import Model
from overseer.supervise._check import reply_budget, rewrite_problem
from overseer.supervise._context import WindowBounds, build_window, clip
from overseer.supervise._decide import Decision, decide
from overseer.supervise._extract import Embed, extract
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
from overseer.supervise.learned import LearnedTrigger, step_features
from overseer.supervise.rules import RuleSettings

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
    max_tokens: int = 768  # the most a decision reply may use; below it the limit follows
    #                        the length of what the reply must write (`reply_budget`)
    max_observation_chars: int = 24000  # what a purification prompt may carry
    seed: int | None = 0
    rules: RuleSettings | None = None  # the rule tier's plug-ins that run before this one in
    #                                     the chain (None: none); it leaves loops to them
    verify: bool = True  # run_verification is offered (False when no verifier is configured)
    learned: LearnedTrigger | None = None  # skip the LLM where this predicts approve (None: off)

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
        if self.max_tokens < 64:
            raise ValueError(f"max_tokens: expected >= 64, got {self.max_tokens}")

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
    rejected: Counter[str] = field(default_factory=Counter)  # LLM rewrites refused, by context

    def as_dict(self) -> dict[str, object]:
        return {
            "steps": self.steps,
            "triggers": dict(self.triggers),
            "actions": dict(self.actions),
            "skipped": dict(self.skipped),
            "fallbacks": self.fallbacks,
            "repairs": self.repairs,
            "rejected": dict(self.rejected),
        }


@dataclass(frozen=True)
class Review:
    """The outcome for one step: the trigger (None: filtered out) and the decision, if any."""

    trigger: Trigger | None
    decision: Decision | None
    note: str = ""  # why no LLM was asked although the filter fired
    features: dict[str, float | str] | None = None  # the learned trigger's features (LLM asked
    #                                                  or skipped by the trigger), for training


class SupervisorCore:
    """State of one supervised run: history, caps and stats. `embed` ranks the passages of
    the extract that stands in for a rewrite that fails the fact check."""

    def __init__(
        self,
        settings: SupervisorSettings | None = None,
        *,
        embed: Embed | None = None,
    ) -> None:
        self.settings = settings or SupervisorSettings()
        self.history = StepHistory()
        self.guidance: Counter[tuple[str, str]] = Counter()
        self.verifications: Counter[tuple[str, str]] = Counter()
        self.errors_seen: Counter[tuple[str, str, str, str]] = Counter()
        self.failed_purifications: set[str] = set()  # observations the LLM failed to purify
        self.stats = SupervisorStats()
        self.embed = embed

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
        if trigger.context in ("excessive", "synthesis") and _key(step) in (
            self.failed_purifications
        ):
            return (), "purification failed before"
        drop = set()
        if not s.verify or self.verifications[(step.agent, step.subtask)] >= s.max_verifications:
            drop.add("run_verification")
        if not step.observation.strip():
            drop.add("correct_observation")  # nothing to correct: it would be invented
        if self.guidance[(step.agent, step.subtask)] >= s.max_guidance:
            drop.add("provide_guidance")
            if trigger.context == "inefficient":
                return (), "guidance cap reached"
        allowed = tuple(a for a in allowed if a not in drop)
        return allowed, "" if allowed else "no action can run"

    def _settled(self, step: Step, trigger: Trigger) -> Review | None:
        """A flagged step left to the loop breaker when it runs before this tier (a repeated
        error, a loop); None: the LLM may be asked."""
        rules = self.settings.rules
        if rules is None or not rules.loop_breaker:
            return None
        if trigger.context == "error" and self._repeated_error(step):
            return self._skip(trigger, "repeated error: left to the loop breaker")
        if trigger.context == "inefficient" and trigger.reason.startswith("loop:"):
            return self._skip(trigger, "loop: left to the loop breaker")
        return None

    def _skip(self, trigger: Trigger, why: str) -> Review:
        self.stats.skipped[why] += 1
        return Review(trigger, None, why)

    def _repeated_error(self, step: Step) -> bool:
        same = [
            s
            for s in self.history.of(step.agent, step.subtask)[:-1]
            if s.error == step.error and normalize_action(s) == normalize_action(step)
        ]
        return bool(same)

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
        self, step: Step, *, global_task: str, local_task: str, model: Model, role: str = ""
    ) -> Review:
        """When the filter flags what the rules before it cannot settle, the learned trigger
        (if set) may skip the LLM; else ask `model` what to do about it, and check what it
        writes. `role`: the agent's role (a feature of the trigger)."""
        s = self.settings
        sub = self.history.add(step)
        self.stats.steps += 1
        trigger = classify(sub, s.filter)
        if trigger is not None:
            self.stats.triggers[trigger.context] += 1
        if trigger is None:
            return Review(None, None)
        if (settled := self._settled(step, trigger)) is not None:
            return settled
        asked = step
        allowed, why = self._allowed(trigger, asked)
        if not allowed:
            return self._skip(trigger, why)
        feats = step_features(asked, sub, trigger, role)
        if s.learned is not None:
            skip, p = s.learned.skip(feats)
            if skip:
                self.stats.skipped["learned trigger"] += 1
                note = f"learned trigger: approve predicted (p={p:.3f} < {s.learned.threshold:.3f})"
                return Review(trigger, None, note, features=feats)
        chars = (
            len(asked.observation)
            if trigger.context != "excessive"
            else min(len(asked.observation), s.max_observation_chars)
        )
        d = await decide(
            model,
            trigger.context,
            allowed,
            self._decision_text(asked, trigger, sub, global_task, local_task),
            max_reasks=s.max_reasks,
            max_tokens=reply_budget(allowed, trigger.context, chars, s.max_tokens),
            max_tokens_cap=s.max_tokens,
            seed=s.seed,
        )
        got = self._vetted(d, asked, trigger, local_task or global_task)
        return replace(self._booked(asked, trigger, d, got), features=feats)

    def _vetted(self, d: Decision, step: Step, trigger: Trigger, query: str) -> Decision | str:
        """The decision to apply, or why it is not applied (an LLM-free check of rewrites)."""
        if d.repaired:
            self.stats.repairs += 1
        purify = trigger.context in ("excessive", "synthesis")
        if d.fallback:
            self.stats.fallbacks += 1
            if purify:
                self.failed_purifications.add(_key(step))
        if d.action != "correct_observation":
            return d
        if purify and len(d.parameter) >= len(step.observation):
            self.failed_purifications.add(_key(step))
            return "rewrite not shorter"
        source = step.observation if purify else _error_source(step)
        problem = rewrite_problem(d.parameter, source)
        if not problem:
            return d
        self.stats.rejected[trigger.context] += 1
        if not purify:
            return f"correction rejected: {problem}"
        self.failed_purifications.add(_key(step))
        keep = self.settings.rules.purify_keep if self.settings.rules else len(source) // 2
        text = extract(source, query, max(1, min(keep, len(source) - 1)), embed=self.embed)
        why = f"LLM rewrite rejected ({problem}); extractive version used"
        return replace(d, parameter=text, repaired=why)

    def _booked(self, step: Step, trigger: Trigger, d: Decision, got: Decision | str) -> Review:
        """Count an applied decision (and its caps), or record why the reply is not applied."""
        if isinstance(got, str):
            key = got.split(":")[0]
            self.stats.skipped[key] += 1
            note = _NOTES.get(key, got)
            return Review(trigger, d, note)
        self.stats.actions[got.action] += 1
        if got.action == "provide_guidance":
            self.guidance[(step.agent, step.subtask)] += 1
        if got.action == "run_verification":
            self.verifications[(step.agent, step.subtask)] += 1
        return Review(trigger, got)


_NOTES = {"rewrite not shorter": "rewrite not shorter than the original: kept the original"}


def _key(step: Step) -> str:
    """A short key of an observation (to remember which ones the LLM failed to purify)."""
    return hashlib.sha1(step.observation.encode("utf-8", "replace")).hexdigest()


def _error_source(step: Step) -> str:
    """What an error correction may draw on: the step's observation, error and action."""
    return "\n".join(x for x in (step.observation, step.error or "", step.args, step.code) if x)
