"""`overseer attribute PATH`: who failed, and at which step, for each failed run."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from overseer.cli._app import InputError, app, csv_list, out_console
from overseer.cli._io import emit_json
from overseer.cli._replay import PATH_HELP
from overseer.traces import TraceFormatError, Trajectory, load_source
from overseer.traces.campaign import FREE_METHODS, METHODS, run
from overseer.traces.evaluate import Accuracy, Comparison, ResultStore, Row, accuracy, compare

if TYPE_CHECKING:
    from overseer.models import Model


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


def _acc_table(accs: list[Accuracy]) -> Table:
    t = Table(title="attribution accuracy (Wilson 95% intervals)")
    for c in (
        "method",
        "model",
        "split",
        "truth",
        "n",
        "agent",
        "step",
        "tokens/log",
        "s/log",
        "outcomes",
    ):
        t.add_column(
            c, justify="left" if c in ("method", "model", "split", "outcomes") else "right"
        )
    for a in accs:
        t.add_row(
            a.method,
            a.model,
            a.split,
            "yes" if a.with_truth else "no",
            str(a.n),
            f"{a.agent:.1%} [{a.agent_lo:.0%}, {a.agent_hi:.0%}]",
            f"{a.step:.1%} [{a.step_lo:.0%}, {a.step_hi:.0%}]",
            f"{a.tokens_per_log:,.0f}",
            f"{a.seconds_per_log:.1f}",
            ", ".join(f"{k} {v}" for k, v in sorted(a.outcomes.items())),
        )
    return t


def _print_row(r: Row) -> None:
    a = r.attribution
    truth = " +truth" if r.with_truth else ""
    mark = (
        ""
        if not r.split.startswith("whowhen")
        else f" [agent {'ok' if r.agent_ok else 'x'}, step {'ok' if r.step_ok else 'x'}]"
    )
    typer.echo(
        f"{r.log_id} {a.method}{truth}: agent {a.agent}, step {a.step}{mark} ({a.outcome}) "
        f"{' '.join(a.reason.split())[:160]}",
        err=True,
    )


def _truths(truth: str) -> list[bool]:
    """Whether the judge sees the correct answer, per --truth (no, yes or both)."""
    truths = {"no": [False], "yes": [True], "both": [False, True]}.get(truth)
    if truths is None:
        raise InputError(f"--truth {truth!r}: expected no, yes or both")
    return truths


def _failed_logs(path: str) -> list[Trajectory]:
    """The failed runs of `path` (InputError: unreadable, or none failed)."""
    try:
        logs = [t for t in load_source(path) if t.outcome != "succeeded"]
    except TraceFormatError as exc:
        raise InputError(str(exc)) from None
    if not logs:
        raise InputError(f"{path}: no failed run to attribute")
    return logs


def _judge(names: list[str], model: str | None, window: int, threads: int | None) -> Model | None:
    """The judge model when a named method needs one (None for the LLM-free methods)."""
    if all(n in FREE_METHODS for n in names):
        return None
    if model is None:
        raise InputError("--model: an LLM judge method needs a model name")
    from overseer.models import load_model

    return load_model(model, n_ctx=window, n_threads=threads)


@app.command("attribute")
def attribute_cmd(
    path: Annotated[str, typer.Argument(help=PATH_HELP)],
    method: Annotated[
        str, typer.Option(help=f"Comma list of {', '.join(METHODS)}; or all, free (LLM-free).")
    ] = "learned",
    model: Annotated[
        str | None, typer.Option(help="Judge model (local name or openai:NAME).")
    ] = None,
    truth: Annotated[
        str, typer.Option(help="Give the judge the correct answer: no, yes, both.")
    ] = "no",
    sample: Annotated[int | None, typer.Option(help="Judges: a seeded subset of N logs.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of folds, subset and random baseline.")] = 0,
    window: Annotated[int, typer.Option(help="Judge model's context window (tokens).")] = 8192,
    threads: Annotated[int | None, typer.Option(help="llama.cpp threads.")] = None,
    store: Annotated[str | None, typer.Option(help="SQLite result store (resumable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Name the responsible agent, the decisive step and a one-line reason for each failed run.
    On annotated logs (Who&When) it also prints accuracy with 95% intervals and exact McNemar
    tests against the first method given."""
    names, truths, logs = _methods(method), _truths(truth), _failed_logs(path)
    judge = _judge(names, model, window, threads)
    split = path if path.startswith("whowhen") else "logs"
    annotated = all(t.annotation is not None for t in logs)
    db = ResultStore(store) if store else None
    start = time.perf_counter()
    try:
        rows = run(
            logs,
            names,
            split=split,
            model=judge,
            truths=truths,
            seed=seed,
            judge_sample=sample,
            window=window,
            store=db,
            on_row=_print_row if annotated else None,  # progress lines for evaluations
        )
        if db is not None:  # report what the store holds for these logs (a resumed run too)
            rows = _stored_rows(db, logs, split, names)
    finally:
        if db is not None:
            db.close()
        if judge is not None:
            judge.close()
    secs = time.perf_counter() - start
    _emit(rows, names, split, truths, as_json, secs, annotated=annotated)


def _stored_rows(
    db: ResultStore, logs: list[Trajectory], split: str, names: list[str]
) -> list[Row]:
    """What the store holds for these logs and methods (a resumed run's earlier rows too)."""
    ids = {t.id for t in logs}
    return [r for r in db.rows() if r.split == split and r.log_id in ids and r.method in names]


def _attribution_doc(
    rows: list[Row], accs: list[Accuracy], comps: list[Comparison], secs: float
) -> dict[str, object]:
    """The attributions, accuracies and comparisons as JSON."""
    return {
        "seconds": round(secs, 1),
        "attributions": [
            {
                "log": r.log_id,
                "with_truth": r.with_truth,
                "model": r.model,
                **{k: v for k, v in r.attribution.__dict__.items() if k != "log_id"},
                "agent_ok": r.agent_ok,
                "step_ok": r.step_ok,
            }
            for r in rows
        ],
        "accuracy": [a.as_dict() for a in accs],
        "comparisons": [c.__dict__ for c in comps],
    }


def _emit(
    rows: list[Row],
    names: list[str],
    split: str,
    truths: list[bool],
    as_json: bool,
    secs: float,
    *,
    annotated: bool,
) -> None:
    accs = accuracy(rows) if annotated else []
    comps = (
        [compare(rows, names[0], b, split, wt) for wt in truths for b in names[1:]]
        if annotated
        else []
    )
    if as_json:
        emit_json(_attribution_doc(rows, accs, comps, secs))
        return
    out = out_console()
    if not annotated:
        for r in rows:
            a = r.attribution
            out.print(
                f"{r.log_id}: {a.agent} at step {a.step} ({a.method}): "
                + " ".join(a.reason.split())[:200]
            )
    else:
        out.print(_acc_table(accs))
        for c in comps:
            out.print(
                f"{c.a} vs {c.b} ({'truth' if c.with_truth else 'no truth'}, n={c.n}): agent "
                f"{c.agent_wins}-{c.agent_losses} p={c.agent_p:.3g}; step {c.step_wins}-"
                f"{c.step_losses} p={c.step_p:.3g}"
            )
    out.print(f"{len(rows)} attributions in {secs:.1f} s")
