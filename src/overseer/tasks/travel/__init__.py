"""The planning benchmark: AgentDojo's travel suite (20 user tasks, 28 tools) as overseer tasks.

TravelPlanner is not obtainable offline; this is the closest packaged stand-in (hotels,
restaurants, car rentals, flights, calendar, e-mail), scored by the suite's own utility checks.
Data and checks come from `inspect-evals==0.26.0` (MIT, AgentDojo MIT); nothing is copied.
"""

from __future__ import annotations

from functools import partial

from overseer.tasks._splitting import pick_split
from overseer.tasks._types import Task
from overseer.tasks.travel._shim import TravelDataError, load_travel_suite
from overseer.tasks.travel.env import (
    TravelSession,
    gold_transcript,
    parse_transcript,
    replay,
    score_travel,
)

N_TASKS = 20
N_TOOLS = 28


def _score(task: Task, output: str):
    return score_travel(int(task.meta["travel_task"]), output)


def load_travel_all() -> list[Task]:
    """Every travel user task, checked against the expected counts (the suite's loader)."""
    suite = load_travel_suite()
    if len(suite.user_tasks) != N_TASKS or len(suite.tools) != N_TOOLS:
        raise TravelDataError(
            f"travel suite: expected {N_TASKS} user tasks and {N_TOOLS} tools, found "
            f"{len(suite.user_tasks)} and {len(suite.tools)}"
        )
    tasks = [
        Task(
            suite="travel",
            id=f"travel/user_task_{n}",
            prompt=ut.PROMPT,
            answer=ut.GROUND_TRUTH_OUTPUT,
            kind="text",
            meta={
                "travel_task": n,
                "scorer": _score,
                "environment": partial(TravelSession, n),
            },
        )
        for n, ut in sorted(suite.user_tasks.items())
    ]
    return tasks


def load_travel(split: str = "test", *, seed: int = 0, limit: int | None = None) -> list[Task]:
    """The travel user tasks of a seeded split (same as `load_suite("travel", ...)`)."""
    return pick_split(load_travel_all, split=split, seed=seed, limit=limit)


__all__ = [
    "N_TASKS",
    "N_TOOLS",
    "TravelDataError",
    "TravelSession",
    "gold_transcript",
    "load_travel",
    "load_travel_all",
    "parse_transcript",
    "replay",
    "score_travel",
]
