"""Deterministic train/validation/test splits by seed, and suite loading by name."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal

from overseer.tasks._browse_calibrated import load_browse
from overseer.tasks._loaders import LOADERS
from overseer.tasks._types import Task

Split = Literal["train", "validation", "test", "all"]
SUITE_NAMES: tuple[str, ...] = tuple(LOADERS)
DEFAULT_FRACTIONS = (0.2, 0.1, 0.7)


#: suites generated from a corpus seed: `NAME@SEED` loads the corpus of that seed (the
#: held-out protocol, docs/evidence/heldout.md: development and held-out corpora by seed)
CORPUS_SUITES: dict[str, Callable[..., list[Task]]] = {"browse": load_browse}


class UnknownSuiteError(ValueError):
    """A suite name that does not exist; the message lists the valid names."""


def _loader(name: str) -> Callable[[], list[Task]]:
    """The loader of suite `name`: a known suite, or `NAME@SEED` for a corpus seed."""
    base, at, seed = name.partition("@")
    if at and base in CORPUS_SUITES:
        if not seed.isdigit():
            raise UnknownSuiteError(
                f"suite {name!r}: expected {base}@SEED with SEED a non-negative integer"
            )
        return partial(CORPUS_SUITES[base], seed=int(seed), suite=name)
    if name not in LOADERS:
        seeded = ", ".join(f"{k}@SEED" for k in CORPUS_SUITES)
        raise UnknownSuiteError(
            f"unknown suite {name!r}; expected one of: {', '.join(SUITE_NAMES)}, {seeded}"
        )
    return LOADERS[name]


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


def load_suite(
    name: str, *, split: Split = "test", seed: int = 0, limit: int | None = None
) -> list[Task]:
    """The tasks of a suite's split, in the loader's order, the first `limit` of them
    (`NAME@SEED`: the corpus of that seed, for suites in CORPUS_SUITES)."""
    load = _loader(name)
    if split not in ("train", "validation", "test", "all"):
        raise ValueError(f"split: expected train|validation|test|all, got {split!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit: expected >= 1, got {limit}")
    tasks = load()
    chosen = tasks if split == "all" else split_tasks(tasks, seed=seed)[split]
    return chosen[:limit] if limit is not None else chosen
