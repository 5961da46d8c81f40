"""The `overseer` command line. Exit codes: 0 done, 1 failed run or errored results, 2 bad
input (one line on stderr), 130 interrupted."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from overseer.bench.backends import RayConnectError
from overseer.cli import (  # noqa: F401 (commands)
    _adapt,
    _attribute,
    _bench,
    _models,
    _monitor,
    _prune,
    _replay,
    _report,
    _run,
    _serve,
    _trace,
    _trace_list,
)
from overseer.cli._app import CommandFailed, InputError, Interrupted, app
from overseer.errors import PathError
from overseer.models import ModelError
from overseer.runtime import TeamSpecError

__all__ = ["app", "main"]

INTERRUPTED = 130


def _interrupted(err: Console, kept: int | None) -> int:
    what = "finished results are kept" if kept is None else f"{kept} finished results are kept"
    err.print(f"overseer: interrupted; {what}", markup=False)
    return INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `overseer` script; returns the exit code (see the app's epilog)."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        rv = app(args=argv, standalone_mode=False, prog_name="overseer")
    except typer.exceptions.TyperException as exc:  # click's usage errors, as typer ships them
        if not exc.format_message():  # bare `overseer`: help was printed
            return 0
        err.print(f"overseer: error: {exc.format_message()}", markup=False)
        return exc.exit_code
    except (InputError, ModelError, TeamSpecError, RayConnectError) as exc:
        err.print(f"overseer: error: {exc}", markup=False)
        return 2
    except PathError as exc:  # an unusable store, cache or trace directory: one line
        err.print(f"overseer: error: {exc}", markup=False)
        return 2
    except CommandFailed as exc:
        err.print(f"overseer: error: {exc}", markup=False)
        return 1
    except Interrupted as exc:
        return _interrupted(err, exc.kept)
    except (typer.Abort, KeyboardInterrupt):
        return _interrupted(err, None)
    except typer.Exit as exc:
        return exc.exit_code
    if isinstance(rv, int) and not isinstance(rv, bool):  # typer returns Exit(code)'s code
        return _interrupted(err, None) if rv == INTERRUPTED else rv
    return 0


if __name__ == "__main__":
    sys.exit(main())
