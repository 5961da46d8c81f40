"""The one typed form every imported trajectory takes: agents, steps, question, outcome, label."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["failed", "succeeded", "unknown"]


class TraceFormatError(ValueError):
    """A file or record is not in any trajectory format overseer reads (the message names it)."""


@dataclass(frozen=True)
class ToolCall:
    """A tool call an agent asked for in a step: the tool's name and its arguments (JSON text)."""

    name: str
    arguments: str = ""


@dataclass(frozen=True)
class TraceStep:
    """One step of a trajectory: who spoke, what they sent, what came back.

    `index` is the step's position in the source log (Who&When's `mistake_step` counts the
    same way). `to` is the addressee when the log names one. `observation` is the text of a
    tool or sub-agent result returned in the same step (overseer traces); `is_observation`
    marks a step whose whole content is such a result (a terminal's output, a web page read).
    """

    index: int
    agent: str
    role: str
    content: str
    to: str | None = None
    observation: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    error: str | None = None
    is_observation: bool = False

    @property
    def text(self) -> str:
        """What a reader of the log sees of this step: content, then the observation."""
        if self.observation and self.content:
            return f"{self.content}\n{self.observation}"
        return self.content or self.observation


@dataclass(frozen=True)
class Annotation:
    """The annotated cause of a failure: the responsible agent, the decisive step, why."""

    agent: str
    step: int
    reason: str = ""


@dataclass(frozen=True)
class Trajectory:
    """One run of a multi-agent system, whatever produced it.

    `source` says which importer read it (whowhen-hand, whowhen-alg, openai-chat, overseer);
    `system_prompts` maps an agent to its system prompt where the log gives one.
    """

    id: str
    source: str
    question: str
    steps: tuple[TraceStep, ...]
    system_prompts: Mapping[str, str] = field(default_factory=dict)
    ground_truth: str | None = None
    answer: str | None = None
    outcome: Outcome = "unknown"
    annotation: Annotation | None = None

    @property
    def agents(self) -> tuple[str, ...]:
        """The agents that speak in the log, in order of first appearance."""
        seen: dict[str, None] = {}
        for s in self.steps:
            seen.setdefault(s.agent, None)
        return tuple(seen)

    def __post_init__(self) -> None:
        for i, s in enumerate(self.steps):
            if s.index != i:
                raise TraceFormatError(
                    f"trajectory {self.id}: step {i} has index {s.index}; expected {i}"
                )
        a = self.annotation
        if a is not None and not 0 <= a.step < max(1, len(self.steps)):
            raise TraceFormatError(
                f"trajectory {self.id}: annotated step {a.step} is outside 0..{len(self.steps) - 1}"
            )
