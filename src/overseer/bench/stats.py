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
from scipy.stats import norm

from overseer.bench._store import ResultRecord
from overseer.stats import mcnemar_exact

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


def paired_diff_ci(wins: int, losses: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """An interval for the difference of paired proportions (config minus baseline) from
    `wins` and `losses` among `n` pairs: Agresti and Min's (2005) adjusted Wald interval (half
    a pair added to each cell), which stays honest with no discordant pair. NaN when n = 0."""
    if n <= 0:
        return math.nan, math.nan
    if wins < 0 or losses < 0 or wins + losses > n:
        raise ValueError(
            f"paired_diff_ci: expected 0 <= wins + losses <= n, got {wins}, {losses}, {n}"
        )
    z = float(norm.ppf(0.5 + level / 2))
    b, c, m = wins + 0.5, losses + 0.5, n + 2
    d = (b - c) / m
    se = math.sqrt(max((b + c) - (b - c) ** 2 / m, 0.0)) / m
    return max(-1.0, d - z * se), min(1.0, d + z * se)


def newcombe_paired(
    both: int, wins: int, losses: int, n: int, *, level: float = 0.95
) -> tuple[float, float]:
    """Newcombe's (1998, method 10) score interval for a difference of paired proportions
    (config minus baseline) from the pairs right on both sides (`both`), right only with the
    config (`wins`), only with the baseline (`losses`), among `n`: built from the two Wilson
    intervals and the pairs' correlation, it falls below zero when it should (a run with no
    loss and few wins is not automatically non-inferior, as a percentile bootstrap makes it)."""
    from overseer.stats import wilson

    neither = n - both - wins - losses
    if n <= 0 or min(both, wins, losses, neither) < 0:
        raise ValueError(f"newcombe_paired: expected cell counts >= 0 summing to n = {n}")
    p1, p2 = (both + wins) / n, (both + losses) / n
    (l1, u1), (l2, u2) = wilson(both + wins, n, level=level), wilson(both + losses, n, level=level)
    margins = [(both + wins), (losses + neither), (both + losses), (wins + neither)]
    cross = both * neither - wins * losses
    num = max(cross - n / 2, 0.0) if cross > 0 else float(cross)
    phi = num / math.sqrt(math.prod(margins)) if all(margins) else 0.0
    d = p1 - p2
    lo = math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    hi = math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return max(-1.0, d - lo), min(1.0, d + hi)


#: How a page states its power, in the page's words.
POWER_METHOD = (
    "minimum detectable effect (MDE) of a paired comparison, two-sided alpha = 0.05, power "
    "0.8: for accuracy the normal approximation to McNemar's test (Connor 1987) with the "
    "observed share of discordant pairs (at least the effect itself, since an effect of d "
    "needs at least a share d of discordant pairs); for tokens a paired normal approximation "
    "on the per-task log token ratio with its observed spread (from 5 pairs on)"
)
MIN_TOKEN_PAIRS = 5  # below this the spread of the log ratios is no estimate at all


def _z(alpha: float, power: float) -> tuple[float, float]:
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha, power: expected both in (0, 1), got {alpha}, {power}")
    return float(norm.ppf(1 - alpha / 2)), float(norm.ppf(power))


def mcnemar_power(n: int, effect: float, discordance: float, *, alpha: float = 0.05) -> float:
    """Power of McNemar's test on `n` pairs for a difference `effect` of paired proportions
    when a share `discordance` of pairs is discordant (raised to |effect| if below it), by
    Connor's (1987) normal approximation."""
    za, _ = _z(alpha, 0.5)
    d = abs(effect)
    pd = max(discordance, d)
    if n <= 0 or d == 0:
        return alpha / 2 if n > 0 else 0.0
    spread = math.sqrt(max(pd - d * d, 0.0))
    top = math.sqrt(n) * d - za * math.sqrt(pd)
    if spread == 0:
        return 1.0 if top > 0 else 0.0
    return float(norm.cdf(top / spread))


def mcnemar_n(effect: float, discordance: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Pairs needed to detect a difference `effect` of paired proportions with McNemar's test
    (Connor 1987), the discordant share `discordance` raised to |effect| if below it."""
    za, zb = _z(alpha, power)
    d = abs(effect)
    if not 0 < d <= 1:
        raise ValueError(f"mcnemar_n: effect expected in (0, 1], got {effect}")
    pd = min(max(discordance, d), 1.0)
    n = (za * math.sqrt(pd) + zb * math.sqrt(max(pd - d * d, 0.0))) ** 2 / (d * d)
    return max(1, math.ceil(n - 1e-9))


def mcnemar_mde(n: int, discordance: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest difference of paired proportions McNemar's test detects on `n` pairs with
    the given power (see `mcnemar_power`); NaN when no effect up to 1 is detectable."""
    _z(alpha, power)
    if n <= 0 or mcnemar_power(n, 1.0, 1.0, alpha=alpha) < power:
        return math.nan
    lo, hi = 0.0, 1.0
    for _ in range(60):  # power rises with the effect: bisect
        mid = (lo + hi) / 2
        if mcnemar_power(n, mid, discordance, alpha=alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def ratio_mde(spread: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest relative token change (e.g. 0.12 for 12%) a paired comparison on `n`
    pairs detects when per-task log token ratios spread with standard deviation `spread`
    (normal approximation); NaN below 2 pairs."""
    za, zb = _z(alpha, power)
    if n < 2:
        return math.nan
    return 1 - math.exp(-(za + zb) * spread / math.sqrt(n))


def ratio_n(ratio: float, spread: float, *, alpha: float = 0.05, power: float = 0.8) -> int:
    """Pairs needed to detect a token ratio `ratio` (e.g. 0.76) at this log-ratio spread."""
    za, zb = _z(alpha, power)
    if ratio <= 0 or ratio == 1:
        raise ValueError(f"ratio_n: ratio expected > 0 and != 1, got {ratio}")
    return max(2, math.ceil(((za + zb) * spread / abs(math.log(ratio))) ** 2 - 1e-9))


@dataclass(frozen=True)
class Power:
    """What a paired comparison of `n` pairs can detect (see POWER_METHOD), and the pairs
    the paper's effects would need: accuracy in proportions, tokens as relative changes."""

    n: int
    discordance: float  # observed share of discordant pairs
    mde: float  # accuracy: smallest detectable difference (NaN: none at this n)
    log_ratio_sd: float  # spread of the per-task log token ratio (NaN: below 5 pairs)
    mde_tokens: float  # smallest detectable relative token change
    n_for_paper: int | None = None  # pairs needed for the paper's accuracy effect
    n_for_paper_tokens: int | None = None  # pairs needed for the paper's token ratio


def paired_power(
    records: Iterable[ResultRecord],
    baseline: str,
    config: str,
    *,
    paper_diff: float | None = None,
    paper_ratio: float | None = None,
) -> Power:
    """The power of `config` against `baseline` on their common pairs (as `paired` counts
    them), with the pairs the paper's accuracy difference and token ratio would need."""
    recs = list(records)
    base, conf = _by_pair(recs, baseline), _by_pair(recs, config)
    common = sorted(base.keys() & conf.keys())
    clean = [k for k in common if base[k].error is None and conf[k].error is None]
    n = len(clean)
    disc = sum(base[k].correct != conf[k].correct for k in clean) / n if n else 0.0
    logs = [
        math.log(conf[k].usage.total_tokens / base[k].usage.total_tokens)
        for k in common
        if base[k].usage.total_tokens > 0 and conf[k].usage.total_tokens > 0
    ]
    sd = float(np.std(logs, ddof=1)) if len(logs) >= MIN_TOKEN_PAIRS else math.nan
    need = mcnemar_n(paper_diff, disc) if paper_diff else None
    need_t = ratio_n(paper_ratio, sd) if paper_ratio and not math.isnan(sd) else None
    mde_t = ratio_mde(sd, len(logs)) if not math.isnan(sd) else math.nan
    return Power(n, disc, mcnemar_mde(n, disc), sd, mde_t, need, need_t)


__all__ = [
    "POWER_METHOD",
    "Paired",
    "Power",
    "bootstrap_ratio",
    "mcnemar_exact",
    "mcnemar_mde",
    "mcnemar_n",
    "mcnemar_power",
    "paired",
    "paired_diff_ci",
    "paired_power",
    "paired_table",
    "ratio_mde",
    "ratio_n",
]
