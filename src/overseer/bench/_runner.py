"""Run configurations x tasks x seeds through solvers, concurrently, storing each result at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from overseer.bench._solvers import Solver, SolverConfig, SolverOutput
from overseer.bench._store import ResultKey, ResultRecord, ResultStore
from overseer.models import Model
from overseer.runtime import Budget
from overseer.runtime._ledger import budgeted
from overseer.tasks import Task, ascore


@dataclass(frozen=True)
class RunSummary:
    """What one call of `run_experiment` did: how much was already stored, ran, failed."""

    planned: int
    already_done: int
    ran: int
    errors: int
    model_loaded: bool


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


async def _solve_one(
    solver: Solver, task: Task, key: ResultKey, store: ResultStore
) -> ResultRecord:
    start = time.perf_counter()
    try:
        out = await solver(task, key.seed)
    except Exception as exc:  # recorded, not swallowed: the error text goes to the store
        out = SolverOutput("", {}, error=_error_text(exc))
    latency = time.perf_counter() - start
    parsed, correct, value, error = None, False, 0.0, out.error
    if error is None:
        try:
            sc = await ascore(task, out.answer)
            parsed, correct, value = sc.parsed, sc.correct, sc.value
        except Exception as exc:
            error = f"scoring failed: {_error_text(exc)}"
    rec = ResultRecord(
        key=key,
        answer=out.answer,
        parsed=parsed,
        correct=correct,
        score=value,
        usage_by_actor=out.usage_by_actor,
        latency_s=latency,
        error=error,
        extra=out.extra,
    )
    store.add(rec)
    return rec


async def run_experiment(
    *,
    configs: Sequence[SolverConfig],
    tasks: Sequence[Task],
    seeds: Sequence[int],
    model_name: str,
    load_model: Callable[[], Model],
    store: ResultStore,
    concurrency: int = 1,
    progress: bool = True,
    budget: Budget | None = None,
) -> RunSummary:
    """Solve every (config, task, seed) not yet stored; each result is committed as it finishes.

    The model is loaded only when something is left to do, so a finished experiment reruns
    without a single model call. Errored results are retried on the next run. `budget`
    limits each (config, task, seed) on its own: all model calls of its solver.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency: expected >= 1, got {concurrency}")
    if not seeds:
        raise ValueError("seeds: expected at least one seed")
    done = store.done_keys()
    planned = [
        (cfg, task, ResultKey(cfg.name, model_name, task.suite, task.id, seed))
        for cfg in configs
        for task in tasks
        for seed in seeds
    ]
    todo = [p for p in planned if p[2] not in done]
    if not todo:
        return RunSummary(len(planned), len(planned), 0, 0, False)
    model = load_model()
    solvers = {cfg.name: cfg.build(model) for cfg in configs}
    gate = asyncio.Semaphore(concurrency)
    errors = 0
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors: {task.fields[errors]}"),
        TimeElapsedColumn(),
        disable=not progress,
        transient=False,
    )

    async def run(cfg: SolverConfig, task: Task, key: ResultKey) -> None:
        nonlocal errors
        async with gate:
            solver = solvers[cfg.name]
            if budget is not None:
                solver = cfg.build(budgeted(model, budget, f"{cfg.name}:{task.id}:{key.seed}"))
            rec = await _solve_one(solver, task, key, store)
        errors += rec.error is not None
        bar.update(bar_id, advance=1, errors=errors)

    with bar:
        bar_id = bar.add_task(f"{model_name}", total=len(todo), errors=0)
        await asyncio.gather(*(run(*p) for p in todo))
    return RunSummary(len(planned), len(planned) - len(todo), len(todo), errors, True)
