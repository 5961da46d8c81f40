"""`overseer prune`: learn edge masks on training tasks, prune once, compare full vs pruned."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from overseer.cli import _options as o
from overseer.cli._app import CommandFailed, InputError, app, out_console
from overseer.cli._backend_options import LOCAL, BackendOpts, backend_options
from overseer.cli._io import AllowErrors
from overseer.cli._options import _group
from overseer.runtime import PRESETS

if TYPE_CHECKING:
    from overseer.bench import ResultRecord
    from overseer.experiments.prune import PruneJob
    from overseer.experiments.prune_runs import RunSettings
    from overseer.prune import TrainConfig
    from overseer.runtime import TeamSpec
    from overseer.tasks import Task

#: the presets and AgentPrune's -C/-L/-R variants (`overseer.experiments.prune_runs.VARIANTS`)
TEAMS = (*(p for p in PRESETS if p != "debate"), "agentprune-c", "agentprune-l", "agentprune-r")


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise InputError(msg)


@dataclass(frozen=True)
class TeamOpts:
    """The team `overseer prune` trains on: preset, size, rounds, temporal edges, payload."""

    team: str = "complete"
    agents: int = 5
    rounds: int = 2
    temporal: str = "all"
    share_thoughts: bool = False

    def __post_init__(self) -> None:
        _check(self.team in TEAMS, f"--team: expected one of {', '.join(TEAMS)}, got {self.team!r}")
        _check(1 <= self.agents <= 16, f"--agents: expected 1..16, got {self.agents}")
        _check(1 <= self.rounds <= 10, f"--rounds: expected 1..10, got {self.rounds}")
        ok = self.temporal in ("all", "self", "none")
        _check(ok, f"--temporal: expected all|self|none, got {self.temporal!r}")

    def build(self, kind: str, seed: int) -> TeamSpec:
        """The team for tasks of `kind` (a bad size is one line, InputError)."""
        from overseer.experiments.prune_runs import build_team

        try:
            base = build_team(
                self.team,
                self.agents,
                rounds=self.rounds,
                kind=kind,
                temporal=self.temporal,
                seed=seed,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None
        return base.sharing_thoughts() if self.share_thoughts else base


@dataclass(frozen=True)
class TrainOpts:
    """How the masks are learnt and the team pruned (the seed's section 3 knobs)."""

    ratio: float = 0.3
    samples: int = 1
    lr: float = 0.1
    rank_weight: float = 0.05
    anchor_weight: float = 0.5
    candidates: Literal["existing", "all"] = "existing"

    def __post_init__(self) -> None:
        _check(0.0 <= self.ratio <= 1.0, f"--ratio: expected 0 <= p <= 1, got {self.ratio}")
        ok = self.candidates in ("existing", "all")
        _check(ok, f"--candidates: expected existing|all, got {self.candidates!r}")

    def config(self, seed: int) -> TrainConfig:
        """The trainer's settings (a bad value is one line, InputError)."""
        from overseer.prune import TrainConfig

        try:
            return TrainConfig(
                lr=self.lr,
                samples=self.samples,
                rank_weight=self.rank_weight,
                anchor_weight=self.anchor_weight,
                seed=seed,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None


def _opt(help_text: str) -> Any:
    return typer.Option(help=help_text)


team_options = _group(
    "shape",
    TeamOpts,
    {
        "team": Annotated[str, _opt(f"Team: {', '.join(TEAMS)}.")],
        "agents": Annotated[int, _opt("Number of agents.")],
        "rounds": Annotated[int, _opt("Dialogue rounds K per query.")],
        "temporal": Annotated[str, _opt("Temporal edges: all, self or none.")],
        "share_thoughts": Annotated[
            bool,
            _opt(
                "Agents send their reasoning with their answers (the seed's setting: whole "
                "responses travel on edges); default: answers only."
            ),
        ],
    },
    (),
    ("team", "agents", "rounds", "temporal", "share_thoughts"),
)
train_options = _group(
    "learn",
    TrainOpts,
    {
        "ratio": Annotated[float, _opt("Pruning ratio p (0..1).")],
        "samples": Annotated[int, _opt("Sampled structures M per training query.")],
        "lr": Annotated[float, _opt("Adam learning rate of the mask logits.")],
        "rank_weight": Annotated[float, _opt("Weight of the nuclear norm.")],
        "anchor_weight": Annotated[float, _opt("Weight of the anchor term.")],
        "candidates": Annotated[str, _opt("Mask candidates: existing or all.")],
    },
    (),
    ("ratio", "samples", "lr", "rank_weight", "anchor_weight", "candidates"),
)

Attack = Annotated[str, typer.Option(help="none, prompt (liar) or replace (gibberish).")]
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
    model: Annotated[str, typer.Option(help="Local model name or openai:MODEL.")] = "smollm2-135m",
    max_tokens: Annotated[int, typer.Option(help="Max tokens per model call.")] = 256,
    seed: Annotated[int, typer.Option(help="Seed: split, sampling, attack target.")] = 0,
    out: Out = Path("results/pruned.json"),
    store: Store = Path("results/prune.sqlite"),
    retrain: Annotated[bool, typer.Option(help="Train again even if --out matches.")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    allow_errors: AllowErrors = False,
    shape: TeamOpts = TeamOpts(),
    learn: TrainOpts = TrainOpts(),
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
    runner: BackendOpts = LOCAL,
) -> None:
    """Train AgentPrune masks, prune once, evaluate full vs pruned (budgets: per team run)."""
    from overseer.experiments.prune import PruneJob
    from overseer.experiments.prune_runs import RunSettings
    from overseer.models import model_card

    _check_run(train, test, attack, max_tokens)
    cfg = learn.config(seed)
    train_tasks, test_tasks = _tasks(suite, train, test, seed)
    base = shape.build(train_tasks[0].kind, seed)
    if not model.startswith("openai:"):
        model_card(model)
    job = PruneJob(
        base, suite, train_tasks, learn.ratio, cfg, model, max_tokens, attack, learn.candidates
    )
    rs = RunSettings(max_tokens=max_tokens, seed=seed, budget=limits.budget())
    plan = _Plan(job, test_tasks, rs, out, store, retrain, progress, allow_errors)
    _run(plan, mopts, runner)


def _check_run(train: int, test: int, attack: str, max_tokens: int) -> None:
    from overseer.prune import ATTACKS

    _check(train >= 1 and test >= 1, f"--train/--test: expected >= 1, got {train}, {test}")
    _check(attack in ATTACKS, f"--attack: expected one of {', '.join(ATTACKS)}, got {attack!r}")
    _check(max_tokens >= 16, f"--max-tokens: expected >= 16, got {max_tokens}")


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
    from overseer.cli._io import train_step as step
    from overseer.experiments.prune import evaluate_pruned, train_or_load

    job, rs, model = plan.job, plan.rs, plan.job.model
    get_model = cache(partial(mopts.load, model))  # loaded once, only if something runs here
    console = out_console()
    announce = partial(_announce, console, job)
    pruned, training, reused = asyncio.run(
        train_or_load(
            job, plan.out, get_model, rs, retrain=plan.retrain, on_train=announce, on_step=step
        )
    )
    _print_spec(console, plan.out, job.base, pruned, reused)
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
    _print_tables(console, job, pruned, recs, training)
    if get_model.cache_info().currsize:
        get_model().close()
    if summary.errors and not plan.allow_errors:
        raise CommandFailed(
            f"{summary.errors} of {summary.ran} evaluation runs ended in error; store "
            f"{plan.store} (--allow-errors: exit 0)"
        )


def _announce(console: Console, job: PruneJob) -> None:
    base = job.base
    console.print(
        f"training masks: {len(job.train_tasks)} {job.suite} train queries x {job.cfg.samples} "
        f"samples, team {base.name} ({len(base.spatial_edges)} spatial, "
        f"{len(base.temporal_edges)} temporal edges), attack {job.attack}"
    )


def _print_spec(
    console: Console, out: Path, base: TeamSpec, pruned: TeamSpec, reused: bool
) -> None:
    if reused:
        console.print(f"reusing the pruned spec in {out} (same settings; --retrain to redo)")
    console.print(
        f"pruned spec: {out} ({len(pruned.spatial_edges)}/{len(base.spatial_edges)} spatial, "
        f"{len(pruned.temporal_edges)}/{len(base.temporal_edges)} temporal edges kept)"
    )


COMPARISON_COLUMNS = (
    "team",
    "edges S/T",
    "n",
    "acc",
    "err",
    "prompt/task",
    "compl/task",
    "prompt total",
    "compl total",
    "prompt vs full",
    "compl vs full",
)


def _print_tables(
    console: Console,
    job: PruneJob,
    pruned: TeamSpec,
    recs: dict[str, list[ResultRecord]],
    training: dict[str, Any],
) -> None:
    from overseer.experiments.prune import comparison_rows

    t = Table(title=f"full vs AgentPrune on held-out tasks (attack: {job.attack})")
    for col in COMPARISON_COLUMNS:
        t.add_column(col, justify="left" if col == "team" else "right")
    for row in comparison_rows(job.base, pruned, recs):
        t.add_row(*row)
    console.print(t)
    usage = training["report"]["usage"]
    console.print(
        f"training cost (M x Q' = {training['report']['runs']} team runs): "
        f"{usage['prompt_tokens']} prompt, {usage['completion_tokens']} completion tokens"
    )
    _print_cost_model(console, job, recs, training)


def _print_cost_model(
    console: Console, job: PruneJob, recs: dict[str, list[ResultRecord]], training: dict[str, Any]
) -> None:
    from overseer.experiments.prune import cost_model_table

    cm = cost_model_table(job.base, recs, training, ratio=job.ratio, samples=job.cfg.samples)
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
