"""`overseer bench` and `overseer report`."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from overseer.cli import _io
from overseer.cli import _options as o
from overseer.cli._app import InputError, app, csv_list
from overseer.cli._backend_options import LOCAL, BackendOpts, backend_options
from overseer.cli._bench_report import DEFAULT_STORE
from overseer.cli._bench_run import BenchJob, run_and_report
from overseer.cli._hints import MODEL_HELP, model_name
from overseer.cli._lab import need_lab
from overseer.cli._supervisor_model import SupervisorModelOpt, with_supervisor_model

if TYPE_CHECKING:
    from overseer.bench import ConfigRegistry

CONFIGS_HELP = (
    "Comma-separated configurations. Each is a team source, then '+'-separated bus plug-ins "
    "in order: SOURCE[+supervise:MODE][+monitor:FILE][+watcher]. Sources: direct, a preset "
    "(complete, chain, debate, ...), baseline/supervised (workload teams), masfly, or "
    "pruned:SPEC (a team written by `overseer prune`). MODE: a supervise mode (llm; a wrong "
    "one lists them). A name is split at '+' only before a known source or plug-in name, so "
    "a mode like rules+llm or a file may hold '+'. Dropping a term is its ablation, e.g. "
    "complete,complete+supervise:llm+monitor:m.json."
)


def _seeds(text: str) -> list[int]:
    try:
        return [int(s) for s in csv_list(text, "--seeds")]
    except ValueError:
        raise InputError(f"--seeds: expected integers like 0,1,2, got {text!r}") from None


PromptCache = Annotated[
    bool,
    typer.Option(
        help="llama.cpp prefix cache; off: equal prompts give equal outputs across configs "
        "(slower; use its own --store)."
    ),
]


@app.command("bench")
@o.model_options
@o.budget_options
@backend_options
def bench_cmd(
    suite: Annotated[str, typer.Option(help="Task suite, e.g. gsm8k-sample, mmlu-sample.")],
    configs: Annotated[str, typer.Option(help=CONFIGS_HELP)] = "direct",
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    split: Annotated[str, typer.Option(help="train, validation, test or all.")] = "test",
    limit: Annotated[int | None, typer.Option(help="First N tasks of the split.")] = None,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "0",
    baseline: Annotated[str | None, typer.Option(help="Config tokens are compared to.")] = None,
    store: Annotated[Path, typer.Option(help="SQLite result store.")] = DEFAULT_STORE,
    concurrency: Annotated[int, typer.Option(help="Tasks solved at once.")] = 1,
    agents: Annotated[int, typer.Option(help="Agents per team (team configs).")] = 3,
    rounds: Annotated[int, typer.Option(help="Rounds per team run (team configs).")] = 2,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    prompt_cache: PromptCache = True,
    supervisor_model: SupervisorModelOpt = None,
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
    runner: BackendOpts = LOCAL,
    allow_errors: _io.AllowErrors = False,
    json_out: _io.JsonOut = False,
) -> None:
    """Run configurations on a suite, store every result, print the comparison table.
    Budgets apply to each (configuration, task, seed) on its own."""
    need_lab("overseer bench")
    _check_sizes(split, limit, concurrency, agents, rounds)
    model = model_name(model)
    names, seed_list = _names(configs, baseline), _seeds(seeds)
    _check_model(model, mopts, store)
    registry = _registry(suite, (agents, rounds), supervisor_model, mopts, prompt_cache)
    chosen, tasks = _resolve(registry, names, suite, split, seed_list[0], limit)
    loader = partial(mopts.load, model, prompt_cache=prompt_cache)
    backend = runner.build(registry, loader)  # Ray workers build the same registry and model
    job = BenchJob(
        suite,
        chosen,
        tasks,
        seed_list,
        model,
        loader,
        limits.budget(),
        backend,
        store,
        concurrency,
        progress,
        names,
        baseline,
        json_out,
        allow_errors,
    )
    run_and_report(job)


def _names(configs: str, baseline: str | None) -> list[str]:
    """The configuration names of --configs; --baseline must be one of them."""
    names = csv_list(configs, "--configs")
    if baseline is not None and baseline not in names:
        raise InputError(f"--baseline: {baseline!r} is not among --configs {names}")
    return names


def _check_model(model: str, mopts: o.ModelOpts, store: Path) -> None:
    """An unknown local model name, or (for a new store) a server that is not there, fails
    here, before any work: a failing backend leaves no empty store behind."""
    from overseer.models import model_card

    if not model.startswith("openai:"):
        model_card(model)
    if not store.exists():
        mopts.check(model)


def _registry(
    suite: str,
    size: tuple[int, int],
    supervisor_model: str | None,
    mopts: o.ModelOpts,
    prompt_cache: bool,
) -> Callable[[], ConfigRegistry]:
    """The registry factory: the one registry, for this suite and team size (agents, rounds);
    Ray workers call it too."""
    from overseer.experiments.registry import bench_configs

    make = partial(bench_configs, agents=size[0], rounds=size[1], suite=suite)
    load = partial(mopts.load, prompt_cache=prompt_cache)
    return with_supervisor_model(make, supervisor_model, load)


def _check_sizes(split: str, limit: int | None, concurrency: int, agents: int, rounds: int) -> None:
    if split not in ("train", "validation", "test", "all"):
        raise InputError(f"--split: expected train|validation|test|all, got {split!r}")
    if limit is not None and limit < 1:
        raise InputError(f"--limit: expected >= 1, got {limit}")
    if concurrency < 1:
        raise InputError(f"--concurrency: expected >= 1, got {concurrency}")
    if not 1 <= agents <= 32 or not 1 <= rounds <= 10:
        raise InputError(f"--agents/--rounds: expected 1..32 and 1..10, got {agents}, {rounds}")


def _resolve(registry, names, suite, split, seed, limit) -> tuple[list, list]:
    """The configurations named (from the explicit registry) and the tasks of the split."""
    from overseer.tasks import load_suite

    try:
        chosen = registry().resolve(names)
        tasks = load_suite(suite, split=split, seed=seed, limit=limit)
    except (ValueError, RuntimeError) as exc:
        raise InputError(str(exc)) from None
    return chosen, tasks
