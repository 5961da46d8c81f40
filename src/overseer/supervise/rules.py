"""The rule tier of the SupervisorAgent (issue 18): cheap, LLM-free rules that act first.

Four rules, each with its own switch in `RuleSettings` and its own count:
- `loop_breaker`: an identical action (tool + normalised arguments, or the same code) of one
  agent in one sub-task runs at most `loop_limit` times; the next is refused with a short note;
- `masking`: tool observations older than an agent's last `mask_keep` become one-line stubs;
- `purification`: an observation longer than `purify_over` chars is cut extractively
  (`extract`: verbatim passages most relevant to the task, no LLM, one closing note);
- `budget`: tokens and tool steps per (agent, sub-task).
Framework-neutral: the runtime plug-in and every framework adapter call the same methods.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from overseer.runtime.steps import ToolRecord
from overseer.supervise._extract import extract
from overseer.supervise.filters import Step, normalize_action

RuleName = Literal["loop_breaker", "masking", "purification", "budget"]
RULES: tuple[RuleName, ...] = ("loop_breaker", "masking", "purification", "budget")

__all__ = [
    "RULES",
    "Blocked",
    "RuleFiring",
    "RuleName",
    "RuleSettings",
    "RuleTier",
    "ToolRecord",
    "extract",
    "mask_stub",
]


@dataclass(frozen=True)
class RuleSettings:
    """Switches and thresholds of the rule tier (each rule can be turned off)."""

    loop_breaker: bool = True
    loop_limit: int = 2  # an identical action runs at most this often per (agent, subtask)
    masking: bool = True
    mask_keep: int = 2  # the agent's last k tool observations stay whole; older -> stub
    purify: bool = True
    purify_over: int = 3000  # observations longer than this (chars) are cut extractively
    purify_keep: int = 1500  # about how many chars the extract keeps
    budget_tokens: int | None = None  # per (agent, subtask); None = no budget
    budget_steps: int | None = None  # tool steps per (agent, subtask)

    def __post_init__(self) -> None:
        for name, low in (("loop_limit", 1), ("mask_keep", 0), ("purify_over", 1)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"rule setting {name}: expected an integer >= {low}, got {v!r}")
        if not isinstance(self.purify_keep, int) or not 1 <= self.purify_keep < self.purify_over:
            raise ValueError(
                f"rule setting purify_keep: expected an integer in [1, purify_over="
                f"{self.purify_over}), got {self.purify_keep!r}"
            )
        for name in ("budget_tokens", "budget_steps"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ValueError(
                    f"rule setting {name}: expected None or an integer >= 1, got {v!r}"
                )

    def enabled(self) -> tuple[RuleName, ...]:
        """The rules switched on (budget counts as on when a budget is set)."""
        on = {
            "loop_breaker": self.loop_breaker,
            "masking": self.masking,
            "purification": self.purify,
            "budget": self.budget_tokens is not None or self.budget_steps is not None,
        }
        return tuple(r for r in RULES if on[r])


@dataclass(frozen=True)
class RuleFiring:
    """One rule that acted: for the trace event `rule`, the counts and the logs."""

    rule: RuleName
    agent: str
    subtask: str
    detail: str  # one line saying what was done
    before_chars: int = 0
    after_chars: int = 0


@dataclass(frozen=True)
class Blocked:
    """A tool call the rules refuse to run: the agent reads `note` instead of a tool output."""

    note: str
    firing: RuleFiring


def _short(text: str, n: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 3] + "..."


def mask_stub(record: ToolRecord) -> str:
    """The one line that stands for an older tool output: what tool, what arguments, how long."""
    call = f"{record.tool}({_short(record.args, 80)})"
    return f"[older output of {call} hidden: {len(record.text):,} chars]"


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


@dataclass
class _Seen:
    """What the tier remembers of one action signature of one (agent, subtask)."""

    count: int = 0
    last_result: str | None = None


Key = tuple[str, str]


class RuleTier:
    """The rule tier's state for one run: counts actions, steps and tokens per (agent, subtask).

    `counts` (rule name -> firings) and `firings` (in order) are what results and traces read.
    """

    def __init__(
        self,
        settings: RuleSettings | None = None,
        *,
        embed: Callable[[list[str]], np.ndarray] | None = None,
    ) -> None:
        self.settings = settings or RuleSettings()
        self.embed = embed
        self.counts: Counter[str] = Counter()
        self.firings: list[RuleFiring] = []
        self._seen: dict[tuple[str, str, str], _Seen] = {}
        self._steps: Counter[Key] = Counter()
        self._tokens: Counter[Key] = Counter()
        self._over_budget: set[Key] = set()
        self._masked: set[tuple[str, ToolRecord, int]] = set()

    def reset(self) -> None:
        """Forget everything (a new run)."""
        self.counts.clear()
        self.firings.clear()
        self._seen.clear()
        self._steps.clear()
        self._tokens.clear()
        self._over_budget.clear()
        self._masked.clear()

    def _fire(self, firing: RuleFiring) -> RuleFiring:
        self.counts[firing.rule] += 1
        self.firings.append(firing)
        return firing

    def before_action(self, step: Step) -> Blocked | None:
        """Call before a tool runs: the refusal when the action repeats or a budget is spent."""
        s = self.settings
        key = (step.agent, step.subtask)
        self._steps[key] += 1
        seen = self._seen.setdefault((*key, normalize_action(step)), _Seen())
        seen.count += 1
        call = f"{step.tool or step.kind}({_short(step.args or step.code, 80)})"
        if s.loop_breaker and seen.count > s.loop_limit:
            earlier = ""
            if seen.last_result is not None:
                earlier = f" It returned: {_short(seen.last_result, 160)!r}."
            note = (
                f"[overseer] Not run again: you already called {call} "
                f"{_times(seen.count - 1)} in this task and its result is in your earlier "
                f"steps.{earlier} Take a different step (other arguments, another tool, "
                f"or give your answer)."
            )
            detail = f"blocked repeat {seen.count} of {call}"
            return Blocked(note, self._fire(RuleFiring("loop_breaker", *key, detail)))
        if s.budget_steps is not None and self._steps[key] > s.budget_steps:
            return self._budget_block(key, f"step budget of {s.budget_steps} tool steps spent")
        if key in self._over_budget:
            return self._budget_block(key, f"token budget of {s.budget_tokens} tokens spent")
        return None

    def _budget_block(self, key: Key, why: str) -> Blocked:
        note = f"[overseer] Not run: your {why} for this task. Give your best answer now."
        return Blocked(note, self._fire(RuleFiring("budget", *key, why)))

    def charge(self, agent: str, subtask: str, tokens: int) -> Blocked | None:
        """Book an agent's model tokens; Blocked once its token budget is spent.

        The firing is counted the first time the budget is crossed; later calls return the
        same refusal without counting again (`before_action` counts each refused action).
        """
        key = (agent, subtask)
        self._tokens[key] += max(0, int(tokens))
        limit = self.settings.budget_tokens
        if limit is None or self._tokens[key] < limit:
            return None
        why = f"token budget of {limit} tokens spent"
        note = f"[overseer] Stop: your {why} for this task. Give your best answer now."
        if key in self._over_budget:
            return Blocked(note, RuleFiring("budget", agent, subtask, why))
        self._over_budget.add(key)
        return Blocked(note, self._fire(RuleFiring("budget", agent, subtask, why)))

    def after_observation(self, step: Step, *, local_task: str) -> tuple[str, RuleFiring | None]:
        """After a tool ran: the observation to show (purified when too long) and the firing."""
        key = (step.agent, step.subtask)
        seen = self._seen.setdefault((*key, normalize_action(step)), _Seen())
        text = step.observation
        seen.last_result = step.error or text
        s = self.settings
        if not s.purify or len(text) <= s.purify_over:
            return text, None
        query = " ".join(x for x in (local_task, step.thought, step.args) if x)
        out = extract(text, query, s.purify_keep, embed=self.embed)
        if len(out) >= len(text):
            return text, None
        detail = f"kept {len(out):,} of {len(text):,} chars of {step.tool or step.kind}"
        firing = RuleFiring("purification", *key, detail, len(text), len(out))
        return out, self._fire(firing)

    def mask(
        self, observations: Sequence[ToolRecord], *, agent: str = "", subtask: str = ""
    ) -> list[str]:
        """Texts to show for one agent's observations (oldest first): the last k whole, older stubs.

        A masking firing is counted the first time a record is stubbed, never again for it.
        """
        if not self.settings.masking:
            return [r.text for r in observations]
        cut = max(0, len(observations) - self.settings.mask_keep)
        out: list[str] = []
        occurrence: Counter[ToolRecord] = Counter()
        for i, rec in enumerate(observations):
            occurrence[rec] += 1
            if i >= cut:
                out.append(rec.text)
                continue
            stub = mask_stub(rec)
            if len(stub) >= len(rec.text):  # nothing to save
                out.append(rec.text)
                continue
            out.append(stub)
            mark = (agent, rec, occurrence[rec])
            if mark not in self._masked:
                self._masked.add(mark)
                detail = f"masked an older output of {rec.tool} ({len(rec.text):,} chars)"
                self._fire(RuleFiring("masking", agent, subtask, detail, len(rec.text), len(stub)))
        return out
