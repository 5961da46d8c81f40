"""The statistics every layer may use (scipy): the exact McNemar test of two methods on the
same items and the Wilson interval of a proportion. Kept at the bottom of the package so that
`traces` (attribution) and `bench` (paired comparisons) share one implementation without one
importing the other."""

from __future__ import annotations

import math

from scipy.stats import binomtest


def mcnemar_exact(wins: int, losses: int) -> float:
    """Exact two-sided McNemar p-value: a binomial test of `wins` in `wins + losses` discordant
    pairs at p = 1/2 (1.0 when there is no discordant pair)."""
    if wins < 0 or losses < 0:
        raise ValueError(f"mcnemar_exact: expected counts >= 0, got {wins} wins, {losses} losses")
    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue)


def wilson(k: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson interval of `k` successes in `n` trials ((nan, nan) when n is 0)."""
    if n == 0:
        return math.nan, math.nan
    if not 0 <= k <= n:
        raise ValueError(f"wilson: expected 0 <= k <= n, got k = {k}, n = {n}")
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


__all__ = ["mcnemar_exact", "wilson"]
