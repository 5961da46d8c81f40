"""`overseer attribute PATH`: who failed, and at which step, for each failed run."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from overseer.cli._app import InputError, Interrupted, app, csv_list
from overseer.cli._attribute_out import emit, print_row
from overseer.cli._hints import BENCHMARK_MODEL, model_name
from overseer.cli._lab import need_lab
from overseer.cli._names import FREE_METHODS, METHODS
from overseer.cli._replay import PATH_HELP, load_logs

if TYPE_CHECKING:
    from overseer.models import Model
    from overseer.traces import Trajectory
    from overseer.traces.evaluate import ResultStore, Row


def _methods(text: str) -> list[str]:
    names = csv_list(text, "--method")
    if names == ["all"]:
        return list(METHODS)
    if names == ["free"]:
        return list(FREE_METHODS)
    bad = [n for n in names if n not in METHODS]
    if bad:
        raise InputError(f"--method {bad[0]!r}: expected all, free or some of {', '.join(METHODS)}")
    return names


def _truths(truth: str) -> list[bool]:
    """Whether the judge sees the correct answer, per --truth (no, yes or both)."""
    truths = {"no": [False], "yes": [True], "both": [False, True]}.get(truth)
    if truths is None:
        raise InputError(f"--truth {truth!r}: expected no, yes or both")
    return truths


def _failed_logs(path: str) -> list[Trajectory]:
    """The failed runs of `path` (InputError: unreadable, or none failed)."""
    logs = [t for t in load_logs(path) if t.outcome != "succeeded"]
    if not logs:
        raise InputError(f"{path}: no failed run to attribute")
    return logs


def _judge(names: list[str], model: str | None, n_ctx: int, threads: int | None) -> Model | None:
    """The judge model when a named method needs one (None for the LLM-free methods)."""
    if all(n in FREE_METHODS for n in names):
        return None
    from overseer.models import load_model

    return load_model(model_name(model), n_ctx=n_ctx, n_threads=threads)


def _stored_rows(
    db: ResultStore, logs: list[Trajectory], split: str, names: list[str]
) -> list[Row]:
    """What the store holds for these logs and methods (a resumed run's earlier rows too)."""
    ids = {t.id for t in logs}
    return [r for r in db.rows() if r.split == split and r.log_id in ids and r.method in names]


@app.command("attribute")
def attribute_cmd(
    path: Annotated[str, typer.Argument(help=PATH_HELP)],
    method: Annotated[
        str, typer.Option(help=f"Comma list of {', '.join(METHODS)}; or all, free (LLM-free).")
    ] = "learned",
    model: Annotated[
        str | None,
        typer.Option(help=f"Judge model: local name or openai:NAME (default: {BENCHMARK_MODEL})."),
    ] = None,
    truth: Annotated[
        str, typer.Option(help="Give the judge the correct answer: no, yes, both.")
    ] = "no",
    sample: Annotated[int | None, typer.Option(help="Judges: a seeded subset of N logs.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of folds, subset and random baseline.")] = 0,
    n_ctx: Annotated[int, typer.Option(help="Context window of the judge model (tokens).")] = 8192,
    window: Annotated[int | None, typer.Option(hidden=True, help="Old name of --n-ctx.")] = None,
    threads: Annotated[int | None, typer.Option(help="llama.cpp threads (all cores).")] = None,
    store: Annotated[str | None, typer.Option(help="SQLite result store (resumable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Name the responsible agent, the decisive step and a one-line reason for each failed run.
    On annotated logs (Who&When) it also prints accuracy with 95% intervals and exact McNemar
    tests against the first method given."""
    need_lab("overseer attribute")
    from overseer.traces.evaluate import ResultStore

    n_ctx = window if window is not None else n_ctx
    names, truths, logs = _methods(method), _truths(truth), _failed_logs(path)
    judge = _judge(names, model, n_ctx, threads)
    split = path if path.startswith("whowhen") else "logs"
    annotated = all(t.annotation is not None for t in logs)
    db = ResultStore(store) if store else None
    start = time.perf_counter()
    try:
        rows = _attribute(logs, names, split, truths, judge, (seed, sample, n_ctx), db, annotated)
    finally:
        if db is not None:
            db.close()
        if judge is not None:
            judge.close()
    secs = time.perf_counter() - start
    emit(rows, names, (split, truths), secs, annotated=annotated, json_out=as_json)


def _attribute(
    logs: list[Trajectory],
    names: list[str],
    split: str,
    truths: list[bool],
    judge: Model | None,
    knobs: tuple[int, int | None, int],
    db: ResultStore | None,
    annotated: bool,
) -> list[Row]:
    """Run the methods (Ctrl-C: say what the store keeps); rows from the store when given."""
    from overseer.traces.campaign import run

    seed, sample, n_ctx = knobs
    try:
        rows = run(
            logs,
            names,
            split=split,
            model=judge,
            truths=truths,
            seed=seed,
            judge_sample=sample,
            window=n_ctx,
            store=db,
            on_row=print_row if annotated else None,  # progress lines for evaluations
        )
    except KeyboardInterrupt:
        kept = f"finished attributions are kept in {db.path}" if db else "nothing was stored"
        raise Interrupted(note=kept if db else f"{kept} (--store FILE keeps them)") from None
    return _stored_rows(db, logs, split, names) if db is not None else rows
