"""Option types of the `overseer monitor` commands (shared by collect, train and eval)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

R = TypeVar("R")

Env = Annotated[str, typer.Option(help="whodunit-asym, whodunit-sym, govsim or codegen.")]
ModelOpt = Annotated[str, typer.Option(help="Local model name or openai:MODEL.")]
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
BaseUrl = Annotated[str | None, typer.Option(help="Server URL for openai:MODEL.")]
Progress = Annotated[bool, typer.Option(help="Show progress bars.")]
TraceDir = Annotated[Path | None, typer.Option(help="Write one JSONL trace per game here.")]
# where episodes run (`overseer bench`, `monitor collect|eval`): README "Scale-out"
Backend = Annotated[str, typer.Option(help="asyncio, or ray: episodes on Ray worker actors.")]
Address = Annotated[str | None, typer.Option(help="Ray cluster address (default: local Ray).")]
Workers = Annotated[int, typer.Option(help="Ray worker actors (--backend ray).")]


@dataclass(frozen=True)
class GameOpts:
    """The game options of `monitor collect|train|eval`, declared once and passed as one value."""

    env: str = "whodunit-asym"
    model: str = "smollm2-135m"
    suspects: int | None = None
    attributes: int | None = None
    turns: int | None = None
    thoughts: int = 160
    max_tokens: int | None = None
    coders: int | None = None
    base_url: str | None = None
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
    "base_url": BaseUrl,
    "progress": Progress,
    "trace_dir": TraceDir,
}
_GAME_LEAD = ("env", "model")
GAME_SHAPE = ("suspects", "attributes", "turns", "thoughts", "max_tokens", "coders")
GAME_RUN = (*GAME_SHAPE, "base_url", "progress", "trace_dir")


def _option(name: str) -> inspect.Parameter:
    default = {f.name: f.default for f in fields(GameOpts)}[name]
    kind = inspect.Parameter.KEYWORD_ONLY
    return inspect.Parameter(name, kind, default=default, annotation=_GAME_TYPES[name])


def game_options(names: tuple[str, ...]) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a command the options --env and --model before its own and `names` (fields of
    GameOpts) after them; the command receives all of them as one `game: GameOpts` argument.
    """
    taken = (*_GAME_LEAD, *names)

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        sig = inspect.signature(command, eval_str=True)
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in sig.parameters.values()
            if p.name != "game"
        ]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> R:
            game = GameOpts(**{n: kwargs.pop(n) for n in taken})
            return command(game=game, **kwargs)

        params = [_option(n) for n in _GAME_LEAD] + own + [_option(n) for n in names]
        wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate
