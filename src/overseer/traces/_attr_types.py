"""What every attribution method returns, and the protocol methods implement."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal, Protocol

from overseer.traces._types import Trajectory

# How a method's answer came about. "ok": read in one piece; "chunked": the log was judged in
# window-sized chunks; "clipped": some step texts were shortened (with a visible note saying
# how much); "windowed": early steps were replaced by a one-line summary; "none_flagged": no
# call named a step, the method's fallback was used; "unparsed": no valid reply after re-asks;
# "over_window": the prompt did not fit even after chunking/clipping (typed stop, no answer).
Outcome = Literal[
    "ok", "chunked", "clipped", "windowed", "none_flagged", "fallback", "unparsed", "over_window"
]


@dataclass(frozen=True)
class Attribution:
    """The responsible agent, the decisive step and a one-line reason (None when no answer).

    `notes` counts what the method had to do to the log (chunks, clipped steps, ...);
    `prompt_tokens` / `completion_tokens` / `calls` are the model cost (0 for LLM-free ones).
    """

    log_id: str
    method: str
    agent: str | None
    step: int | None
    reason: str
    outcome: Outcome = "ok"
    notes: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0

    def agent_correct(self, traj: Trajectory) -> bool:
        """Whether the agent matches the annotation (exact name)."""
        a = traj.annotation
        return a is not None and self.agent is not None and self.agent == a.agent

    def step_correct(self, traj: Trajectory) -> bool:
        """Whether the step matches the annotated decisive step exactly."""
        a = traj.annotation
        return a is not None and self.step is not None and self.step == a.step


class Method(Protocol):
    """An attribution method: `attribute(traj, ground_truth=...)` for one failed run.

    `fit(train)` is called first by evaluators with the training logs (methods that learn
    nothing ignore it). `uses_model` says whether it spends model tokens.
    """

    name: str
    uses_model: bool

    def fit(self, train: list[Trajectory]) -> None: ...

    async def attribute(self, traj: Trajectory, *, with_truth: bool) -> Attribution: ...


def mistake_agent_counts(train: list[Trajectory]) -> Counter[str]:
    """How often each agent name is the annotated mistake agent in `train`."""
    return Counter(t.annotation.agent for t in train if t.annotation is not None)
