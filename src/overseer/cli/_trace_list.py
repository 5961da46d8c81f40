"""`overseer trace list`: the runs of a trace directory, one row each (bad files: their error)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from overseer.cli._app import InputError, out_console
from overseer.cli._io import strip_controls
from overseer.cli._trace import trace_app


@trace_app.command("list")
def trace_list(
    directory: Annotated[Path, typer.Argument(help="A trace directory.")] = Path("runs"),
) -> None:
    """List the runs of a trace directory: id, start time, model, stop reason, tokens."""
    from rich.table import Table

    from overseer.runtime.books import list_traces

    if not directory.is_dir():
        raise InputError(f"trace directory {directory}: not found")
    rows = list_traces(directory)
    t = Table(title=f"traces in {directory} ({len(rows)})")
    for col in ("file", "run", "started", "model", "stop", "tokens"):
        t.add_column(col, justify="right" if col == "tokens" else "left")
    for r in rows:
        if r.error is not None:
            t.add_row(r.path.name, "", "", "", strip_controls(f"unreadable: {r.error}"), "")
            continue
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else ""
        tokens = "" if r.tokens is None else str(r.tokens)
        t.add_row(
            r.path.name,
            strip_controls(r.run),
            started,
            strip_controls(r.model),
            r.stop_reason,
            tokens,
        )
    out_console().print(t)
