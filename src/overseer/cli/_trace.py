"""`overseer trace show`: a run trace, readably."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from overseer.cli._app import InputError, app, out_console
from overseer.cli._io import READ_ERRORS, strip_controls, unreadable
from overseer.cli._lab import need_lab

trace_app = typer.Typer(help="Read run traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


@trace_app.command("show")
def trace_show(
    file: Annotated[Path, typer.Argument(help="A trace .jsonl file.")],
    full: Annotated[bool, typer.Option(help="Print model prompts and outputs too.")] = False,
) -> None:
    """Print a run trace readably: rounds, calls, interactions, verdicts, messages."""
    from overseer.runtime import read_trace
    from overseer.runtime.books import describe_event

    if not file.is_file():
        raise InputError(f"trace file {file}: not found")
    console = out_console()
    events = 0
    try:
        for e in read_trace(file, validate=True):
            events += 1
            line = describe_event(e)
            if line:
                console.print(strip_controls(line))
            if full and e["event"] == "model_call":
                for m in e["input"]:
                    console.print(strip_controls(f"      [{m['role']}] {m['content']}"))
                console.print(strip_controls(f"      => {e['output']}"))
    except (ValueError, KeyError, TypeError, *READ_ERRORS) as exc:
        raise unreadable(f"trace file {file}", exc) from None
    if not events:
        raise InputError(f"trace file {file}: empty; expected a JSON Lines run trace")


@trace_app.command("html")
def trace_html_cmd(
    file: Annotated[Path, typer.Argument(help="A trace .jsonl file.")],
    out: Annotated[
        Path | None, typer.Option(help="The page to write (default: FILE.html).")
    ] = None,
) -> None:
    """Write a run trace as an HTML page: team graph, each agent's messages, verdicts and
    rollbacks highlighted."""
    need_lab("overseer trace html")
    from overseer.bench.pages import trace_html
    from overseer.runtime import read_trace

    if not file.is_file():
        raise InputError(f"trace file {file}: not found")
    try:
        events = list(read_trace(file))
    except (ValueError, *READ_ERRORS) as exc:
        raise unreadable(f"trace file {file}", exc) from None
    if not events:
        raise InputError(f"trace file {file}: no events")
    target = out or file.with_suffix(".html")
    try:
        target.write_text(trace_html(events, title=file.stem), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out {target}: cannot write ({exc.strerror or exc})") from None
    out_console().print(f"trace page: {target}")
