"""The supervisor's context window W = (agent, global task, local task, local trace, summary),
extended with the global trace T_g for inefficiency; every part is bounded in size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from overseer.supervise.filters import Step


@dataclass(frozen=True)
class WindowBounds:
    """Size limits of the context window, so a supervisor prompt never grows without end."""

    local_steps: int = 6  # recent steps of this agent's sub-task in T_l
    global_steps: int = 12  # recent steps of all agents in T_g
    observation_chars: int = 300  # each observation is summarised to this many characters
    task_chars: int = 2000
    summary_chars: int = 1500  # the latest step's summary S (not the purified text itself)

    def __post_init__(self) -> None:
        for k, v in vars(self).items():
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"window bound {k}: expected an integer >= 1, got {v!r}")


def clip(text: str, n: int) -> str:
    """At most n characters: head and tail kept, the middle cut with a visible marker."""
    text = text.strip()
    if len(text) <= n:
        return text
    head = max(n * 2 // 3, 1)
    tail = max(n - head - 30, 0)
    cut = len(text) - head - tail
    return f"{text[:head]} [... {cut} chars cut ...] {text[-tail:] if tail else ''}".rstrip()


def describe(step: Step, obs_chars: int) -> str:
    """One line per step: what the agent did and a summary of what came back."""
    if step.kind == "message":
        did = "message to the team"
    else:
        did = f"{step.tool or step.kind}({clip(step.args, 200)})"
        if step.code:
            did += f" code: {clip(step.code, 300)}"
    out = f"{step.agent}: {did} -> {clip(step.observation, obs_chars) or '(empty)'}"
    if step.error:
        out += f" [error: {clip(step.error, 200)}]"
    return out


@dataclass(frozen=True)
class ContextWindow:
    """What the supervisor is shown about one flagged step."""

    agent: str
    global_task: str
    local_task: str
    local_trace: tuple[str, ...]
    summary: str
    global_trace: tuple[str, ...] | None = None

    def render(self) -> str:
        parts = [
            f"Global task:\n{self.global_task}",
            f"Agent under review: {self.agent}",
            f"Its sub-task: {self.local_task or '(the global task)'}",
            "Its recent steps (oldest first):\n"
            + ("\n".join(f"- {s}" for s in self.local_trace) or "- (none before this one)"),
        ]
        if self.global_trace is not None:
            parts.append(
                "Recent steps of the whole team (oldest first):\n"
                + ("\n".join(f"- {s}" for s in self.global_trace) or "- (none)")
            )
        parts.append(f"Latest step:\n{self.summary}")
        return "\n\n".join(parts)


def build_window(
    step: Step,
    local_task: str,
    global_task: str,
    sub_steps: Sequence[Step],
    all_steps: Sequence[Step],
    bounds: WindowBounds,
    *,
    extended: bool,
) -> ContextWindow:
    """W for `step` (the last of `sub_steps`); W_ext (with T_g) when `extended`."""
    earlier = list(sub_steps[:-1])[-bounds.local_steps :]
    summary = [f"thought: {clip(step.thought, 400)}"] if step.thought else []
    if step.kind == "message":
        summary.append(f"message: {clip(step.observation, bounds.summary_chars)}")
    else:
        summary.append(f"action: {step.tool}({clip(step.args, 400)})")
        if step.code:
            summary.append(f"code:\n{clip(step.code, 800)}")
        summary.append(f"observation: {clip(step.observation, bounds.summary_chars)}")
    if step.error:
        summary.append(f"error: {clip(step.error, 600)}")
    glob = None
    if extended:
        glob = tuple(
            describe(s, bounds.observation_chars) for s in all_steps[-bounds.global_steps :]
        )
    return ContextWindow(
        agent=step.agent,
        global_task=clip(global_task, bounds.task_chars),
        local_task=clip(local_task, bounds.task_chars),
        local_trace=tuple(describe(s, bounds.observation_chars) for s in earlier),
        summary="\n".join(summary),
        global_trace=glob,
    )
