"""Distillation campaigns: the training tasks of a suite distilled one by one into the
repository and the experience pool (what `overseer adapt init|distill` runs)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from overseer.adapt.distill import Distiller, DistillRecord, Evaluate
from overseer.adapt.embed import TextEmbedder
from overseer.adapt.experience import ExperiencePool
from overseer.adapt.masfly import MASFly, MASFlyConfig
from overseer.adapt.repository import Repository
from overseer.bench.solvers import team_query
from overseer.experiments.adapt import open_stores, task_tools
from overseer.models import Model
from overseer.tasks import Score, Task, ascore, load_suite, score, split_tasks

DEFAULT_TRACE_DIR = Path("runs") / "adapt"


def campaign_stores(
    path: str | Path, embedder: TextEmbedder, *, starter: bool
) -> tuple[Repository, ExperiencePool]:
    """The repository and pool of a campaign; with `starter`, an empty repository first gets
    the starter cases."""
    if starter:
        return open_stores(path, embedder)
    return Repository(path, embedder), ExperiencePool(path, embedder)


def _score_finished(task: Task, answer: str, *, finish: Callable[[str], str]) -> Score:
    """The score of what the task's environment stores from the answer."""
    return score(task, finish(answer))


def training_ids(tasks: Iterable[Task], *, seed: int) -> frozenset[str]:
    """Ids of the training split of a suite's tasks (the runner's seeded hash split)."""
    return frozenset(t.id for t in split_tasks(list(tasks), seed=seed)["train"])


def training_tasks(suite: str, *, seed: int, limit: int) -> tuple[list[Task], frozenset[str]]:
    """The first `limit` training tasks of a suite and the ids of its whole training split
    (what the Distiller may store); a bad suite raises ValueError or RuntimeError."""
    every = load_suite(suite, split="all", seed=seed)
    train = training_ids(every, seed=seed)
    return load_suite(suite, split="train", seed=seed)[:limit], train


async def distill_tasks(
    model: Model,
    repo: Repository,
    pool: ExperiencePool,
    tasks: list[Task],
    train_ids: frozenset[str],
    *,
    seed: int = 0,
    tries: int = 2,
    trace_dir: Path = DEFAULT_TRACE_DIR,
    on_record: Callable[[Task, DistillRecord], None] | None = None,
    config: MASFlyConfig | None = None,
) -> list[DistillRecord]:
    """Distil each task in turn (SOPs of successes, lessons of failures); tasks that bring
    their own environment get its tools and are scored on what it stores. `config`: MASFly's
    knobs (e.g. the budget of each run)."""
    fly = MASFly(model, repo, pool, config=config, trace_dir=trace_dir)
    d = Distiller(fly, train_ids=train_ids, max_tries=tries)
    out = []
    for t in tasks:
        tools, finish = task_tools(t)
        evaluate: Evaluate[Task] = ascore
        if "environment" in t.meta:
            evaluate = partial(_score_finished, finish=finish)
        rec = await d.distill(t, team_query(t), tools=tools, evaluate=evaluate, seed=seed)
        out.append(rec)
        if on_record is not None:
            on_record(t, rec)
    return out
