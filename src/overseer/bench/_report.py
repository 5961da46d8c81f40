"""Summaries of stored results per configuration (accuracy with its interval, tokens, latency)
and the paired comparison of each configuration with a baseline (see `overseer.bench.stats`)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from rich.table import Table
from scipy.stats import binomtest

from overseer.bench._store import ResultRecord
from overseer.bench.stats import Paired, paired_table


@dataclass(frozen=True)
class SummaryRow:
    """One configuration's figures over its stored results. `n` counts every result; errors
    (no answer at all) are their own column, and accuracy with its interval is over the
    `n - errors` answered results (NaN when none). `unparsed` counts answered results in
    which the scorer found no answer (no letter, number or code): format failures."""

    config: str
    model: str
    suite: str
    n: int
    correct: int
    errors: int
    unparsed: int
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

    def lead_cells(self) -> list[str]:
        """The cells every table of the summary starts a row with (the terminal's and the
        page's): suite, model, config, n, errors, unparsed."""
        n, errors, unparsed = str(self.n), str(self.errors), str(self.unparsed)
        return [self.suite, self.model, self.config, n, errors, unparsed]

    def vs_baseline(self) -> str:
        """Tokens relative to the baseline as a cell, e.g. `0.85x` (`-` without a baseline)."""
        return "-" if self.tokens_vs_baseline is None else f"{self.tokens_vs_baseline:.2f}x"


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
        unparsed = sum(r.error is None and r.parsed is None for r in recs)
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
                unparsed=unparsed,
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
        "unparsed",
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
            *r.lead_cells(),
            "-" if math.isnan(r.accuracy) else f"{r.accuracy:.3f}",
            "-" if math.isnan(r.ci_low) else f"{r.ci_low:.2f}-{r.ci_high:.2f}",
            f"{r.mean_tokens:.0f}",
            f"{r.p90_tokens:.0f}",
            f"{r.mean_prompt:.0f}",
            f"{r.mean_cached:.0f}",
            f"{r.mean_completion:.0f}",
            r.vs_baseline(),
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


def default_baseline(records: Sequence[ResultRecord], order: Sequence[str] = ()) -> str | None:
    """The configuration others are compared with when none is named: the first of `order`,
    else the one whose first result was stored first (the first a bench run ran)."""
    if order:
        return order[0]
    first = min(records, key=lambda r: r.finished_at, default=None)
    return first.key.config if first is not None else None


def paired_groups(
    records: Iterable[ResultRecord], baseline: str, order: Sequence[str] = (), *, seed: int = 0
) -> list[tuple[str, str, Paired]]:
    """(suite, model, paired figures) of each configuration against `baseline`, per suite and
    model the baseline has results in; configurations in `order`, then by name."""
    groups: dict[tuple[str, str], list[ResultRecord]] = defaultdict(list)
    for r in records:
        groups[(r.key.suite, r.key.model)].append(r)
    rank = {name: i for i, name in enumerate(order)}
    out = []
    for (suite, model), recs in sorted(groups.items()):
        configs = {r.key.config for r in recs}
        if baseline not in configs:
            continue
        ordered = sorted(configs, key=lambda c: (rank.get(c, len(rank)), c))
        out += [(suite, model, p) for p in paired_table(recs, baseline, ordered, seed=seed)]
    return out


def _num(x: float, fmt: str) -> str:
    return "-" if math.isnan(x) else format(x, fmt)


def paired_view(rows: Sequence[tuple[str, str, Paired]], baseline: str) -> Table:
    """A rich table of paired rows: n, errors apart, accuracies and their difference, the
    exact McNemar p, wins/losses/ties, and the token ratio with its 95% bootstrap interval."""
    t = Table(title=f"paired vs {baseline} (same task and seed; errored pairs left out of n)")
    for col in ("suite", "model", "config"):
        t.add_column(col, justify="left")
    accuracy = ("n", "err base", "err conf", "acc base", "acc conf", "diff", "McNemar p", "W/L/T")
    for col in (*accuracy, "tok ratio", "95% CI"):
        t.add_column(col, justify="right")
    for suite, model, p in rows:
        t.add_row(
            suite,
            model,
            p.config,
            str(p.n),
            str(p.errors_baseline),
            str(p.errors_config),
            _num(p.acc_baseline, ".3f"),
            _num(p.acc_config, ".3f"),
            _num(p.diff, "+.3f"),
            _num(p.mcnemar_p, ".3g"),
            f"{p.wins}/{p.losses}/{p.ties}",
            _num(p.token_ratio, ".2f") + ("" if math.isnan(p.token_ratio) else "x"),
            "-" if math.isnan(p.ratio_lo) else f"{p.ratio_lo:.2f}-{p.ratio_hi:.2f}",
        )
    return t
