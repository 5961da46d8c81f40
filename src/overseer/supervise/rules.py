"""The rule tier of the SupervisorAgent (issue 18): cheap, LLM-free rules that act first.

Five rules, each with its own switch in `RuleSettings` and its own count:
- `loop_breaker`: an identical action (tool + normalised arguments, or the same code) of one
  agent in one sub-task runs at most `loop_limit` times, and a tool whose last
  `progress_limit` calls returned the same output with changing arguments (a progress-free
  loop, such as a pager that always answers "not here") is not run again; the refusal says
  what is true (where the earlier output is, or what it was);
- `masking`: an output repeated later is hidden at once (the later copy stays); other tool
  observations older than an agent's last `mask_keep` become one-line stubs, except a
  purified extract (the only copy of what purification kept for the task);
- `purification`: an HTML observation is read as its text (`strip_markup`), a page still
  longer than `page_over` chars or any observation longer than `purify_over` is cut
  extractively (`extract`: verbatim passages most relevant to the task, one closing note);
- `budget`: tokens and tool steps per (agent, sub-task);
- `grounding`: an answer that is the agent's guess from before it read anything, which no
  observation it was shown holds, is given the value its notes since reading took from a
  page (`_grounding`: the one pattern it acts on).
Framework-neutral: the runtime plug-in and every framework adapter call the same methods.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from overseer.runtime.steps import ToolRecord
from overseer.supervise._extract import extract
from overseer.supervise._grounding import Reading, regrounded, swap_number
from overseer.supervise._markup import strip_markup
from overseer.supervise.filters import Step, normalize_action

RuleName = Literal["loop_breaker", "masking", "purification", "budget", "grounding"]
RULES: tuple[RuleName, ...] = ("loop_breaker", "masking", "purification", "budget", "grounding")

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


#: the least each integer setting of `RuleSettings` may be
_NUMBER = re.compile(r"\d[\d.,]*")
_LEAST = {
    "loop_limit": 1,
    "progress_limit": 2,
    "mask_keep": 0,
    "purify_over": 1,
    "page_over": 1,
    "page_keep": 1,
}


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


def _short(text: str, n: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 3] + "..."


def mask_stub(record: ToolRecord, *, repeated: bool = False) -> str:
    """The one line that stands for an older tool output: what tool, with what arguments (a
    hidden note of overseer's own is called that, never the tool's output). No number of its
    own: a 0.5B model answered "1,540" from a stub's character count (issue 41's examples)."""
    call = f"{record.tool}({_short(record.args, 80)})"
    if record.text.startswith(NOTE_MARK):
        return f"[overseer's earlier note on {call} hidden]"
    if repeated:
        return f"[output of {call} hidden here: the same text comes later]"
    return f"[older output of {call} hidden]"


#: how every note overseer writes into an agent's context begins
NOTE_MARK = "[overseer"


def _times(n: int) -> str:
    """How often, in words: a note holds no number of overseer's own (a small model copied
    "your last 2 calls" as the answer "2": issue 48)."""
    return {1: "once", 2: "twice"}.get(n, "several times")


#: how a refusal that leaves the agent to answer ends: free to say it could not find it
#: (issue 48: "give your best answer now" made small agents invent a value)
OR_SAY = "If what you have read does not hold the answer, say that you could not find it."


def _spent(why: str) -> str:
    """A budget's reason without its figures ("token budget of 900 tokens spent" -> "token
    budget is spent"): the trace keeps the figures, the note holds no number."""
    return why.split(" of ", 1)[0] + " is spent" if " of " in why else why


@dataclass
class _Seen:
    """What the tier remembers of one action signature of one (agent, subtask)."""

    ran: int = 0  # times it was let run
    refused: int = 0
    shown: str | None = None  # what the agent was shown of its last output (after purification)
    failed: bool = False


@dataclass
class _ToolRun:
    """The latest outputs of one tool for one (agent, subtask): how many in a row were the same."""

    last: str = ""
    same: int = 0  # consecutive calls (any arguments) that returned `last`
    args: set[str] = field(default_factory=set)  # the signatures of those calls


def _action_of(record: ToolRecord) -> str:
    """The signature `normalize_action` gives the step that produced `record` (a record holds
    what the agent was shown, which a host may have worded apart from the rule tier's text)."""
    step = Step(agent="", subtask="", kind="tool", tool=record.tool, args=record.args)
    return normalize_action(step)


