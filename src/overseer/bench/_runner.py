"""Run configurations x tasks x seeds through solvers, concurrently, storing each result at once."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Literal, Protocol, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from overseer.bench._claims import Claims, run_claimed
from overseer.bench._provenance import code_commit, stamp
from overseer.bench._solvers import Solver, SolverConfig, SolverOutput
from overseer.bench._store import ResultKey, ResultRecord, ResultStore
from overseer.models import Model
from overseer.runtime import Budget
from overseer.runtime.books import budgeted
from overseer.tasks import Task, ascore


@dataclass(frozen=True)
class RunSummary:
    """What one call of `run_experiment` did: how much was already stored, ran, failed."""

    planned: int
    already_done: int
    ran: int
    errors: int
    model_loaded: bool
    taken_elsewhere: int = 0  # claimed by another bench on the same store


class _Reporter:
    """Progress on stderr: a live bar on a terminal; otherwise "started, 0 of N" and a plain
    line per finished episode, so a log shows the run going from its start."""

    def __init__(
        self,
        label: str,
        total: int,
        *,
        on: bool,
        stream: TextIO | None = None,
        every_s: float = 30.0,
    ) -> None:
        self.stream = stream or sys.stderr
        self.label, self.total, self.every_s = label, total, every_s
        self.on, self.done, self.errors = on, 0, 0
        self.live = on and self.stream.isatty()
        self.last = time.monotonic()
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors: {task.fields[errors]}"),
            TimeElapsedColumn(),
            console=Console(file=self.stream),
            disable=not self.live,
            transient=False,
        )
        self.bar_id = self.bar.add_task(label, total=total, errors=0)

    def line(self, text: str) -> None:
        if self.on:
            self.stream.write(text + "\n")
            self.stream.flush()

    def advance(self, error: bool) -> None:
        self.done += 1
        self.errors += error
        self.bar.update(self.bar_id, advance=1, errors=self.errors)
        if not self.live:  # off a terminal: a line per finished episode
            self.line(f"{self.label}: {self.done}/{self.total} done, {self.errors} errors")


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


async def solve_episode(solver: Solver, task: Task, key: ResultKey) -> ResultRecord:
    """One episode -> its record (solver and scoring errors recorded); the caller stores it."""
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
    return rec


def budgeted_solver(
    cfg: SolverConfig,
    model: Model,
    budget: Budget | None,
    key: ResultKey,
    solvers: Mapping[str, Solver],
) -> Solver:
    """The configuration's solver, or with a budget one built on a model whose ledger holds
    this (config, task, seed) alone."""
    if budget is None:
        return solvers[cfg.name]
    return cfg.build(budgeted(model, budget, f"{cfg.name}:{key.task_id}:{key.seed}"))


#: Solves one (config, task, key) episode somewhere and returns its record.
EpisodeFn = Callable[[SolverConfig, Task, ResultKey], Awaitable[ResultRecord]]


class Backend(Protocol):
    """Where episodes run (e.g. `overseer.bench._ray.RayBackend`): `open` gives, for one run,
    the function solving an episode; the runner stays the only writer of the store."""

    def open(
        self,
        configs: Sequence[SolverConfig],
        load_model: Callable[[], Model],
        concurrency: int,
        budget: Budget | None,
    ) -> AbstractAsyncContextManager[EpisodeFn]: ...


@asynccontextmanager
async def asyncio_episodes(
    configs: Sequence[SolverConfig],
    load_model: Callable[[], Model],
    concurrency: int,
    budget: Budget | None,
) -> AsyncIterator[EpisodeFn]:
    """The asyncio backend: one model in this process, `concurrency` episodes at once."""
    model = load_model()
    solvers = {cfg.name: cfg.build(model) for cfg in configs}
    gate = asyncio.Semaphore(concurrency)

    async def episode(cfg: SolverConfig, task: Task, key: ResultKey) -> ResultRecord:
        async with gate:
            return await solve_episode(budgeted_solver(cfg, model, budget, key, solvers), task, key)

    yield episode


def _check_run(concurrency: int, seeds: Sequence[int], backend: object) -> None:
    if concurrency < 1:
        raise ValueError(f"concurrency: expected >= 1, got {concurrency}")
    if not seeds:
        raise ValueError("seeds: expected at least one seed")
    if isinstance(backend, str) and backend != "asyncio":
        raise ValueError(f"backend: expected 'asyncio' or a Backend, got {backend!r}")


def _plan(
    configs: Sequence[SolverConfig], tasks: Sequence[Task], seeds: Sequence[int], model_name: str
) -> list[tuple[SolverConfig, Task, ResultKey]]:
    """Every (config, task, seed) of an experiment, with its result key."""
    return [
        (cfg, task, ResultKey(cfg.name, model_name, task.suite, task.id, seed))
        for cfg in configs
        for task in tasks
        for seed in seeds
    ]


class _Stamper:
    """Loads the model in this process when asked, and stamps each record that has no
    provenance yet with this process's (the stamp reads threads and cache from the model)."""

    def __init__(self, model_name: str, load_model: Callable[[], Model]) -> None:
        self.model_name, self._load = model_name, load_model
        self.loaded: list[Model] = []
        self._stamps: dict[int, dict[str, str]] = {}
        #: read now, when this process's code is loaded: commits made while a long run goes
        #: on are not the code its results came from
        self.commit = code_commit()

    def load(self) -> Model:
        self.loaded.append(self._load())
        return self.loaded[-1]

    def stamped(self, rec: ResultRecord) -> ResultRecord:
        if rec.provenance:
            return rec
        model = self.loaded[0] if self.loaded else None
        prov = self._stamps.get(id(model)) or stamp(self.model_name, model, commit=self.commit)
        self._stamps[id(model)] = prov
        return dataclasses.replace(rec, provenance=prov)


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
    backend: Backend | Literal["asyncio"] = "asyncio",
) -> RunSummary:
    """Solve every (config, task, seed) not yet stored; each result is committed as it finishes.

    The model is loaded only when something is left to do, so a finished experiment reruns
    without a single model call. Errored results are retried on the next run. `budget`
    limits each (config, task, seed) on its own: all model calls of its solver. `backend` says
    where episodes run (asyncio in this process, or e.g. a `RayBackend`). Each record is
    stamped with its provenance (commit, versions, model file, threads, prompt cache).
    """
    _check_run(concurrency, seeds, backend)
    planned, done = _plan(configs, tasks, seeds, model_name), store.done_keys()
    todo = [p for p in planned if p[2] not in done]
    report = _Reporter(model_name, len(todo), on=progress)
    if len(todo) < len(planned):
        report.line(f"resuming: {len(planned) - len(todo)} of {len(planned)} already done")
    if not todo:
        return RunSummary(len(planned), len(planned), 0, 0, False)
    opener = asyncio_episodes if isinstance(backend, str) else backend.open
    stamper = _Stamper(model_name, load_model)

    async def run(cfg: SolverConfig, task: Task, key: ResultKey) -> None:
        rec = stamper.stamped(await episode(cfg, task, key))
        store.add(rec)
        report.advance(rec.error is not None)

    with report.bar:
        use = stamper.load if isinstance(backend, str) else load_model  # Ray: workers load theirs
        async with opener(configs, use, concurrency, budget) as episode:
            if not report.live:
                report.line(f"{model_name}: started, 0 of {len(todo)}")
            claims = Claims(store.path)  # a second bench on this store takes the rest
            try:
                slots = concurrency * getattr(backend, "workers", 1)
                ran = await run_claimed(todo, run, slots, claims)
            finally:
                claims.close()
    done_before = len(planned) - len(todo)
    return RunSummary(len(planned), done_before, ran, report.errors, True, len(todo) - ran)
