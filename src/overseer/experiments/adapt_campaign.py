"""Distillation campaigns: the training tasks of a suite distilled one by one into the
repository and the experience pool (what `overseer adapt init|distill` runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from overseer.adapt.distill import Distiller, DistillRecord, training_ids
from overseer.adapt.embed import TextEmbedder
from overseer.adapt.experience import ExperiencePool
from overseer.adapt.masfly import MASFly, MASFlyConfig
from overseer.adapt.repository import Repository
from overseer.bench._solvers import team_query
from overseer.experiments.adapt import open_stores, task_tools
from overseer.models import Model
from overseer.tasks import Task, load_suite, score

DEFAULT_TRACE_DIR = Path("runs") / "adapt"


def campaign_stores(
    path: str | Path, embedder: TextEmbedder, *, starter: bool
) -> tuple[Repository, ExperiencePool]:
    """The repository and pool of a campaign; with `starter`, an empty repository first gets
    the starter cases."""
    if starter:
        return open_stores(path, embedder)
    return Repository(path, embedder), ExperiencePool(path, embedder)


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
        evaluate = None
        if "environment" in t.meta:
            evaluate = lambda task, ans, f=finish: score(task, f(ans))  # noqa: E731
        rec = await d.distill(t, team_query(t), tools=tools, evaluate=evaluate, seed=seed)
        out.append(rec)
        if on_record is not None:
            on_record(t, rec)
    return out
