"""The `overseer` command line. Bad input gives one line on stderr and exit code 2."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from overseer.cli import _adapt, _bench, _monitor, _prune, _run, _trace  # noqa: F401 (commands)
from overseer.cli._app import InputError, app
from overseer.errors import PathError
from overseer.models import ModelError
from overseer.runtime import TeamSpecError

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `overseer` script."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        app(args=argv, standalone_mode=False, prog_name="overseer")
    except typer.exceptions.TyperException as exc:  # click's usage errors, as typer ships them
        if not exc.format_message():  # bare `overseer`: help was printed
            return 0
        err.print(f"overseer: error: {exc.format_message()}", markup=False)
        return exc.exit_code
    except (InputError, ModelError, TeamSpecError) as exc:
        err.print(f"overseer: error: {exc}", markup=False)
        return 2
    except PathError as exc:  # an unusable store, cache or trace directory: one line
        err.print(f"overseer: error: {exc}", markup=False)
        return 2
    except typer.Abort:
        err.print("overseer: interrupted; finished results are kept", markup=False)
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
