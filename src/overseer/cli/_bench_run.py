"""The run half of `overseer bench`: the experiment, its exit code (errors, Ctrl-C) and output."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from overseer.cli import _io
from overseer.cli._app import CommandFailed, Interrupted, out_console
from overseer.cli._bench_report import _print_summary, _rows

if TYPE_CHECKING:  # the CLI imports the packages that do the work when a command runs
    from overseer.models import Model
    from overseer.runtime import Budget


@dataclass(frozen=True)
class BenchJob:
    """What `overseer bench` was asked to do, checked and resolved."""

    suite: str
    configs: list[Any]
    tasks: list[Any]
    seeds: list[int]
    model: str
    loader: Callable[[], Model]
    budget: Budget | None
    backend: Any  # "asyncio" or a bench Backend (Ray)
    store: Path
    concurrency: int
    progress: bool
    names: list[str]
    baseline: str | None
    json_out: bool
    allow_errors: bool


def _experiment(job: BenchJob, rs: Any) -> Any:
    """Run the experiment; Ctrl-C becomes Interrupted with this experiment's stored count."""
    import asyncio  # here, not at the top: `overseer --help` does not need it

    from overseer.bench import run_experiment

    try:
        return asyncio.run(
            run_experiment(
                configs=job.configs,
                tasks=job.tasks,
                seeds=job.seeds,
                model_name=job.model,
                load_model=job.loader,
                store=rs,
                concurrency=job.concurrency,
                progress=job.progress,
                budget=job.budget,
                backend=job.backend,
            )
        )
    except KeyboardInterrupt:
        kept = [k for k in rs.done_keys() if (k.model, k.suite) == (job.model, job.suite)]
        raise Interrupted(sum(k.config in job.names for k in kept)) from None


def run_and_report(job: BenchJob) -> None:
    """Run, then print the table (or one JSON document); errored results exit 1."""
    from overseer.bench import ResultStore
    from overseer.experiments.registry import suite_report

    console = out_console()
    where: dict[str, Any] = {"suite": job.suite, "model": job.model, "configs": job.names}
    with ResultStore(job.store) as rs:
        summary = _experiment(job, rs)
        if job.json_out:
            doc = _rows(rs, **where, baseline=job.baseline)
            _io.emit_json({**asdict(summary), "store": str(job.store), **doc})
        else:
            elsewhere = summary.taken_elsewhere
            console.print(
                f"{summary.planned} planned: {summary.already_done} already done, "
                f"{summary.ran} ran, {summary.errors} errors"
                + (f", {elsewhere} run by another bench on this store" if elsewhere else "")
                + f"; store {job.store}"
            )
            _print_summary(console, rs, **where, baseline=job.baseline)
            report = suite_report(job.suite)
            if report is not None:
                report(console, rs.records(**where), job.names)
    if summary.errors and not job.allow_errors:
        raise CommandFailed(
            f"{summary.errors} of {summary.ran} results ended in error; store {job.store} "
            "(--allow-errors: exit 0)"
        )
