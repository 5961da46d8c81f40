"""Suite loading by name, with the deterministic splits of `_splitting`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from overseer.tasks._browse_calibrated import load_browse
from overseer.tasks._loaders import LOADERS
from overseer.tasks._splitting import DEFAULT_FRACTIONS, Split, pick_split, split_tasks
from overseer.tasks._types import Task

__all__ = [
    "CORPUS_SUITES",
    "DEFAULT_FRACTIONS",
    "SUITE_NAMES",
    "Split",
    "UnknownSuiteError",
    "load_suite",
    "split_tasks",
]
SUITE_NAMES: tuple[str, ...] = tuple(LOADERS)


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


def load_suite(
    name: str, *, split: Split = "test", seed: int = 0, limit: int | None = None
) -> list[Task]:
    """The tasks of a suite's split, in the loader's order, the first `limit` of them
    (`NAME@SEED`: the corpus of that seed, for suites in CORPUS_SUITES)."""
    return pick_split(_loader(name), split=split, seed=seed, limit=limit)
