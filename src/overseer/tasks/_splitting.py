"""Deterministic train/validation/test splits by seed: a leaf of `overseer.tasks` (it imports
no loader), so a task source such as `travel` can split its own tasks without importing the
suite registry that imports it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Literal

from overseer.tasks._types import Task

Split = Literal["train", "validation", "test", "all"]
DEFAULT_FRACTIONS = (0.2, 0.1, 0.7)


def _rank(seed: int, task_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{task_id}".encode()).hexdigest()


def split_tasks(
    tasks: Sequence[Task], *, seed: int, fractions: tuple[float, float, float] = DEFAULT_FRACTIONS
) -> dict[str, list[Task]]:
    """Train/validation/test by a seeded hash of each task id: no overlap, covers all,
    independent of input order. Each part keeps the input order of its tasks."""
    if len(fractions) != 3 or any(f < 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(
            f"fractions: expected three non-negative numbers summing to 1, got {fractions}"
        )
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("tasks: ids must be unique to split them")
    ranked = sorted(ids, key=lambda i: _rank(seed, i))
    n_train = round(fractions[0] * len(ids))
    n_val = round(fractions[1] * len(ids))
    part = {i: "train" for i in ranked[:n_train]}
    part |= {i: "validation" for i in ranked[n_train : n_train + n_val]}
    part |= {i: "test" for i in ranked[n_train + n_val :]}
    out: dict[str, list[Task]] = {"train": [], "validation": [], "test": []}
    for t in tasks:
        out[part[t.id]].append(t)
    return out


def pick_split(
    load: Callable[[], list[Task]], *, split: str, seed: int, limit: int | None
) -> list[Task]:
    """The tasks `load` gives, in its order, of the seeded `split` ("all": every one), the
    first `limit` of them; a bad split or limit is a ValueError naming it, before loading."""
    if split not in ("train", "validation", "test", "all"):
        raise ValueError(f"split: expected train|validation|test|all, got {split!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit: expected >= 1, got {limit}")
    tasks = load()
    chosen = tasks if split == "all" else split_tasks(tasks, seed=seed)[split]
    return chosen[:limit] if limit is not None else chosen
