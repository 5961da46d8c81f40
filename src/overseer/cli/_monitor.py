"""`overseer monitor collect|train|eval`: the rogue-agent monitor on multi-agent games."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, get_type_hints

import typer

from overseer.cli import _game_options as g
from overseer.cli import _options as o
from overseer.cli._app import InputError, Interrupted, app, csv_list
from overseer.cli._backend_options import LOCAL, BackendOpts, backend_options
from overseer.cli._lab import need_lab
from overseer.cli._monitor_out import print_line, print_outcomes, print_selection
from overseer.cli._options import option_group

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
DEFAULT_GAME = g.GameOpts()


@dataclass(frozen=True)
class _Play:
    """What `collect` and `eval` share, declared once and passed as one value: the game, its
    sampling seed, the result store, the model backend, the budgets and where games run."""

    seed: g.Seed = 0
    store: g.Store = DEFAULT_STORE
    game: g.GameOpts = DEFAULT_GAME
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
        wrapped = option_group("play", _Play, types, (), tuple(types))(command)
        game = g.game_options(g.GAME_RUN)
        for options in (backend_options, o.budget_options, o.model_options, game):
            wrapped = options(wrapped)
        return monitor_app.command(name)(wrapped)

    return decorate


@contextmanager
def _kept(store: Path) -> Iterator[None]:
    """Ctrl-C while games run: say that the finished games are in the store."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(note=f"finished games are kept in {store}; rerun to resume") from None


def _lab_game(play: _Play, command: str) -> tuple[EnvSetup, _Play]:
    """The game's setup for `command` (which needs the lab), and `play` with its game's
    defaults filled in."""
    need_lab(command)
    setup, game = g.env_of(play.game)
    return setup, replace(play, game=game)


def _caps(caps: str) -> list[int]:
    """--caps as the sorted resets allowed per role, each 1 to 4."""
    try:
        cap_list = sorted({int(c) for c in csv_list(caps, "--caps")})
    except ValueError:
        raise InputError(f"--caps: expected integers like 1,2, got {caps!r}") from None
    if any(c < 1 or c > 4 for c in cap_list):
        raise InputError(f"--caps: expected values 1..4, got {caps!r}")
    return cap_list


def _monitors(path: Path) -> MonitorSet:
    """The trained monitors at `path` (--monitor); a file that cannot be read is an input error."""
    from overseer.monitor import MonitorSet

    try:
        return MonitorSet.load(path)
    except (ValueError, OSError, RecursionError) as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise InputError(f"--monitor: {why}; run `overseer monitor train` first") from None


def _run(
    setup: EnvSetup,
    factory: Callable[[], Sequence[SolverConfig]],
    tasks: list[Task],
    play: _Play,
) -> None:
    import asyncio

    from overseer.bench import ResultStore, run_experiment

    model = str(play.game.model)
    if not tasks:
        return
    load = partial(play.mopts.load, model)
    backend = play.runner.build(factory, load)
    with ResultStore(play.store) as rs, _kept(play.store):
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
    print_line(
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
    setup, play = _lab_game(play, "overseer monitor collect")
    from overseer.experiments.monitor import configs_factory

    tasks = g.first_games(setup.games("train"), games, "--games")
    tasks += g.first_games(setup.games("validation"), val_games, "--val-games")
    _run(setup, configs_factory(setup), tasks, play)
    print_outcomes(setup, str(play.game.model), play.store, ["collect"])


@monitor_app.command("train")
@g.game_options(g.GAME_SHAPE)
def train_cmd(
    store: g.Store = DEFAULT_STORE,
    out: Annotated[Path | None, typer.Option(help="Monitor file (.json + .npz).")] = None,
    game: g.GameOpts = DEFAULT_GAME,
) -> None:
    """Train per-role monitors on the collected games and print the selection report."""
    need_lab("overseer monitor train")
    from overseer.experiments.monitor import (
        MissingGamesError,
        default_monitor_path,
        train_from_store,
    )

    setup, game = g.env_of(game)
    model = str(game.model)
    if not store.is_file():
        raise InputError(f"--store: no result store at {store}; run `overseer monitor collect`")
    try:
        ms = train_from_store(store, setup, model)
    except MissingGamesError as exc:
        raise InputError(f"--store {exc}") from None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    path = ms.save(out or default_monitor_path(setup.suite, model))
    print_selection(ms, f"{setup.suite}, {model}", path)


@_play_command("eval")
def eval_cmd(
    games: Annotated[int | None, typer.Option(help="Test games (default: all).")] = None,
    monitor: Annotated[Path | None, typer.Option(help="Monitor file from `train`.")] = None,
    caps: Annotated[str, typer.Option(help="Resets allowed per role, e.g. 1,2.")] = "1,2",
    play: _Play = _PLAY,
) -> None:
    """Test games with no intervention, the trained monitor (per cap) and the random monitor.
    Budgets apply to each game."""
    setup, play = _lab_game(play, "overseer monitor eval")
    from overseer.experiments.monitor import configs_factory, default_monitor_path

    model, cap_list = str(play.game.model), _caps(caps)
    path = monitor or default_monitor_path(setup.suite, model)
    try:
        factory = configs_factory(setup, _monitors(path), path, cap_list)
    except ValueError as exc:
        raise InputError(f"--monitor {exc}") from None
    tasks = g.first_games(setup.games("test"), games, "--games")
    _run(setup, factory, tasks, play)
    names = [c.name for c in factory()]  # the configurations `factory` builds on Ray workers too
    print_outcomes(setup, model, play.store, names, ids={t.id for t in tasks})
