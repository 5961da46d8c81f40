"""The typer app shared by every command module, and the errors a command raises to end."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.console import Console

EXIT_CODES = (
    "Exit codes: 0 the command did what it was asked; 1 the run ended in error, no model call "
    "succeeded, its answer is empty, or results hold errors (see --allow-errors); 2 bad input "
    "or a missing extra, or a Ray cluster that cannot be used or is lost mid-run (one line on "
    "stderr); 130 interrupted (the line says what was kept)."
)

app = typer.Typer(
    name="overseer",
    help="Run teams of LLM agents and cut what they waste at run time.",
    epilog=EXIT_CODES,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class InputError(Exception):
    """Bad command-line input: printed as one line, exit code 2."""


class CommandFailed(Exception):
    """The command ran but did not do what it was asked (a run in error, errored results):
    printed as one line, exit code 1."""


class Interrupted(Exception):
    """Ctrl-C during a command: `kept` finished results in its store, or `note` saying what
    was kept (or that nothing was), so the line never claims what did not happen."""

    def __init__(self, kept: int | None = None, note: str | None = None) -> None:
        super().__init__("interrupted")
        self.kept = kept
        self.note = note

    def line(self) -> str:
        """The one stderr line: what is kept, as far as the command knows."""
        if self.note is not None:
            return f"overseer: interrupted; {self.note}"
        if self.kept is not None:
            return f"overseer: interrupted; {self.kept} finished results are kept"
        return "overseer: interrupted"


def csv_list(text: str, what: str) -> list[str]:
    """Split a comma-separated option; an empty list is an input error naming the option."""
    items = [s.strip() for s in text.split(",") if s.strip()]
    if not items:
        raise InputError(f"{what}: expected a comma-separated list, got {text!r}")
    return items


def out_console() -> Console:
    """Stdout console; wide when not a terminal so tables in logs and pipes are not cut. Markup
    is off: printed text (model answers, install hints like 'overseer-agents[qwen05]') is data."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160, markup=False)


def err_console() -> Console:
    """Stderr console for one-line messages: no markup, no highlighting, no wrapping."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, markup=False, soft_wrap=True)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"overseer {version('overseer-agents')}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version."
    ),
) -> None:
    """Run teams of LLM agents and cut what they waste at run time."""
