"""`overseer prune`: learn edge masks on training tasks, prune once, compare full vs pruned."""

from __future__ import annotations

import asyncio
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.table import Table

from overseer.cli import _options as o
from overseer.cli._app import InputError, app, out_console
from overseer.cli._backend_options import LOCAL, BackendOpts, backend_options

if TYPE_CHECKING:
    from overseer.experiments.prune import PruneJob
    from overseer.prune.masks import Candidates

TEAMS = ("chain", "star", "tree", "complete", "layered", "random", "agentprune-c",
         "agentprune-l", "agentprune-r")  # fmt: skip


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise InputError(msg)


def _check_options(team, agents, rounds, temporal, train, test, ratio, attack, candidates,
                   max_tokens) -> None:  # fmt: skip
    from overseer.prune import ATTACKS

    _check(team in TEAMS, f"--team: expected one of {', '.join(TEAMS)}, got {team!r}")
    _check(1 <= agents <= 16, f"--agents: expected 1..16, got {agents}")
    _check(1 <= rounds <= 10, f"--rounds: expected 1..10, got {rounds}")
    _check(
        temporal in ("all", "self", "none"), f"--temporal: expected all|self|none, got {temporal!r}"
    )
    _check(train >= 1 and test >= 1, f"--train/--test: expected >= 1, got {train}, {test}")
    _check(0.0 <= ratio <= 1.0, f"--ratio: expected 0 <= p <= 1, got {ratio}")
    _check(attack in ATTACKS, f"--attack: expected one of {', '.join(ATTACKS)}, got {attack!r}")
    _check(
        candidates in ("existing", "all"),
        f"--candidates: expected existing|all, got {candidates!r}",
    )
    _check(max_tokens >= 16, f"--max-tokens: expected >= 16, got {max_tokens}")


@app.command("prune")
@o.model_options
@o.budget_options
@backend_options
def prune_cmd(
    suite: Annotated[str, typer.Option(help="Task suite: mmlu-sample, gsm8k-sample, humaneval.")],
    team: Annotated[str, typer.Option(help=f"Team: {', '.join(TEAMS)}.")] = "complete",
    agents: Annotated[int, typer.Option(help="Number of agents.")] = 5,
    rounds: Annotated[int, typer.Option(help="Dialogue rounds K per query.")] = 2,
    temporal: Annotated[str, typer.Option(help="Temporal edges: all, self or none.")] = "all",
    train: Annotated[int, typer.Option(help="Training queries Q' (train split).")] = 10,
    test: Annotated[int, typer.Option(help="Held-out test queries (test split).")] = 10,
    ratio: Annotated[float, typer.Option(help="Pruning ratio p (0..1).")] = 0.3,
    samples: Annotated[int, typer.Option(help="Sampled structures M per training query.")] = 1,
    lr: Annotated[float, typer.Option(help="Adam learning rate of the mask logits.")] = 0.1,
    rank_weight: Annotated[float, typer.Option(help="Weight of the nuclear norm.")] = 0.05,
    anchor_weight: Annotated[float, typer.Option(help="Weight of the anchor term.")] = 0.5,
    candidates: Annotated[str, typer.Option(help="Mask candidates: existing or all.")] = "existing",
    attack: Annotated[
        str, typer.Option(help="none, prompt (liar) or replace (gibberish).")
    ] = "none",
    model: Annotated[str, typer.Option(help="Local model name or openai:MODEL.")] = "smollm2-135m",
    max_tokens: Annotated[int, typer.Option(help="Max tokens per model call.")] = 256,
    seed: Annotated[int, typer.Option(help="Seed: split, sampling, attack target.")] = 0,
    out: Annotated[Path, typer.Option(help="Where the pruned TeamSpec is written.")] = Path(
        "results/pruned.json"
    ),
    store: Annotated[Path, typer.Option(help="SQLite result store (resumable).")] = Path(
        "results/prune.sqlite"
    ),
    retrain: Annotated[bool, typer.Option(help="Train again even if --out matches.")] = False,
    share_thoughts: Annotated[
        bool,
        typer.Option(
            help="Agents send their reasoning with their answers (the seed's setting: whole "
            "responses travel on edges); default: answers only."
        ),
    ] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
    runner: BackendOpts = LOCAL,
) -> None:
    """Train AgentPrune masks, prune once, evaluate full vs pruned (budgets: per team run)."""
    from overseer.experiments.prune import PruneJob
    from overseer.experiments.prune_runs import RunSettings
    from overseer.models import model_card
    from overseer.prune import TrainConfig

    _check_options(team, agents, rounds, temporal, train, test, ratio, attack, candidates,
                   max_tokens)  # fmt: skip
    try:
        cfg = TrainConfig(lr=lr, samples=samples, rank_weight=rank_weight,
                          anchor_weight=anchor_weight, seed=seed)  # fmt: skip
    except ValueError as exc:
        raise InputError(str(exc)) from None
    base, train_tasks, test_tasks = _team_and_tasks(suite, team, agents, rounds, temporal,
                                                    train, test, seed, share_thoughts)  # fmt: skip
    if not model.startswith("openai:"):
        model_card(model)
    picked = cast("Candidates", candidates)  # _check_options: "existing" or "all"
    job = PruneJob(base, suite, train_tasks, ratio, cfg, model, max_tokens, attack, picked)
    rs = RunSettings(max_tokens=max_tokens, seed=seed, budget=limits.budget())
    _run(job, test_tasks, model, mopts, rs, out, store, retrain, samples, progress, runner)


