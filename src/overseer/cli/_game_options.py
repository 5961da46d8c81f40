"""The game options of `overseer monitor collect|train|eval` (GameOpts), declared once and
received as one value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from overseer.cli._app import InputError
from overseer.cli._hints import MODEL_HELP, model_name
from overseer.cli._names import ENVS
from overseer.cli._options import option_group

if TYPE_CHECKING:
    from overseer.experiments.monitor import EnvSetup
    from overseer.tasks import Task

R = TypeVar("R")
Env = Annotated[str, typer.Option(help=f"{', '.join(ENVS[:-1])} or {ENVS[-1]}.")]
ModelOpt = Annotated[str | None, typer.Option(help=MODEL_HELP)]
Seed = Annotated[int, typer.Option(help="Sampling seed of the games.")]
Store = Annotated[Path, typer.Option(help="SQLite result store (resumable).")]
Suspects = Annotated[int | None, typer.Option(help="Characters per game (default: the seed's).")]
Attributes = Annotated[int | None, typer.Option(help="Attributes per character.")]
Turns = Annotated[
    int | None, typer.Option(help="Turn limit per game (govsim: months; codegen: rounds).")
]
Coders = Annotated[int | None, typer.Option(help="codegen: coders in the debate (1-4).")]
Thoughts = Annotated[int, typer.Option(help="Max characters of 'thoughts' (0: none).")]
MaxTokens = Annotated[
    int | None,
    typer.Option(help="Max tokens per agent answer (default: 160; codegen coders: 384)."),
]
Progress = Annotated[bool, typer.Option(help="Show progress bars.")]
TraceDir = Annotated[Path | None, typer.Option(help="Write one JSONL trace per game here.")]


@dataclass(frozen=True)
class GameOpts:
    """The game options of `monitor collect|train|eval`, declared once and passed as one value."""

    env: str = "whodunit-asym"
    model: str | None = None
    suspects: int | None = None
    attributes: int | None = None
    turns: int | None = None
    thoughts: int = 160
    max_tokens: int | None = None
    coders: int | None = None
    progress: bool = True
    trace_dir: Path | None = None


_GAME_TYPES: dict[str, Any] = {
    "env": Env,
    "model": ModelOpt,
    "suspects": Suspects,
    "attributes": Attributes,
    "turns": Turns,
    "thoughts": Thoughts,
    "max_tokens": MaxTokens,
    "coders": Coders,
    "progress": Progress,
    "trace_dir": TraceDir,
}
_GAME_LEAD = ("env", "model")
GAME_SHAPE = ("suspects", "attributes", "turns", "thoughts", "max_tokens", "coders")
GAME_RUN = (*GAME_SHAPE, "progress", "trace_dir")


def game_options(names: tuple[str, ...]) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the options --env and --model before its own and `names` (fields of
    GameOpts) after them; the command receives all of them as one `game: GameOpts` argument.
    """
    return option_group("game", GameOpts, _GAME_TYPES, _GAME_LEAD, names)


def env_of(game: GameOpts) -> tuple[EnvSetup, GameOpts]:
    """The game's environment, and the options with the model resolved (`model_name`)."""
    from overseer.experiments.monitor import env_setup

    env = game.env
    if env not in ENVS:
        raise InputError(f"--env: expected one of {', '.join(ENVS)}, got {env!r}")
    if game.coders is not None and env != "codegen":
        raise InputError(f"--coders: a codegen option, not for {env}")
    if env in ("codegen", "govsim") and (game.suspects is not None or game.attributes is not None):
        raise InputError(f"--suspects/--attributes: WhoDunitEnv options, not for {env}")
    try:
        shape = {k: getattr(game, k) for k in GAME_SHAPE}  # the game's size options, by name
        setup = env_setup(env, trace_dir=game.trace_dir, **shape)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return setup, replace(game, model=model_name(game.model))


def first_games(tasks: list[Task], n: int | None, what: str) -> list[Task]:
    """The first `n` games of a split (None: all); out of range is one line naming `what`."""
    if n is None:
        return tasks
    if n < 1:
        raise InputError(f"{what}: expected >= 1 (leave it out for all games), got {n}")
    if n > len(tasks):
        raise InputError(f"{what}: the split has {len(tasks)} games, asked for {n}")
    return tasks[:n]
