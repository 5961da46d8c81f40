"""`overseer trace show` (a run trace, readably) and the printed result of `overseer run`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from overseer.cli._app import CommandFailed, InputError, app, out_console
from overseer.cli._io import emit_json, strip_controls
from overseer.runtime import RunResult, read_trace
from overseer.runtime.books import describe_event

trace_app = typer.Typer(help="Read run traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


def _usage_table(res: RunResult) -> Table:
    t = Table(title=f"tokens by actor (run {res.run_id})")
    for col in ("actor", "calls", "prompt", "cached", "completion", "total"):
        t.add_column(col, justify="left" if col == "actor" else "right")
    for actor, u in sorted(res.usage_by_actor.items()):
        t.add_row(
            actor,
            str(res.calls_by_actor.get(actor, 0)),
            str(u.prompt_tokens),
            str(u.cached_prompt_tokens),
            str(u.completion_tokens),
            str(u.total_tokens),
        )
    tot = res.total
    t.add_row(
        "net",
        str(sum(res.calls_by_actor.values())),
        str(tot.prompt_tokens),
        str(tot.cached_prompt_tokens),
        str(tot.completion_tokens),
        str(tot.total_tokens),
        style="bold",
    )
    return t


def run_failure(res: RunResult, backend: str = "the model") -> str | None:
    """Why a run did not do what it was asked: a stop in error, every model call failed (a
    context-window stop included), or an empty answer (stop reason empty_answer)."""
    if res.stop_reason == "error":
        return f"run {res.run_id} stopped in error: {res.error}"
    detail = res.calls_all_failed()
    if detail is not None:
        return f"run {res.run_id}: every model call failed (backend {backend}): {detail}"
    if res.stop_reason == "empty_answer":
        return (
            f"run {res.run_id}: the answer is empty (stop reason empty_answer: every reply "
            f"was unparsable or empty); trace {res.trace_path}"
        )
    return None


def result_doc(res: RunResult, the_task: Any) -> dict[str, Any]:
    """The result of `overseer run` as one JSON-ready document."""
    from dataclasses import asdict

    from overseer.tasks import score

    doc: dict[str, Any] = {
        "run_id": res.run_id,
        "answer": res.answer,
        "stop_reason": res.stop_reason,
        "error": res.error,
        "rounds": res.rounds,
        "failures": [asdict(f) for f in res.failures],
        "usage": asdict(res.total),
        "by_actor": {
            a: {**asdict(u), "calls": res.calls_by_actor.get(a, 0)}
            for a, u in sorted(res.usage_by_actor.items())
        },
        "trace": str(res.trace_path),
    }
    if the_task is not None:
        sc = score(the_task, res.answer)
        doc["task"] = {
            "id": the_task.id,
            "gold": the_task.answer,
            "parsed": sc.parsed,
            "correct": sc.correct,
        }
    return doc


def print_result(res: RunResult, the_task: Any) -> None:
    from overseer.tasks import score

    console = out_console()
    console.print(f"answer ({res.stop_reason}):", style="bold")
    console.print(strip_controls(res.answer))
    if the_task is not None:
        sc = score(the_task, res.answer)
        console.print(
            f"task {the_task.id}: gold {the_task.answer!r}, parsed {sc.parsed!r}, "
            f"correct {sc.correct}",
        )
    for f in res.failures:
        console.print(f"agent {f.agent} failed in round {f.round}: {f.reason}: {f.detail}")
    if res.error:
        console.print(f"stopped: {res.error}")
    console.print(_usage_table(res))
    console.print(f"trace: {res.trace_path}")


@trace_app.command("show")
def trace_show(
    file: Annotated[Path, typer.Argument(help="A trace .jsonl file.")],
    full: Annotated[bool, typer.Option(help="Print model prompts and outputs too.")] = False,
) -> None:
    """Print a run trace readably: rounds, calls, interactions, verdicts, messages."""
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
    except (ValueError, KeyError) as exc:
        raise InputError(f"trace file {file}: {exc}") from None
    if not events:
        raise InputError(f"trace file {file}: empty; expected a JSON Lines run trace")


def report_run(
    res: Any, the_task: Any, *, json_out: bool, allow_errors: bool, backend: str = "the model"
) -> None:
    """Print the result (or one JSON document); a run that failed (see `run_failure`) is one
    line naming `backend` and exit 1."""
    if json_out:
        emit_json(result_doc(res, the_task))
    else:
        print_result(res, the_task)
    failure = run_failure(res, backend)
    if failure and not allow_errors:
        raise CommandFailed(failure)