def _same_output(a: str, b: str) -> bool:
    """Equal after whitespace is collapsed, or (for long outputs) nearly equal: at least 97%
    of their word trigrams shared (linear in the length, so a 50,000-char page costs little)."""
    wa, wb = a.split(), b.split()
    if wa == wb:
        return True
    if min(len(a), len(b)) < 200 or abs(len(a) - len(b)) > 0.05 * max(len(a), len(b)):
        return False
    ga = {tuple(wa[i : i + 3]) for i in range(len(wa) - 2)}
    gb = {tuple(wb[i : i + 3]) for i in range(len(wb) - 2)}
    return len(ga & gb) >= 0.97 * max(len(ga), len(gb), 1)


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
        self._runs: dict[tuple[str, str, str], _ToolRun] = {}
        self._purified: set[str] = set()  # outputs purification produced (kept by masking)
        self._pinned: dict[str, set[str]] = {}  # agent -> refused actions whose output stays
        self._reading: dict[Key, Reading] = {}  # what each agent wrote and read, as numbers

    def reset(self) -> None:
        """Forget everything (a new run)."""
        self.counts.clear()
        self.firings.clear()
        self._seen.clear()
        self._steps.clear()
        self._tokens.clear()
        self._over_budget.clear()
        self._masked.clear()
        self._runs.clear()
        self._purified.clear()
        self._pinned.clear()
        self._reading.clear()

    def _fire(self, firing: RuleFiring) -> RuleFiring:
        self.counts[firing.rule] += 1
        self.firings.append(firing)
        return firing

    def before_action(self, step: Step) -> Blocked | None:
        """Call before a tool runs: the refusal when the action repeats, makes no progress, or
        a budget is spent (each refused attempt counts as a firing)."""
        s = self.settings
        key = (step.agent, step.subtask)
        self._steps[key] += 1
        self._reading.setdefault(key, Reading()).thought(step.thought)
        seen = self._seen.setdefault((*key, normalize_action(step)), _Seen())
        call = f"{step.tool or step.kind}({_short(step.args or step.code, 80)})"
        if s.loop_breaker and seen.ran >= s.loop_limit:
            seen.refused += 1
            detail = f"blocked repeat {seen.ran + seen.refused} of {call}"
            note = self._repeat_note(call, seen, step.agent, normalize_action(step))
            return Blocked(note, self._fire(RuleFiring("loop_breaker", *key, detail)))
        if s.budget_steps is not None and self._steps[key] > s.budget_steps:
            return self._budget_block(key, f"step budget of {s.budget_steps} tool steps spent")
        if key in self._over_budget:
            return self._budget_block(key, f"token budget of {s.budget_tokens} tokens spent")
        run = self._runs.get((*key, step.tool or step.kind))
        if (
            s.loop_breaker
            and run is not None
            and run.same >= s.progress_limit
            and len(run.args) > 1
        ):
            detail = f"blocked {call}: {run.same} calls of it in a row returned the same output"
            note = (
                f"[overseer] Not run: your recent calls of {step.tool or step.kind} "
                f"returned the same output whatever the arguments (it is shown above), so "
                f"another call makes no progress. Take a different step (another tool), or "
                f"answer from what you have read. {OR_SAY}"
            )
            return Blocked(note, self._fire(RuleFiring("loop_breaker", *key, detail)))
        seen.ran += 1
        return None

    def _repeat_note(self, call: str, seen: _Seen, agent: str, action: str) -> str:
        """The refusal of an identical call, true about where its output is. It never quotes
        the output: on fresh browse pages the 0.5B researcher copied the filler numbers at
        the end of a quoted extract as its answer (issue 39). The earlier output is kept in
        view instead (`mask` leaves a refused action's latest output whole)."""
        ran = f"{call} ran {_times(seen.ran)} in this task with these arguments"
        again = " (refused before)" if seen.refused > 1 else ""
        if seen.failed:
            return (
                f"[overseer] Not run again: {ran} and failed{again}; it would fail the same "
                f"way. Take a different step (other arguments, another tool) or answer. {OR_SAY}"
            )
        if seen.shown is None:
            return f"[overseer] Not run again: {ran}{again}. Take a different step or answer."
        self._pinned.setdefault(agent, set()).add(action)
        return (
            f"[overseer] Not run again: {ran}{again}. Its output is unchanged and shown above, "
            f"as the observation of that call. Read it there, or take a different step."
        )

    def _budget_block(self, key: Key, why: str) -> Blocked:
        note = f"[overseer] Not run: your {_spent(why)} for this task. Answer now. {OR_SAY}"
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
        note = f"[overseer] Stop: your {_spent(why)} for this task. Answer now. {OR_SAY}"
        if key in self._over_budget:
            return Blocked(note, RuleFiring("budget", agent, subtask, why))
        self._over_budget.add(key)
        return Blocked(note, self._fire(RuleFiring("budget", agent, subtask, why)))

    def after_observation(self, step: Step, *, local_task: str) -> tuple[str, RuleFiring | None]:
        """After a tool ran: the observation to show (purified when too long) and the firing."""
        key = (step.agent, step.subtask)
        seen = self._seen.setdefault((*key, normalize_action(step)), _Seen())
        text = step.observation
        out, firing = self._purify(step, text, local_task)
        self._reading.setdefault(key, Reading()).observed(step.error or out)
        seen.shown, seen.failed = (step.error or out), step.error is not None
        run = self._runs.setdefault((*key, step.tool or step.kind), _ToolRun())
        result = step.error or text
        if not (run.same and _same_output(run.last, result)):
            run.same, run.args = 0, set()
        run.same, run.last = run.same + 1, result
        run.args.add(normalize_action(step))
        return out, firing

    def ground(self, step: Step) -> tuple[str, RuleFiring] | None:
        """An agent's answer (a message step) that is its guess from before it read anything,
        which nothing it read supports: the answer with the value its latest thought since
        reading took from an observation, and the firing; None when the answer stands."""
        key = (step.agent, step.subtask)
        reading = self._reading.get(key)
        if not self.settings.grounding or step.kind != "message" or reading is None:
            return None
        found = regrounded(step.observation, reading)
        if found is None:
            return None
        guess, read = found
        detail = f"answer {guess} was its guess before reading; its notes since named {read}"
        return swap_number(step.observation, guess, read), self._fire(
            RuleFiring("grounding", *key, detail)
        )

    def _purify(self, step: Step, text: str, local_task: str) -> tuple[str, RuleFiring | None]:
        """Markup stripped, then an extract when still too long; (text, None) when untouched."""
        s = self.settings
        if not s.purify:
            return text, None
        page = strip_markup(text) if s.strip_markup else None
        base, over, keep = (text, s.purify_over, s.purify_keep)
        if page is not None:
            base, over, keep = page, s.page_over, s.page_keep
        # the agent's own guesses (numbers in its thought) must not choose what it is shown
        query = " ".join(x for x in (local_task, _NUMBER.sub(" ", step.thought), step.args) if x)
        out = base
        if len(base) > over:
            out = extract(base, query, keep, embed=self.embed)
        elif page is not None:  # a short page: only its text that shares nothing with the task
            out = extract(base, query, len(base), embed=self.embed, prune=True)
        if len(out) >= len(text):
            return text, None
        how = "stripped the markup, " if page else ""
        detail = f"{how}kept {len(out):,} of {len(text):,} chars of {step.tool or step.kind}"
        key = (step.agent, step.subtask)
        self._purified.add(out)
        return out, self._fire(RuleFiring("purification", *key, detail, len(text), len(out)))

    def _pinned_outputs(self, observations: Sequence[ToolRecord], agent: str) -> set[int]:
        """Indices of the latest real output of each action a refusal of `agent` pointed to."""
        pinned = self._pinned.get(agent)
        if not pinned:
            return set()
        last: dict[str, int] = {}
        for i, r in enumerate(observations):
            if not r.text.startswith(NOTE_MARK) and (a := _action_of(r)) in pinned:
                last[a] = i
        return set(last.values())

    def _is_extract(self, text: str) -> bool:
        """Whether `text` is a purified extract, as the host showed it (the bus may have
        written its note after it): masking keeps those, the only copy of what was kept."""
        return text in self._purified or any(text.startswith(p) for p in self._purified)

    def mask(
        self, observations: Sequence[ToolRecord], *, agent: str = "", subtask: str = ""
    ) -> list[str]:
        """Texts to show for one agent's observations (oldest first).

        An output repeated later is stubbed at any age (the later copy holds it); of the rest,
        the last `mask_keep` stay whole and older ones become stubs, except purified extracts
        and the latest output of an action a refusal pointed to (it stays where it said).
        A masking firing is counted the first time a record is stubbed, never again for it.
        """
        if not self.settings.masking:
            return [r.text for r in observations]
        cut = max(0, len(observations) - self.settings.mask_keep)
        kept = self._pinned_outputs(observations, agent)
        later: Counter[str] = Counter(r.text for r in observations)
        out: list[str] = []
        occurrence: Counter[ToolRecord] = Counter()
        for i, rec in enumerate(observations):
            occurrence[rec] += 1
            later[rec.text] -= 1
            repeat = later[rec.text] > 0
            old = i < cut and not self._is_extract(rec.text) and i not in kept
            stub = mask_stub(rec, repeated=repeat)
            if not (repeat or old) or len(stub) >= len(rec.text):  # keep, or nothing to save
                out.append(rec.text)
                continue
            out.append(stub)
            mark = (agent, rec, occurrence[rec])
            if mark not in self._masked:
                self._masked.add(mark)
                what = "a repeated" if repeat else "an older"
                detail = f"masked {what} output of {rec.tool} ({len(rec.text):,} chars)"
                self._fire(RuleFiring("masking", agent, subtask, detail, len(rec.text), len(stub)))
        return out
