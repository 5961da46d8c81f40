"""What the five rules share: their settings, a firing and a refusal, the book a run keeps of
them, and the wording of overseer's notes (no number of overseer's own in any of them)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from overseer.runtime.steps import ToolRecord
from overseer.supervise.filters import Step, normalize_action

RuleName = Literal["loop_breaker", "masking", "purification", "budget", "grounding"]
RULES: tuple[RuleName, ...] = ("loop_breaker", "masking", "purification", "budget", "grounding")
Key = tuple[str, str]  # (agent, subtask)

#: the least each integer setting of `RuleSettings` may be
_LEAST = {
    "loop_limit": 1,
    "progress_limit": 2,
    "mask_keep": 0,
    "purify_over": 1,
    "page_over": 1,
    "page_keep": 1,
}
#: a number in an agent's thought: its own guess, which must not choose what it is shown
NUMBER = re.compile(r"\d[\d.,]*")


@dataclass(frozen=True)
class RuleSettings:
    """Switches and thresholds of the rule tier (each rule can be turned off)."""

    loop_breaker: bool = True
    loop_limit: int = 3  # an identical action runs at most this often per (agent, subtask)
    # (3, not 2: older copies of an unchanged output are masked, so the third costs a stub
    # and its output is the latest the agent reads; set on browse@29, issue 39)
    progress_limit: int = 2  # a tool whose last k calls (changing arguments) gave one output
    # is refused: a pager answering "not here" is a trap by its second call; at 3, qwen 0.5B
    # in pydantic-ai answered the third trap page with an empty message (never fired on browse)
    masking: bool = True
    mask_keep: int = 2  # the agent's last k tool observations stay whole; older -> stub
    purify: bool = True
    purify_over: int = 3000  # observations longer than this (chars) are cut extractively
    purify_keep: int = 1500  # about how many chars the extract keeps
    strip_markup: bool = True  # an HTML observation is read as its text (part of purification)
    page_over: int = 1000  # a stripped page longer than this (chars) is cut extractively ...
    page_keep: int = 600  # ... to about this many chars (set on browse's train split)
    budget_tokens: int | None = None  # per (agent, subtask); None = no budget
    budget_steps: int | None = None  # tool steps per (agent, subtask)
    grounding: bool = True  # an answer that is the agent's guess from before it read is
    # replaced by the value its notes since reading took from a page (`_grounding`)

    def __post_init__(self) -> None:
        for name, low in _LEAST.items():
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
            "grounding": self.grounding,
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


@dataclass
class Book:
    """The firings of one run's rules: counts by rule, and each firing in order."""

    counts: Counter[str] = field(default_factory=Counter)
    firings: list[RuleFiring] = field(default_factory=list)

    def fire(self, firing: RuleFiring) -> RuleFiring:
        self.counts[firing.rule] += 1
        self.firings.append(firing)
        return firing

    def clear(self) -> None:
        self.counts.clear()
        self.firings.clear()


#: how every note overseer writes into an agent's context begins
NOTE_MARK = "[overseer"
#: how a refusal that leaves the agent to answer ends: free to say it could not find it
#: (issue 48: "give your best answer now" made small agents invent a value)
OR_SAY = "If what you have read does not hold the answer, say that you could not find it."
#: the visible note of a purified observation (the bus writes it after the extract)
PURIFIED = "purified extractively (rules): the passages most relevant to the task"
#: the part of a refusal that says the earlier output stays in view (masking keeps it)
SHOWN_ABOVE = "Its output is unchanged and shown above"


def short(text: str, n: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 3] + "..."


def mask_stub(record: ToolRecord, *, repeated: bool = False) -> str:
    """The one line that stands for an older tool output: what tool, with what arguments (a
    hidden note of overseer's own is called that, never the tool's output). No number of its
    own: a 0.5B model answered "1,540" from a stub's character count (issue 41's examples)."""
    call = f"{record.tool}({short(record.args, 80)})"
    if record.text.startswith(NOTE_MARK):
        return f"[overseer's earlier note on {call} hidden]"
    if repeated:
        return f"[output of {call} hidden here: the same text comes later]"
    return f"[older output of {call} hidden]"


def times(n: int) -> str:
    """How often, in words: a note holds no number of overseer's own (a small model copied
    "your last 2 calls" as the answer "2": issue 48)."""
    return {1: "once", 2: "twice"}.get(n, "several times")


def spent(why: str) -> str:
    """A budget's reason without its figures ("token budget of 900 tokens spent" -> "token
    budget is spent"): the trace keeps the figures, the note holds no number."""
    return why.split(" of ", 1)[0] + " is spent" if " of " in why else why


def action_of(record: ToolRecord) -> str:
    """The signature `normalize_action` gives the step that produced `record` (a record holds
    what the agent was shown, which a host may have worded apart from the rule tier's text)."""
    step = Step(agent="", subtask="", kind="tool", tool=record.tool, args=record.args)
    return normalize_action(step)


def call_of(step: Step) -> str:
    """A step's call as a note names it: `tool(args)`, the arguments cut short."""
    return f"{step.tool or step.kind}({short(step.args or step.code, 80)})"
