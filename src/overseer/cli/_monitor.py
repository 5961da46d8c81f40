"""`overseer monitor collect|train|eval`: the rogue-agent monitor on multi-agent games."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, get_type_hints

import typer
from rich.table import Table

from overseer.cli import _options as o
from overseer.cli._app import InputError, app, csv_list, out_console
from overseer.cli._backend_options import LOCAL, BackendOpts, backend_options
from overseer.cli._options import _group

if TYPE_CHECKING:
    from overseer.bench import SolverConfig
    from overseer.experiments.monitor import EnvSetup
    from overseer.monitor import MonitorSet
    from overseer.tasks import Task

monitor_app = typer.Typer(
    help="Rogue-agent monitor: collect games, train monitors, evaluate interventions.",
    no_args_is_help=True,
)
app.add_typer(monitor_app, name="monitor")

DEFAULT_STORE = Path("results") / "monitor.sqlite"
DEFAULT_GAME = o.GameOpts()


@dataclass(frozen=True)
class _Play:
    """What `collect` and `eval` share, declared once and passed as one value: the game, its
    sampling seed, the result store, the model backend, the budgets and where games run."""

    seed: o.Seed = 0
    store: o.Store = DEFAULT_STORE
    game: o.GameOpts = DEFAULT_GAME
    mopts: o.ModelOpts = o.MODEL_DEFAULTS
    limits: o.BudgetOpts = o.NO_LIMITS
    runner: BackendOpts = LOCAL


_PLAY = _Play()


def _play_command(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register `monitor NAME`, a command that plays games: its own options, then --seed,
    --store and the game's, model's, budget and backend options, all received as one
    `play: _Play` value."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        types = get_type_hints(_Play, include_extras=True)  # the options' typer annotations
        wrapped = _group("play", _Play, types, (), tuple(types))(command)
        game = o.game_options(o.GAME_RUN)
        for options in (backend_options, o.budget_options, o.model_options, game):
            wrapped = options(wrapped)
        return monitor_app.command(name)(wrapped)

    return decorate


def _setup(g: o.GameOpts) -> EnvSetup:
    from overseer.experiments.monitor import ENVS, env_setup

    env = g.env
    if env not in ENVS:
        raise InputError(f"--env: expected one of {', '.join(ENVS)}, got {env!r}")
    if g.coders is not None and env != "codegen":
        raise InputError(f"--coders: a codegen option, not for {env}")
    if env in ("codegen", "govsim") and (g.suspects is not None or g.attributes is not None):
        raise InputError(f"--suspects/--attributes: WhoDunitEnv options, not for {env}")
    try:
        shape = {k: getattr(g, k) for k in o.GAME_SHAPE}  # the game's size options, by name
        return env_setup(env, trace_dir=g.trace_dir, **shape)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _limit(tasks: list, n: int | None, what: str) -> list:
    if n is None:
        return tasks
    if n < 1:
        raise InputError(f"{what}: expected >= 1 (leave it out for all games), got {n}")
    if n > len(tasks):
        raise InputError(f"{what}: the split has {len(tasks)} games, asked for {n}")
    return tasks[:n]


def _run(
    setup: EnvSetup,
    factory: Callable[[], Sequence[SolverConfig]],
    tasks: list[Task],
    play: _Play,
) -> None:
    from overseer.bench import ResultStore, run_experiment
    from overseer.models import model_card

    model = play.game.model
    if not model.startswith("openai:"):
        model_card(model)
    if not tasks:
        return
    load = partial(play.mopts.load, model)
    backend = play.runner.build(factory, load)
    with ResultStore(play.store) as rs:
        s = asyncio.run(
            run_experiment(
                configs=list(factory()),
                tasks=tasks,
                seeds=[play.seed],
                model_name=model,
                load_model=load,
                store=rs,
                progress=play.game.progress,
                budget=play.limits.budget(),
                backend=backend,
            )
        )
    out_console().print(
        f"{setup.suite}: {s.planned} games planned, {s.already_done} already stored, "
        f"{s.ran} played, {s.errors} errors; store {play.store}"
    )


@_play_command("collect")
def collect_cmd(
    games: Annotated[int | None, typer.Option(help="Training games (default: all).")] = None,
    val_games: Annotated[int | None, typer.Option(help="Validation games (default: all).")] = None,
    play: _Play = _PLAY,
) -> None:
    """Play training and validation games without intervention, storing per-turn features.
    Budgets apply to each game."""
    from overseer.experiments.monitor import configs_factory

    setup = _setup(play.game)
    tasks = _limit(setup.games("train"), games, "--games")
    tasks += _limit(setup.games("validation"), val_games, "--val-games")
    _run(setup, configs_factory(setup), tasks, play)
    _print_outcomes(setup, play.game.model, play.store, ["collect"])


@monitor_app.command("train")
@o.game_options(o.GAME_SHAPE)
def train_cmd(
    store: o.Store = DEFAULT_STORE,
    out: Annotated[Path | None, typer.Option(help="Monitor file (.json + .npz).")] = None,
    game: o.GameOpts = DEFAULT_GAME,
) -> None:
    """Train per-role monitors on the collected games and print the selection report."""
    from overseer.experiments.monitor import (
        MissingGamesError,
        default_monitor_path,
        train_from_store,
    )

    setup = _setup(game)
    if not store.is_file():
        raise InputError(f"--store: no result store at {store}; run `overseer monitor collect`")
    try:
        ms = train_from_store(store, setup, game.model)
    except MissingGamesError as exc:
        raise InputError(f"--store {exc}") from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    path = ms.save(out or default_monitor_path(setup.suite, game.model))
    _print_selection(ms, f"{setup.suite}, {game.model}", path)


@_play_command("eval")
def eval_cmd(
    games: Annotated[int | None, typer.Option(help="Test games (default: all).")] = None,
    monitor: Annotated[Path | None, typer.Option(help="Monitor file from `train`.")] = None,
    caps: Annotated[str, typer.Option(help="Resets allowed per role, e.g. 1,2.")] = "1,2",
    play: _Play = _PLAY,
) -> None:
    """Test games with no intervention, the trained monitor (per cap) and the random monitor.
    Budgets apply to each game."""
    from overseer.experiments.monitor import configs_factory, default_monitor_path
    from overseer.monitor import MonitorSet

    game = play.game
    setup = _setup(game)
    try:
        cap_list = sorted({int(c) for c in csv_list(caps, "--caps")})
    except ValueError:
        raise InputError(f"--caps: expected integers like 1,2, got {caps!r}") from None
    if any(c < 1 or c > 4 for c in cap_list):
        raise InputError(f"--caps: expected values 1..4, got {caps!r}")
    path = monitor or default_monitor_path(setup.suite, game.model)
    try:
        ms = MonitorSet.load(path)
    except ValueError as exc:
        raise InputError(f"--monitor: {exc}; run `overseer monitor train` first") from None
    try:
        factory = configs_factory(setup, ms, path, cap_list)
    except ValueError as exc:
        raise InputError(f"--monitor {exc}") from None
    tasks = _limit(setup.games("test"), games, "--games")
    _run(setup, factory, tasks, play)
    names = [c.name for c in factory()]  # the configurations `factory` builds on Ray workers too
    _print_outcomes(setup, game.model, play.store, names, ids={t.id for t in tasks})


def _print_selection(ms: MonitorSet, what: str, path: Path) -> None:
    """The per-role selection report of freshly trained monitors and where they were saved."""
    from overseer.monitor import report_lines

    t = Table(title=f"monitor selection ({what}): gain on validation")
    for col in ("role", "features (+turn)", "degree", "tau", "gain", "TP/FP", "chosen"):
        t.add_column(col)
    for line in report_lines(ms):
        t.add_row(*line)
    console, m = out_console(), ms.meta
    console.print(t)
    console.print(
        f"trained on {m['train_games']} games ({m['train_rows']} turns), selected on "
        f"{m['validation_games']} games (success {100 * m['validation_success_rate']:.1f}%); "
        f"saved {path}"
    )


def _print_outcomes(setup: EnvSetup, model: str, store: Path, configs: list[str], ids=None) -> Any:
    from overseer.experiments.monitor import eval_columns, outcome_rows

    t = Table(title=f"{setup.suite} with {model}")
    for col in eval_columns(setup.env):
        t.add_column(col, justify="left" if col == "config" else "right")
    for row in outcome_rows(setup, store, model, configs, ids):
        t.add_row(*row)
    out_console().print(t)
