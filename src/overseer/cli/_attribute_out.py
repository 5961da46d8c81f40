"""What `overseer attribute` prints: one line per attribution, or on annotated logs the
accuracy table and the McNemar comparisons; or one JSON document."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from overseer.cli._app import out_console
from overseer.cli._io import emit_json

if TYPE_CHECKING:
    from rich.table import Table

    from overseer.traces.evaluate import Accuracy, Comparison, Row

_ACC_COLUMNS = (
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
)


def _acc_table(accs: list[Accuracy]) -> Table:
    from rich.table import Table

    t = Table(title="attribution accuracy (Wilson 95% intervals)")
    for c in _ACC_COLUMNS:
        left = c in ("method", "model", "split", "outcomes")
        t.add_column(c, justify="left" if left else "right")
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


def print_row(r: Row) -> None:
    """One progress line (stderr) per attribution of an annotated log."""
    a = r.attribution
    truth = " +truth" if r.with_truth else ""
    mark = ""
    if r.split.startswith("whowhen"):
        mark = f" [agent {'ok' if r.agent_ok else 'x'}, step {'ok' if r.step_ok else 'x'}]"
    typer.echo(
        f"{r.log_id} {a.method}{truth}: agent {a.agent}, step {a.step}{mark} ({a.outcome}) "
        f"{' '.join(a.reason.split())[:160]}",
        err=True,
    )


def _doc(
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


def emit(
    rows: list[Row],
    names: list[str],
    setting: tuple[str, list[bool]],
    secs: float,
    *,
    annotated: bool,
    json_out: bool,
) -> None:
    """Print the attributions of the split and truth settings `setting` (accuracy and
    comparisons when the logs are annotated)."""
    from overseer.traces.evaluate import accuracy, compare

    split, truths = setting
    accs = accuracy(rows) if annotated else []
    comps = [compare(rows, names[0], b, split, wt) for wt in truths for b in names[1:]]
    comps = comps if annotated else []
    if json_out:
        emit_json(_doc(rows, accs, comps, secs))
        return
    out = out_console()
    if not annotated:
        for r in rows:
            a = r.attribution
            why = " ".join(a.reason.split())[:200]
            out.print(f"{r.log_id}: {a.agent} at step {a.step} ({a.method}): {why}")
    else:
        out.print(_acc_table(accs))
        for c in comps:
            out.print(
                f"{c.a} vs {c.b} ({'truth' if c.with_truth else 'no truth'}, n={c.n}): agent "
                f"{c.agent_wins}-{c.agent_losses} p={c.agent_p:.3g}; step {c.step_wins}-"
                f"{c.step_losses} p={c.step_p:.3g}"
            )
    out.print(f"{len(rows)} attributions in {secs:.1f} s")
