"""`overseer prune`: learn edge masks on training tasks, prune once, compare full vs pruned."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from overseer.cli import _options as o
from overseer.cli._app import CommandFailed, InputError, Interrupted, app, out_console
from overseer.cli._backend_options import LOCAL, BackendOpts, backend_options
from overseer.cli._hints import MODEL_HELP, model_name
from overseer.cli._io import AllowErrors
from overseer.cli._lab import need_lab
from overseer.cli._names import ATTACKS
from overseer.cli._prune_options import (
    DEFAULT_TEAM,
    DEFAULT_TRAINING,
    TeamOpts,
    TrainOpts,
    check,
    team_options,
    train_options,
)
from overseer.cli._prune_out import announce, print_spec, print_tables

if TYPE_CHECKING:
    from overseer.experiments.prune import PruneJob
    from overseer.experiments.prune_runs import RunSettings
    from overseer.tasks import Task

Attack = Annotated[str, typer.Option(help=f"Attack on one agent: {', '.join(ATTACKS)}.")]
Out = Annotated[Path, typer.Option(help="Where the pruned TeamSpec is written.")]
Store = Annotated[Path, typer.Option(help="SQLite result store (resumable).")]


@dataclass(frozen=True)
class _Plan:
    """One `overseer prune` invocation, checked: the job, where things go, how it runs."""

    job: PruneJob
    test_tasks: list[Task]
    rs: RunSettings
    out: Path
    store: Path
    retrain: bool
    progress: bool
    allow_errors: bool = False


@app.command("prune")
@team_options
@train_options
@o.model_options
@o.budget_options
@backend_options
def prune_cmd(
    suite: Annotated[str, typer.Option(help="Task suite: mmlu-sample, gsm8k-sample, humaneval.")],
    train: Annotated[int, typer.Option(help="Training queries Q' (train split).")] = 10,
    test: Annotated[int, typer.Option(help="Held-out test queries (test split).")] = 10,
    attack: Attack = "none",
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    max_tokens: Annotated[int, typer.Option(help="Max tokens per model call.")] = 256,
    seed: Annotated[int, typer.Option(help="Seed: split, sampling, attack target.")] = 0,
    out: Out = Path("results/pruned.json"),
    store: Store = Path("results/prune.sqlite"),
    retrain: Annotated[bool, typer.Option(help="Train again even if --out matches.")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    allow_errors: AllowErrors = False,
    shape: TeamOpts = DEFAULT_TEAM,
    learn: TrainOpts = DEFAULT_TRAINING,
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
    runner: BackendOpts = LOCAL,
) -> None:
    """Train AgentPrune masks, prune once, evaluate full vs pruned (budgets: per team run)."""
    need_lab("overseer prune")
    from overseer.experiments.prune import PruneJob
    from overseer.experiments.prune_runs import RunSettings

    _check_run(train, test, attack, max_tokens)
    cfg = learn.config(seed)
    train_tasks, test_tasks = _tasks(suite, train, test, seed)
    base = shape.build(train_tasks[0].kind, seed)
    name = model_name(model)
    job = PruneJob(
        base, suite, train_tasks, learn.ratio, cfg, name, max_tokens, attack, learn.candidates
    )
    rs = RunSettings(max_tokens=max_tokens, seed=seed, budget=limits.budget())
    plan = _Plan(job, test_tasks, rs, out, store, retrain, progress, allow_errors)
    try:
        _run(plan, mopts, runner)
    except KeyboardInterrupt:
        raise Interrupted(note=f"finished evaluation runs are kept in {store}") from None


def _check_run(train: int, test: int, attack: str, max_tokens: int) -> None:
    check(train >= 1 and test >= 1, f"--train/--test: expected >= 1, got {train}, {test}")
    check(attack in ATTACKS, f"--attack: expected one of {', '.join(ATTACKS)}, got {attack!r}")
    check(max_tokens >= 16, f"--max-tokens: expected >= 16, got {max_tokens}")


def _tasks(suite: str, train: int, test: int, seed: int) -> tuple[list[Task], list[Task]]:
    """The first `train` training and `test` test tasks of the suite (InputError if bad)."""
    from overseer.tasks import load_suite

    try:
        train_tasks = load_suite(suite, split="train", seed=seed, limit=train)
        test_tasks = load_suite(suite, split="test", seed=seed, limit=test)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return train_tasks, test_tasks


def _run(plan: _Plan, mopts: o.ModelOpts, runner: BackendOpts) -> None:
    """Train (or reuse) the pruned spec, evaluate full vs pruned, print the tables."""
    import asyncio

    from overseer.cli._io import train_step as step
    from overseer.experiments.prune import evaluate_pruned, train_or_load

    job, rs, model = plan.job, plan.rs, plan.job.model
    get_model = cache(partial(mopts.load, model))  # loaded once, only if something runs here
    console = out_console()
    pruned, training, reused = asyncio.run(
        train_or_load(
            job,
            plan.out,
            get_model,
            rs,
            retrain=plan.retrain,
            on_train=partial(announce, console, job),
            on_step=step,
        )
    )
    print_spec(console, plan.out, job.base, pruned, reused)
    summary, recs = asyncio.run(
        evaluate_pruned(
            job.base,
            pruned,
            plan.test_tasks,
            attack=job.attack,
            rs=rs,
            model_name=model,
            load_model=get_model,
            store=plan.store,
            progress=plan.progress,
            backend_for=partial(runner.build, model=partial(mopts.load, model)),
        )
    )
    console.print(
        f"{summary.planned} planned: {summary.already_done} already done, "
        f"{summary.ran} ran, {summary.errors} errors; store {plan.store}"
    )
    print_tables(console, job, pruned, recs, training)
    if get_model.cache_info().currsize:
        get_model().close()
    if summary.errors and not plan.allow_errors:
        raise CommandFailed(
            f"{summary.errors} of {summary.ran} evaluation runs ended in error; store "
            f"{plan.store} (--allow-errors: exit 0)"
        )
