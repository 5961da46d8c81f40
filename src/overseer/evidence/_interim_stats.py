"""Paired statistics as in the `overseer.bench.stats` contract, used only until that module is
merged into this branch (then `_compare` imports it and this file goes)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from overseer.bench import ResultRecord


@dataclass(frozen=True)
class Paired:
    """`config` against `baseline` on the (task, seed) pairs both have, errors kept apart."""

    baseline: str
    config: str
    n: int
    errors_baseline: int
    errors_config: int
    acc_baseline: float
    acc_config: float
    diff: float
    wins: int
    losses: int
    ties: int
    mcnemar_p: float
    token_ratio: float
    ratio_lo: float
    ratio_hi: float


def mcnemar_exact(wins: int, losses: int) -> float:
    """Exact two-sided McNemar p-value: a binomial test on the discordant pairs."""
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5).pvalue)


def bootstrap_ratio(
    base: Sequence[float], conf: Sequence[float], *, seed: int = 0, n_boot: int = 10_000
) -> tuple[float, float, float]:
    """sum(conf)/sum(base) and its paired bootstrap 95% interval (pairs resampled)."""
    b, c = np.asarray(base, dtype=float), np.asarray(conf, dtype=float)
    if len(b) == 0 or b.sum() == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(b), size=(n_boot, len(b)))
    bs, cs = b[idx].sum(axis=1), c[idx].sum(axis=1)
    ratios = cs[bs > 0] / bs[bs > 0]
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(c.sum() / b.sum()), float(lo), float(hi)


def paired(records: Iterable[ResultRecord], baseline: str, config: str, *, seed: int = 0) -> Paired:
    """`config` vs `baseline` on their common (task, seed) pairs; errored pairs are counted."""
    by: dict[str, dict[tuple[str, str, int], ResultRecord]] = {baseline: {}, config: {}}
    for r in records:
        if r.key.config in by:
            by[r.key.config][(r.key.suite, r.key.task_id, r.key.seed)] = r
    common = sorted(set(by[baseline]) & set(by[config]))
    pairs = [(by[baseline][k], by[config][k]) for k in common]
    err_b = sum(b.error is not None for b, _ in pairs)
    err_c = sum(c.error is not None for _, c in pairs)
    ok = [(b, c) for b, c in pairs if b.error is None and c.error is None]
    wins = sum(c.correct and not b.correct for b, c in ok)
    losses = sum(b.correct and not c.correct for b, c in ok)
    n = len(ok)
    acc_b = sum(b.correct for b, _ in ok) / n if n else float("nan")
    acc_c = sum(c.correct for _, c in ok) / n if n else float("nan")
    ratio, lo, hi = bootstrap_ratio(
        [b.usage.total_tokens for b, _ in ok], [c.usage.total_tokens for _, c in ok], seed=seed
    )
    return Paired(baseline, config, n, err_b, err_c, acc_b, acc_c, acc_c - acc_b, wins, losses,
                  n - wins - losses, mcnemar_exact(wins, losses), ratio, lo, hi)  # fmt: skip


def paired_table(
    records: Iterable[ResultRecord], baseline: str, configs: Sequence[str]
) -> list[Paired]:
    """`paired` of each configuration (but the baseline) against the baseline."""
    recs = list(records)
    return [paired(recs, baseline, c) for c in configs if c != baseline]
