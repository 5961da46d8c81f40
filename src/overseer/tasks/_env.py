"""The task environment protocol: tasks that bring their own tools (browse, travel).

Such a task carries a factory under `meta["environment"]`; each run opens a fresh environment
from it, gives its tools to the agents, and stores `finish(answer)` (a plain answer, or a
transcript the task's scorer replays).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from overseer.tasks._types import Task


@runtime_checkable
class TaskEnvironment(Protocol):
    """A fresh environment for one run of one task."""

    tools: Mapping[str, Any]  # runtime Tools by name

    def finish(self, answer: str) -> str:
        """What is stored and scored for the team's final answer."""
        ...


def open_environment(task: Task) -> TaskEnvironment | None:
    """A fresh environment of a task that brings its own tools, else None."""
    factory = task.meta.get("environment")
    if factory is None:
        return None
    if not callable(factory):
        raise TypeError(f"task {task.id}: meta['environment'] must be a factory, got {factory!r}")
    env = factory()
    if not isinstance(env, TaskEnvironment):
        raise TypeError(f"task {task.id}: its environment lacks tools or finish()")
    return env
