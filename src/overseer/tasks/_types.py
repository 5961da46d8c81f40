"""Task and score records shared by every suite, scorer and solver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

TaskKind = Literal["mc", "numeric", "code", "text"]


@dataclass(frozen=True)
class Task:
    """One benchmark item: what a solver sees (`prompt`) and what its answer is scored against.

    `id` is stable across releases of the loader, so result stores can resume by it.
    """

    suite: str
    id: str
    prompt: str
    answer: str
    kind: TaskKind
    choices: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Score:
    """The verdict of a scorer on one answer; `parsed` is what was extracted from it."""

    correct: bool
    value: float
    parsed: str | None
    detail: str = ""
