"""Attribute a set of logs with several methods: what `overseer attribute` runs.

Annotated logs (Who&When) are an evaluation: methods that learn are cross-validated by log
(seeded k folds) within the logs given; LLM judges run on a seeded subset (`sample`) to bound
model time, log by log so calls on one log share llama.cpp's prompt cache. Logs without an
annotation are attributed by methods trained on all of Who&When.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from overseer.models import Model
from overseer.traces._attr_types import Method
from overseer.traces._baselines import (
    FirstRepeatBaseline,
    LastAgentBaseline,
    MostFrequentBaseline,
    RandomBaseline,
)
from overseer.traces._data import load_whowhen
from overseer.traces._types import Trajectory
from overseer.traces.evaluate import ResultStore, Row, cv_train, run_method
from overseer.traces.judges import JUDGES
from overseer.traces.learned import LearnedScorer

FREE_METHODS = ("random", "most-frequent", "first-repeat", "last-agent", "learned", "learned-boost")
METHODS = (*FREE_METHODS, *JUDGES)


def make_method(
    name: str, model: Model | None, *, seed: int = 0, window: int | None = None
) -> Method:
    """A method by name; the judges need `model`."""
    if name in JUDGES:
        if model is None:
            raise ValueError(f"method {name}: an LLM judge needs --model")
        return JUDGES[name](model, window=window)
    free: dict[str, Callable[[], Method]] = {
        "random": lambda: RandomBaseline(seed),
        "most-frequent": MostFrequentBaseline,
        "first-repeat": FirstRepeatBaseline,
        "last-agent": LastAgentBaseline,
        "learned": lambda: LearnedScorer("logreg", seed=seed),
        "learned-boost": lambda: LearnedScorer("boost", seed=seed),
    }
    if name not in free:
        raise ValueError(f"method {name!r}: expected one of {', '.join(METHODS)} or all")
    return free[name]()


def sample(logs: Sequence[Trajectory], n: int | None, seed: int) -> list[Trajectory]:
    """A seeded subset of `n` logs in their original order (all when n is None or larger)."""
    if n is None or n >= len(logs):
        return list(logs)
    keep = set(random.Random(seed).sample(range(len(logs)), n))
    return [t for i, t in enumerate(logs) if i in keep]


def _training(
    logs: Sequence[Trajectory], folds: int, seed: int
) -> Callable[[Trajectory], list[Trajectory]]:
    """Cross-validation folds when there are enough annotated logs (2 per fold); otherwise all
    of Who&When, less any log that asks the same question (a copy of a Who&When log)."""
    if len(logs) >= 2 * folds and all(t.annotation is not None for t in logs):
        return cv_train(logs, folds, seed)
    everything = load_whowhen("all")
    asked = {t.question for t in logs}
    rest = [t for t in everything if t.question not in asked]
    return lambda t: rest


def run(
    logs: Sequence[Trajectory],
    methods: Sequence[str],
    *,
    split: str,
    model: Model | None = None,
    truths: Sequence[bool] = (False,),
    seed: int = 0,
    folds: int = 5,
    judge_sample: int | None = None,
    window: int | None = None,
    store: ResultStore | None = None,
    on_row: Callable[[Row], None] | None = None,
) -> list[Row]:
    """Attribute `logs` with each method in each truth setting (see the module docstring)."""
    learn = _training(logs, folds, seed)
    model_name = model.name if model is not None else "-"
    rows: list[Row] = []
    kw = dict(split=split, seed=seed, store=store, on_row=on_row)
    for name in (m for m in methods if m not in JUDGES):
        for wt in truths:
            m = make_method(name, None, seed=seed)
            rows += run_method(m, logs, with_truth=wt, train=learn, **kw)  # type: ignore[arg-type]
    judges = [make_method(m, model, seed=seed, window=window) for m in methods if m in JUDGES]
    for t in sample(logs, judge_sample, seed) if judges else []:
        for j in judges:
            for wt in truths:
                rows += run_method(j, [t], model=model_name, with_truth=wt, **kw)  # type: ignore[arg-type]
    return rows
