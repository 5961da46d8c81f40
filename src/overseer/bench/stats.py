"""Paired statistics of two configurations run on the same (task, seed) pairs.

A configuration is compared with a baseline on the pairs both have (same model, suite, task and
seed): accuracy difference with an exact McNemar p-value (a two-sided binomial test on the
discordant pairs), wins/losses/ties, and the ratio of their net tokens with a seeded paired
bootstrap 95% interval. An errored result is neither right nor wrong: a pair where either side
errored is left out of the accuracy figures and counted apart. Tokens are each result's net
tokens (every actor: agents, decision, supervisor, verifier, monitor, watcher, planner,
trainer) over every common pair, errored ones included, since those tokens were spent too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import binomtest

from overseer.bench._store import ResultRecord

_Pair = tuple[str, str, str, int]  # model, suite, task id, seed


@dataclass(frozen=True)
class Paired:
    """`config` against `baseline` on the (task, seed) pairs both have, errors kept apart.

    `n` counts pairs where neither side errored; `diff` is config minus baseline accuracy;
    `wins`: config right and baseline wrong, `losses` the reverse, `ties` the same outcome.
    NaN marks a figure with nothing to compute it from (no pairs, no baseline tokens).
    """

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

    def as_dict(self) -> dict[str, object]:
        """The fields as a JSON-ready dict (NaN becomes None)."""
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in asdict(self).items()
        }


def mcnemar_exact(wins: int, losses: int) -> float:
    """Exact two-sided McNemar p-value: a binomial test of `wins` in `wins + losses` discordant
    pairs at p = 1/2 (1.0 when there is no discordant pair)."""
    if wins < 0 or losses < 0:
        raise ValueError(f"mcnemar_exact: expected counts >= 0, got {wins} wins, {losses} losses")
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)


def bootstrap_ratio(
    base: Sequence[float], conf: Sequence[float], *, seed: int = 0, n_boot: int = 10_000
) -> tuple[float, float, float]:
    """sum(conf) / sum(base) and its paired bootstrap 95% percentile interval: pairs are
    resampled with replacement (seeded), so each resample keeps a task's two costs together.
    NaN for all three without pairs or when the baseline spent no tokens."""
    b = np.asarray(base, dtype=float)
    c = np.asarray(conf, dtype=float)
    if b.shape != c.shape or b.ndim != 1:
        raise ValueError(
            f"bootstrap_ratio: expected two equal-length sequences, got {b.shape} and {c.shape}"
        )
    if n_boot < 1:
        raise ValueError(f"bootstrap_ratio: n_boot expected >= 1, got {n_boot}")
    if b.size == 0 or b.sum() <= 0:
        return math.nan, math.nan, math.nan
    ratio = float(c.sum() / b.sum())
    idx = np.random.default_rng(seed).integers(0, b.size, size=(n_boot, b.size))
    sb = b[idx].sum(axis=1)
    sc = c[idx].sum(axis=1)
    ok = sb > 0  # a resample of only zero-cost baseline pairs has no ratio
    boots = sc[ok] / sb[ok]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return ratio, float(lo), float(hi)


def _by_pair(records: Iterable[ResultRecord], config: str) -> dict[_Pair, ResultRecord]:
    return {
        (r.key.model, r.key.suite, r.key.task_id, r.key.seed): r
        for r in records
        if r.key.config == config
    }


def paired(records: Iterable[ResultRecord], baseline: str, config: str, *, seed: int = 0) -> Paired:
    """`config` against `baseline` on their common (model, suite, task, seed) pairs."""
    recs = list(records)
    base, conf = _by_pair(recs, baseline), _by_pair(recs, config)
    common = sorted(base.keys() & conf.keys())
    err_b = sum(base[k].error is not None for k in common)
    err_c = sum(conf[k].error is not None for k in common)
    clean = [k for k in common if base[k].error is None and conf[k].error is None]
    b_ok = np.array([base[k].correct for k in clean], dtype=bool)
    c_ok = np.array([conf[k].correct for k in clean], dtype=bool)
    wins, losses = int((c_ok & ~b_ok).sum()), int((b_ok & ~c_ok).sum())
    n = len(clean)
    acc_b = float(b_ok.mean()) if n else math.nan
    acc_c = float(c_ok.mean()) if n else math.nan
    ratio, lo, hi = bootstrap_ratio(
        [base[k].usage.total_tokens for k in common],
        [conf[k].usage.total_tokens for k in common],
        seed=seed,
    )
    return Paired(
        baseline=baseline,
        config=config,
        n=n,
        errors_baseline=err_b,
        errors_config=err_c,
        acc_baseline=acc_b,
        acc_config=acc_c,
        diff=acc_c - acc_b,
        wins=wins,
        losses=losses,
        ties=n - wins - losses,
        mcnemar_p=mcnemar_exact(wins, losses),
        token_ratio=ratio,
        ratio_lo=lo,
        ratio_hi=hi,
    )


def paired_table(
    records: Iterable[ResultRecord], baseline: str, configs: Sequence[str], *, seed: int = 0
) -> list[Paired]:
    """`paired` of each configuration (the baseline itself left out) against `baseline`."""
    recs = list(records)
    return [paired(recs, baseline, c, seed=seed) for c in configs if c != baseline]


__all__ = ["Paired", "bootstrap_ratio", "mcnemar_exact", "paired", "paired_table"]
