"""The LLM-free adaptive filter: which agent steps deserve a supervisor's (costly) attention.

Checked in the seed's priority order (its Algorithm 1 plus the sub-agent report check):
sub-agent report -> result synthesis; explicit error -> error; inefficiency (a periodic check
every `tau_step` steps of a sub-task, or a loop of `tau_loop` identical actions or identical
observations) -> inefficient; an observation longer than `tau_len` characters -> excessive.
Anything else is approved without an LLM call.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from overseer.runtime.steps import InteractionKind

Context = Literal["synthesis", "error", "inefficient", "excessive"]
CONTEXTS: tuple[Context, ...] = ("synthesis", "error", "inefficient", "excessive")


@dataclass(frozen=True)
class FilterConfig:
    """Thresholds of the filter. Defaults are the seed's HumanEval/smolagents setting."""

    tau_step: int = 6  # periodic strategy check every tau_step steps of one sub-task
    tau_loop: int = 5  # that many identical actions (or observations) in a row is a loop
    tau_len: int = 3000  # observations longer than this (characters) are purified
    # A message or observation containing one of these is a sub-agent's final report.
    report_markers: tuple[str, ...] = ("<summary_of_work>", "final answer from your managed agent")
    # Agent-to-agent reports at least this long are synthesised even without a marker;
    # None turns that off (short reports are already clean and cost nothing to pass on).
    report_min_chars: int | None = 1500
    # Errors matching any of these regular expressions are left to the agent (non-critical).
    non_critical_errors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("tau_step", "tau_loop", "tau_len"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"filter {name}: expected an integer >= 1, got {v!r}")
        if self.tau_loop < 2:
            raise ValueError(
                f"filter tau_loop: expected >= 2 (a loop repeats), got {self.tau_loop}"
            )
        for pat in self.non_critical_errors:
            try:
                re.compile(pat)
            except re.error as exc:
                raise ValueError(
                    f"filter non_critical_errors: {pat!r} is not a regular expression ({exc})"
                ) from None

    def with_(self, **changes: object) -> FilterConfig:
        """A copy with some thresholds changed (validated again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


# The seed's Table 5, plus its OAgents setting (tau_len 10,000 for very verbose tools).
FILTER_PRESETS: dict[str, FilterConfig] = {
    "gaia": FilterConfig(tau_step=8, tau_loop=5, tau_len=3000),
    "humaneval": FilterConfig(tau_step=6, tau_loop=5, tau_len=3000),
    "mbpp": FilterConfig(tau_step=4, tau_loop=3, tau_len=3000),
    "aime": FilterConfig(tau_step=4, tau_loop=3, tau_len=3000),
    "drop": FilterConfig(tau_step=4, tau_loop=3, tau_len=3000),
    "gsm-hard": FilterConfig(tau_step=4, tau_loop=3, tau_len=3000),
    "oagents": FilterConfig(tau_step=6, tau_loop=3, tau_len=10000),
}


def preset(name: str) -> FilterConfig:
    """A named filter preset; unknown names list the known ones."""
    try:
        return FILTER_PRESETS[name]
    except KeyError:
        raise ValueError(
            f"filter preset {name!r} is unknown; expected one of: {', '.join(FILTER_PRESETS)}"
        ) from None


@dataclass(frozen=True)
class Step:
    """One agent step as the filter sees it, whatever framework produced it."""

    agent: str
    subtask: str  # the key of the agent's current sub-task (steps are counted per sub-task)
    kind: InteractionKind
    tool: str | None = None
    args: str = ""  # tool arguments (JSON text) or message text
    code: str = ""  # the code a code agent ran, if any
    observation: str = ""
    error: str | None = None
    thought: str = ""
    to_agent: bool = False  # a message another agent will read (a sub-agent's report)


def normalize_action(step: Step) -> str:
    """A signature of what the step did: tool name plus normalised arguments and code."""
    name, args, code = step.tool or step.kind, step.args, step.code
    if not isinstance(args, str) or len(args) + len(code) > _REMEMBERED_MAX:
        return _signature(name, args, code)
    return _remembered(name, args, code)


#: a step whose arguments and code are longer than this (characters) is signed afresh
_REMEMBERED_MAX = 2_000


def _signature(name: str, args: str, code: str) -> str:
    """`normalize_action` of a step with these fields."""
    try:
        args = json.dumps(json.loads(args), sort_keys=True, separators=(",", ":"))
    except (json.JSONDecodeError, TypeError):
        args = " ".join(args.split())
    code = "\n".join(ln.rstrip() for ln in code.strip().splitlines() if ln.strip())
    return f"{name}|{args.lower()}|{code}"


# the same, remembered for short steps: the rule tier asks it several times for each step,
# and JSON's parse and dump were a tenth of the loop breaker's cost per output (issue 50)
_remembered = functools.lru_cache(maxsize=4096)(_signature)


@dataclass(frozen=True)
class Trigger:
    """Why the filter flagged a step, in which context."""

    context: Context
    reason: str


@dataclass
class StepHistory:
    """Steps per (agent, sub-task), in order; what the filter and the context window read."""

    steps: dict[tuple[str, str], list[Step]] = field(default_factory=dict)
    order: list[Step] = field(default_factory=list)

    def add(self, step: Step) -> list[Step]:
        """Record a step; returns that sub-task's steps, this one included."""
        seq = self.steps.setdefault((step.agent, step.subtask), [])
        seq.append(step)
        self.order.append(step)
        return seq

    def of(self, agent: str, subtask: str) -> list[Step]:
        return self.steps.get((agent, subtask), [])


def _is_report(step: Step, cfg: FilterConfig) -> bool:
    text = step.observation.lower()
    if any(m.lower() in text for m in cfg.report_markers):
        return True
    return (
        step.kind == "message"
        and step.to_agent
        and cfg.report_min_chars is not None
        and len(step.observation) >= cfg.report_min_chars
    )


def _loop(actions: Sequence[Step], window: int) -> str | None:
    recent = actions[-window:]
    if len(recent) < window:
        return None
    if len({normalize_action(s) for s in recent}) == 1:
        return f"the last {window} actions are identical ({recent[-1].tool or recent[-1].kind})"
    obs = {s.observation for s in recent}
    if len(obs) == 1 and recent[-1].observation.strip():
        return f"the last {window} observations are identical"
    return None


def classify(sub_steps: Sequence[Step], cfg: FilterConfig) -> Trigger | None:
    """The filter: the context of the last step of `sub_steps` (one sub-task), or None."""
    if not sub_steps:
        raise ValueError("classify: expected at least the current step")
    step = sub_steps[-1]
    if _is_report(step, cfg):
        return Trigger("synthesis", "a sub-agent's final report")
    if step.error:
        if any(re.search(p, step.error) for p in cfg.non_critical_errors):
            pass  # known, non-critical: the agent handles it
        else:
            return Trigger("error", f"error: {step.error[:200]}")
    actions = [s for s in sub_steps if s.kind != "message"]
    if step.kind != "message":
        n = len(actions)
        if n >= cfg.tau_loop:
            why = _loop(actions, cfg.tau_loop)
            if why:
                return Trigger("inefficient", f"loop: {why}")
        if n > 0 and n % cfg.tau_step == 0:
            return Trigger("inefficient", f"periodic check at step {n} of the sub-task")
    if len(step.observation) > cfg.tau_len:
        return Trigger("excessive", f"observation of {len(step.observation)} chars > {cfg.tau_len}")
    return None
