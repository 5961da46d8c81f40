"""The typer app shared by every command module, and the one-line input error."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

app = typer.Typer(
    name="overseer",
    help="Run teams of LLM agents and cut what they waste at run time.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class InputError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


def csv_list(text: str, what: str) -> list[str]:
    """Split a comma-separated option; an empty list is an input error naming the option."""
    items = [s.strip() for s in text.split(",") if s.strip()]
    if not items:
        raise InputError(f"{what}: expected a comma-separated list, got {text!r}")
    return items


def out_console() -> Console:
    """Stdout console; wide when not a terminal so tables in logs and pipes are not cut. Markup
    is off: printed text (model answers, install hints like 'overseer[qwen05]') is data."""
    return Console(width=None if sys.stdout.isatty() else 160, markup=False)
