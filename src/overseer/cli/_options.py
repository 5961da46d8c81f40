"""Option types of the `overseer monitor` commands (shared by collect, train and eval)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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
