"""Offline replay of the SupervisorAgent's LLM-free rule tier over an imported trajectory.

The log is replayed step by step through the same `RuleTier` a live run uses: every step that
is not an observation is an action (its addressee as the tool, its text as the arguments, so a
verbatim repeat is a repeated action); every observation step goes through purification and
into the masking window. Per step we count the tokens that would be sent as context (the
speaker's system prompt plus the history so far) as logged and with masking + purification,
with a real tokenizer. The rules' first firing is placed before / at / after the annotated
mistake step. Masking is applied over all observations of the shared history (a Who&When log
is one conversation every agent reads).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from overseer.supervise.filters import Step
from overseer.supervise.rules import RuleSettings, RuleTier, ToolRecord
from overseer.traces._tokens import ModelTokenizer as ModelTokenizer  # re-exported
from overseer.traces._tokens import TokenCounter
from overseer.traces._types import TraceStep, Trajectory

Position = Literal["before", "at", "after", "none", "unlabelled"]
ACTING_RULES = ("loop_breaker", "purification", "budget")  # rules that act on the step itself
SUBTASK = "task"


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


@dataclass(frozen=True)
class StepReplay:
    """One step replayed: its tokens, the context it would be sent, the rules that fired."""

    index: int
    agent: str
    tokens: int
    context_logged: int
    context_rules: int
    repeat: bool
    firings: tuple[str, ...] = ()


@dataclass(frozen=True)
class LogReplay:
    """The replay of one trajectory: counts, token totals and the first firing's position."""

    id: str
    source: str
    n_steps: int
    repeats: int  # steps whose (agent, text) appeared verbatim earlier in the log
    loop_blocks: int  # actions the loop breaker would have refused
    observation_tokens: int
    observation_tokens_rules: int  # after purification (masking only shortens later context)
    context_logged: int  # sum over steps of the context each step is sent, as logged
    context_rules: int  # the same with masking + purification
    firings: dict[str, int]
    first_firing: int | None  # first step where an acting rule fired
    first_repeat: int | None
    mistake_step: int | None
    steps: tuple[StepReplay, ...] = field(repr=False, default=())

    @property
    def position(self) -> Position:
        """Where the first firing falls relative to the annotated mistake step."""
        return _where(self.first_firing, self.mistake_step)

    @property
    def repeat_position(self) -> Position:
        """Where the first verbatim repeat falls relative to the annotated mistake step."""
        return _where(self.first_repeat, self.mistake_step)


def _where(step: int | None, mistake: int | None) -> Position:
    if mistake is None:
        return "unlabelled"
    if step is None:
        return "none"
    return "before" if step < mistake else "at" if step == mistake else "after"


class _Replayer:
    """The mutable state of one replay (kept out of `replay` to keep functions short)."""

    def __init__(self, traj: Trajectory, settings: RuleSettings, tok: TokenCounter) -> None:
        self.traj, self.tok = traj, tok
        self.tier = RuleTier(settings)
        self.records: list[ToolRecord] = []
        self.seen: Counter[tuple[str, str]] = Counter()
        self.shown_actions = 0  # tokens of all non-observation steps so far
        self.logged = 0  # tokens of all steps so far, as logged
        self.obs_raw = 0
        self.obs_rules = 0

    def _context_rules(self, agent: str) -> int:
        texts = self.tier.mask(self.records, agent="*", subtask=SUBTASK)
        return self.shown_actions + sum(self.tok.count(t) for t in texts)

    def step(self, s: TraceStep) -> StepReplay:
        before = len(self.tier.firings)
        system = self.tok.count(self.traj.system_prompts.get(s.agent, ""))
        ctx_logged = system + self.logged
        ctx_rules = system + self._context_rules(s.agent)
        key = (s.agent, _norm(s.text))
        repeat = self.seen[key] > 0 and bool(key[1])
        self.seen[key] += 1
        n = self.tok.count(s.text)
        self.logged += n
        if s.is_observation:
            self._observe(s, n)
        else:
            self._act(s, n)
        fired = tuple(f.rule for f in self.tier.firings[before:])
        return StepReplay(s.index, s.agent, n, ctx_logged, ctx_rules, repeat, fired)

    def _act(self, s: TraceStep, n: int) -> None:
        tool = s.tool_calls[0].name if s.tool_calls else (s.to or "message")
        args = s.tool_calls[0].arguments if s.tool_calls else s.content
        step = Step(agent=s.agent, subtask=SUBTASK, kind="tool", tool=tool, args=args)
        self.tier.before_action(step)
        self.tier.charge(s.agent, SUBTASK, n)
        self.shown_actions += n
        if s.observation:  # an overseer step carries its own result
            self._observe(s, self.tok.count(s.observation), text=s.observation)

    def _observe(self, s: TraceStep, n: int, *, text: str | None = None) -> None:
        text = s.text if text is None else text
        prev = self.traj.steps[s.index - 1].content if s.index > 0 else ""
        step = Step(
            agent=s.agent,
            subtask=SUBTASK,
            kind="tool",
            tool=s.agent,
            args=prev[:200],
            observation=text,
        )
        shown, _ = self.tier.after_observation(step, local_task=self.traj.question)
        self.records.append(ToolRecord(s.agent, prev[:200], shown))
        self.obs_raw += n
        self.obs_rules += self.tok.count(shown)


def replay(
    traj: Trajectory, tokenizer: TokenCounter, settings: RuleSettings | None = None
) -> LogReplay:
    """Replay the rule tier over `traj` and count what it finds and what it would save."""
    r = _Replayer(traj, settings or RuleSettings(), tokenizer)
    steps = tuple(r.step(s) for s in traj.steps)
    firings: Counter[str] = Counter(str(f.rule) for f in r.tier.firings)
    acting = [s.index for s in steps if any(f in ACTING_RULES for f in s.firings)]
    repeats = [s.index for s in steps if s.repeat]
    return LogReplay(
        id=traj.id,
        source=traj.source,
        n_steps=len(steps),
        repeats=len(repeats),
        loop_blocks=firings.get("loop_breaker", 0),
        observation_tokens=r.obs_raw,
        observation_tokens_rules=r.obs_rules,
        context_logged=sum(s.context_logged for s in steps),
        context_rules=sum(s.context_rules for s in steps),
        firings=dict(firings),
        first_firing=acting[0] if acting else None,
        first_repeat=repeats[0] if repeats else None,
        mistake_step=traj.annotation.step if traj.annotation else None,
        steps=steps,
    )


@dataclass(frozen=True)
class ReplayTotals:
    """Totals over many replays (what the page's table shows per split)."""

    logs: int
    logs_with_repeats: int
    repeats: int
    loop_blocks: int
    observation_tokens: int
    observation_tokens_rules: int
    context_logged: int
    context_rules: int
    firings: dict[str, int]
    positions: dict[str, int]  # first acting firing vs mistake step
    repeat_positions: dict[str, int]  # first verbatim repeat vs mistake step


def totals(replays: Sequence[LogReplay]) -> ReplayTotals:
    """Sum the replays of several logs."""
    fire: Counter[str] = Counter()
    for r in replays:
        fire.update(r.firings)
    return ReplayTotals(
        logs=len(replays),
        logs_with_repeats=sum(1 for r in replays if r.repeats),
        repeats=sum(r.repeats for r in replays),
        loop_blocks=sum(r.loop_blocks for r in replays),
        observation_tokens=sum(r.observation_tokens for r in replays),
        observation_tokens_rules=sum(r.observation_tokens_rules for r in replays),
        context_logged=sum(r.context_logged for r in replays),
        context_rules=sum(r.context_rules for r in replays),
        firings=dict(fire),
        positions=dict(Counter(r.position for r in replays)),
        repeat_positions=dict(Counter(r.repeat_position for r in replays)),
    )
