"""Summaries of stored results per configuration: accuracy with its interval, tokens, latency."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from rich.table import Table
from scipy.stats import binomtest

from overseer.bench._store import ResultRecord


@dataclass(frozen=True)
class SummaryRow:
    """One configuration's figures over its stored results. `n` counts every result; errors
    (no answer at all) are their own column, and accuracy with its interval is over the
    `n - errors` answered results (NaN when none)."""

    config: str
    model: str
    suite: str
    n: int
    correct: int
    errors: int
    accuracy: float
    ci_low: float
    ci_high: float
    mean_tokens: float
    p90_tokens: float
    mean_prompt: float
    mean_cached: float
    mean_completion: float
    mean_latency_s: float
    tokens_vs_baseline: float | None


def accuracy_ci(correct: int, n: int) -> tuple[float, float, float]:
    """Accuracy and its 95% Wilson interval; NaN for all three when there is nothing to score."""
    if n == 0:
        return math.nan, math.nan, math.nan
    ci = binomtest(correct, n).proportion_ci(confidence_level=0.95, method="wilson")
    return correct / n, float(ci.low), float(ci.high)


def summarize(
    records: Iterable[ResultRecord], *, baseline: str | None = None, order: Sequence[str] = ()
) -> list[SummaryRow]:
    """Group records by (config, model, suite); tokens are relative to `baseline`'s mean."""
    groups: dict[tuple[str, str, str], list[ResultRecord]] = defaultdict(list)
    for r in records:
        groups[(r.key.config, r.key.model, r.key.suite)].append(r)
    base_mean: dict[tuple[str, str], float] = {}
    for (cfg, model, suite), recs in groups.items():
        if cfg == baseline:
            base_mean[(model, suite)] = float(np.mean([r.usage.total_tokens for r in recs]))
    rows = []
    for (cfg, model, suite), recs in groups.items():
        n = len(recs)
        errors = sum(r.error is not None for r in recs)
        correct = sum(r.correct for r in recs if r.error is None)
        acc, low, high = accuracy_ci(correct, n - errors)
        total = np.array([r.usage.total_tokens for r in recs], dtype=float)
        mean_total = float(total.mean())
        base = base_mean.get((model, suite))
        rows.append(
            SummaryRow(
                config=cfg,
                model=model,
                suite=suite,
                n=n,
                correct=correct,
                errors=errors,
                accuracy=acc,
                ci_low=low,
                ci_high=high,
                mean_tokens=mean_total,
                p90_tokens=float(np.percentile(total, 90)),
                mean_prompt=float(np.mean([r.usage.prompt_tokens for r in recs])),
                mean_cached=float(np.mean([r.usage.cached_prompt_tokens for r in recs])),
                mean_completion=float(np.mean([r.usage.completion_tokens for r in recs])),
                mean_latency_s=float(np.mean([r.latency_s for r in recs])),
                tokens_vs_baseline=(mean_total / base) if base else None,
            )
        )
    rank = {name: i for i, name in enumerate(order)}
    rows.sort(key=lambda r: (r.suite, r.model, rank.get(r.config, len(rank)), r.config))
    return rows


def summary_table(rows: Sequence[SummaryRow], *, baseline: str | None = None) -> Table:
    """A rich table of summary rows, one line per configuration: n, errors, then accuracy
    and its interval over the answered results."""
    title = "results" + (f" (tokens relative to {baseline})" if baseline else "")
    t = Table(title=title)
    for col in (
        "suite",
        "model",
        "config",
        "n",
        "err",
        "acc",
        "95% CI",
        "tok mean",
        "tok p90",
        "prompt",
        "cached",
        "compl",
        "vs base",
        "lat s",
    ):
        t.add_column(col, justify="left" if col in ("suite", "model", "config") else "right")
    for r in rows:
        t.add_row(
            r.suite,
            r.model,
            r.config,
            str(r.n),
            str(r.errors),
            "-" if math.isnan(r.accuracy) else f"{r.accuracy:.3f}",
            "-" if math.isnan(r.ci_low) else f"{r.ci_low:.2f}-{r.ci_high:.2f}",
            f"{r.mean_tokens:.0f}",
            f"{r.p90_tokens:.0f}",
            f"{r.mean_prompt:.0f}",
            f"{r.mean_cached:.0f}",
            f"{r.mean_completion:.0f}",
            "-" if r.tokens_vs_baseline is None else f"{r.tokens_vs_baseline:.2f}x",
            f"{r.mean_latency_s:.2f}",
        )
    return t


def errors_table(records: Iterable[ResultRecord]) -> Table:
    """The errored results (config, task, seed and the error text), one line each."""
    t = Table(title="errors")
    for col in ("config", "model", "suite", "task", "seed", "error"):
        t.add_column(col, justify="right" if col == "seed" else "left", overflow="fold")
    for r in records:
        if r.error is not None:
            k = r.key
            t.add_row(k.config, k.model, k.suite, k.task_id, str(k.seed), r.error)
    return t
