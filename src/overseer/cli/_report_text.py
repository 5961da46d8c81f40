"""The text and JSON of a result store's comparison (`overseer bench`, `overseer report`): the
verdict (one sentence per configuration against the baseline, provenance and date), the
summary per configuration, then each configuration paired with the baseline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from overseer.bench import ResultRecord


def _baseline(records: Sequence[ResultRecord], configs: Sequence[str], baseline: str | None):
    from overseer.bench.reports import default_baseline

    return baseline or default_baseline(records, configs)


def report_doc(
    records: Sequence[ResultRecord], configs: Sequence[str], baseline: str | None
) -> dict[str, Any]:
    """JSON-ready: `verdict` (its sentences, then the provenance-and-date line), `rows`
    (summary per configuration), `baseline` and `paired` (one object per configuration, suite
    and model: the fields of `overseer.bench.stats.Paired`, NaN as null)."""
    from overseer.bench import summarize
    from overseer.bench.reports import paired_groups, verdict_lines

    base = _baseline(records, configs, baseline)
    rows = [asdict(r) for r in summarize(records, baseline=base, order=configs)]
    paired = (
        [
            {"suite": s, "model": m, **p.as_dict()}
            for s, m, p in paired_groups(records, base, configs)
        ]
        if base
        else []
    )
    verdict = verdict_lines(records, base, configs, acted_on(records))
    return {"verdict": verdict, "rows": rows, "baseline": base, "paired": paired}


def print_report(
    console: Console,
    records: Sequence[ResultRecord],
    configs: Sequence[str],
    baseline: str | None,
) -> None:
    """The verdict, the summary table, then the paired table when there is something to pair."""
    from overseer.bench import summarize, summary_table
    from overseer.bench.reports import paired_groups, paired_view, verdict_lines

    base = _baseline(records, configs, baseline)
    rows = summarize(records, baseline=base, order=configs)
    if not rows:
        console.print("no stored results match")
        return
    acted = acted_on(records)
    *lines, made = verdict_lines(records, base, configs, acted)
    plain = len(lines) // 2 if lines and not lines[0].startswith("No verdict") else len(lines)
    for i, line in enumerate(lines):  # the plain words first, the statistics after them
        console.print(f"{'verdict' if i < plain else 'statistics'}: {line}", soft_wrap=True)
    console.print(f"made: {made}", soft_wrap=True)
    console.print(summary_table(rows, baseline=base))
    paired = paired_groups(records, base, configs) if base else []
    if paired:
        console.print(paired_view(paired, base or ""))
    if acted:
        console.print(
            "acted on (tasks whose run trace holds a plug-in's verdict, a rule or a rollback): "
            + ", ".join(f"{c} {k}/{n}" for c, (k, n) in acted.items())
        )


def acted_on(records: Sequence[ResultRecord]) -> dict[str, tuple[int, int]]:
    """Per configuration with run traces found from the current directory: (runs in which a
    mechanism acted, runs with a trace). A direct call keeps no trace, so it is left out."""
    from overseer.bench.reports import acted_counts, trace_roots

    return acted_counts(records, trace_roots(None))
