"""What `overseer prune` prints: the training announcement, the pruned spec, the comparison
of the full and the pruned team on held-out tasks, the training cost and the cost model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from overseer.bench import ResultRecord
    from overseer.experiments.prune import PruneJob
    from overseer.runtime import TeamSpec


def announce(console: Console, job: PruneJob) -> None:
    """One line before the masks are trained: queries, samples, team, attack."""
    base = job.base
    console.print(
        f"training masks: {len(job.train_tasks)} {job.suite} train queries x {job.cfg.samples} "
        f"samples, team {base.name} ({len(base.spatial_edges)} spatial, "
        f"{len(base.temporal_edges)} temporal edges), attack {job.attack}"
    )


def print_spec(console: Console, out: Path, base: TeamSpec, pruned: TeamSpec, reused: bool) -> None:
    """Where the pruned spec is and how many edges it kept (and whether it was reused)."""
    if reused:
        console.print(f"reusing the pruned spec in {out} (same settings; --retrain to redo)")
    console.print(
        f"pruned spec: {out} ({len(pruned.spatial_edges)}/{len(base.spatial_edges)} spatial, "
        f"{len(pruned.temporal_edges)}/{len(base.temporal_edges)} temporal edges kept)"
    )


COMPARISON_COLUMNS = (
    "team",
    "edges S/T",
    "n",
    "acc",
    "err",
    "prompt/task",
    "compl/task",
    "prompt total",
    "compl total",
    "prompt vs full",
    "compl vs full",
)


def print_tables(
    console: Console,
    job: PruneJob,
    pruned: TeamSpec,
    recs: dict[str, list[ResultRecord]],
    training: dict[str, Any],
) -> None:
    """The full-vs-pruned comparison, the training cost and the cost model's table."""
    from rich.table import Table

    from overseer.experiments.prune import comparison_rows

    t = Table(title=f"full vs AgentPrune on held-out tasks (attack: {job.attack})")
    for col in COMPARISON_COLUMNS:
        t.add_column(col, justify="left" if col == "team" else "right")
    for row in comparison_rows(job.base, pruned, recs):
        t.add_row(*row)
    console.print(t)
    usage = training["report"]["usage"]
    console.print(
        f"training cost (M x Q' = {training['report']['runs']} team runs): "
        f"{usage['prompt_tokens']} prompt, {usage['completion_tokens']} completion tokens"
    )
    _print_cost_model(console, job, recs, training)


def _print_cost_model(
    console: Console, job: PruneJob, recs: dict[str, list[ResultRecord]], training: dict[str, Any]
) -> None:
    from rich.table import Table

    from overseer.experiments.prune import cost_model_table

    cm = cost_model_table(job.base, recs, training, ratio=job.ratio, samples=job.cfg.samples)
    if cm is None:
        return
    t = Table(
        title=f"agent prompt tokens over Q = {cm.queries} queries (Q' = {cm.train_queries} "
        f"train, {cm.test_queries} test)"
    )
    for col in ("", "cost model (eq. 14-17)", "measured"):
        t.add_column(col, justify="left" if not col else "right")
    for row in cm.rows:
        t.add_row(*row)
    console.print(t)
    console.print(
        f"measured averages: c_S = c_T = {cm.c_s:.1f}, c_q = {cm.c_q:.1f} tokens; "
        "* full-team tokens per test query scaled to all Q queries; the model charges "
        "temporal edges in every round, though the first round reads no previous one"
    )