def _team_and_tasks(suite, team, agents, rounds, temporal, train, test, seed,
                    share_thoughts) -> tuple[Any, list, list]:  # fmt: skip
    from overseer.experiments.prune_runs import build_team
    from overseer.tasks import load_suite

    try:
        train_tasks = load_suite(suite, split="train", seed=seed, limit=train)
        test_tasks = load_suite(suite, split="test", seed=seed, limit=test)
        base = build_team(
            team, agents, rounds=rounds, kind=train_tasks[0].kind, temporal=temporal, seed=seed
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return (base.sharing_thoughts() if share_thoughts else base), train_tasks, test_tasks


def _run(job: PruneJob, test_tasks, model, mopts, rs, out, store, retrain, samples, progress,
         runner):  # fmt: skip
    from overseer.cli._io import train_step as step
    from overseer.experiments.prune import evaluate_pruned, train_or_load

    get_model = cache(partial(mopts.load, model))  # loaded once, only if something runs here
    console, base = out_console(), job.base

    def announce() -> None:
        console.print(
            f"training masks: {len(job.train_tasks)} {job.suite} train queries x {samples} "
            f"samples, team {base.name} ({len(base.spatial_edges)} spatial, "
            f"{len(base.temporal_edges)} temporal edges), attack {job.attack}"
        )

    pruned, training, reused = asyncio.run(
        train_or_load(job, out, get_model, rs, retrain=retrain, on_train=announce, on_step=step)
    )
    if reused:
        console.print(f"reusing the pruned spec in {out} (same settings; --retrain to redo)")
    console.print(
        f"pruned spec: {out} ({len(pruned.spatial_edges)}/{len(base.spatial_edges)} spatial, "
        f"{len(pruned.temporal_edges)}/{len(base.temporal_edges)} temporal edges kept)"
    )
    summary, recs = asyncio.run(
        evaluate_pruned(base, pruned, test_tasks, attack=job.attack, rs=rs, model_name=model,
                        load_model=get_model, store=store, progress=progress,
                        backend_for=partial(runner.build, model=partial(mopts.load, model)))
    )  # fmt: skip
    console.print(
        f"{summary.planned} planned: {summary.already_done} already done, "
        f"{summary.ran} ran, {summary.errors} errors; store {store}"
    )
    _print_tables(console, job, pruned, recs, training, samples)
    if get_model.cache_info().currsize:
        get_model().close()


def _print_tables(console, job: PruneJob, pruned, recs, training, samples: int) -> None:
    from overseer.experiments.prune import comparison_rows, cost_model_table

    t = Table(title=f"full vs AgentPrune on held-out tasks (attack: {job.attack})")
    for col in ("team", "edges S/T", "n", "acc", "err", "prompt/task", "compl/task",
                "prompt total", "compl total", "prompt vs full", "compl vs full"):  # fmt: skip
        t.add_column(col, justify="left" if col == "team" else "right")
    for row in comparison_rows(job.base, pruned, recs):
        t.add_row(*row)
    console.print(t)
    usage = training["report"]["usage"]
    console.print(
        f"training cost (M x Q' = {training['report']['runs']} team runs): "
        f"{usage['prompt_tokens']} prompt, {usage['completion_tokens']} completion tokens"
    )
    cm = cost_model_table(job.base, recs, training, ratio=job.ratio, samples=samples)
    if cm is None:
        return
    t = Table(
        title=f"agent prompt tokens over Q = {cm.queries} queries (Q' = {cm.train_queries} "
        f"train, {cm.test_queries} test)"
    )
    for col in ("", "cost model (eq. 14-17)", "measured"):
        t.add_column(col, justify="left" if not col else "right")
    for row in cm.rows:
        t.add_row(*row)
    console.print(t)
    console.print(
        f"measured averages: c_S = c_T = {cm.c_s:.1f}, c_q = {cm.c_q:.1f} tokens; "
        "* full-team tokens per test query scaled to all Q queries; the model charges "
        "temporal edges in every round, though the first round reads no previous one"
    )
