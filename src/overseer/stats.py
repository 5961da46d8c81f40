"""The statistics every layer may use: the exact McNemar test of two methods on the same items
and the Wilson interval of a proportion. Kept at the bottom of the package so that `traces`
(attribution) and `bench` (paired comparisons) share one implementation without one importing
the other. Written with the standard library (exact binomial sums, `statistics.NormalDist`), so
nothing here needs scipy, which only the `bench` and `train` extras bring; the values equal
scipy's `binomtest(...).pvalue` and `.proportion_ci(method="wilson")` to 1e-12 relative
(tests/test_stats.py)."""

from __future__ import annotations

import math
from statistics import NormalDist


def _binom_pmf(k: int, n: int) -> float:
    """P(X = k) for X ~ Binomial(n, 1/2), in log space so that large n does not underflow."""
    log = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    return math.exp(log)


def mcnemar_exact(wins: int, losses: int) -> float:
    """Exact two-sided McNemar p-value: a binomial test of `wins` in `wins + losses` discordant
    pairs at p = 1/2 (1.0 when there is no discordant pair)."""
    if wins < 0 or losses < 0:
        raise ValueError(f"mcnemar_exact: expected counts >= 0, got {wins} wins, {losses} losses")
    n = wins + losses
    if n == 0:
        return 1.0
    # at p = 1/2 the distribution is symmetric and unimodal: the outcomes as or less likely than
    # the observed one are the two tails from min(wins, losses) outwards, of equal mass
    tail = math.fsum(_binom_pmf(i, n) for i in range(min(wins, losses) + 1))
    return min(1.0, 2.0 * tail)


def wilson(k: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson interval of `k` successes in `n` trials ((nan, nan) when n is 0)."""
    if n == 0:
        return math.nan, math.nan
    if not 0 <= k <= n:
        raise ValueError(f"wilson: expected 0 <= k <= n, got k = {k}, n = {n}")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    denom = 2 * (n + z**2)
    centre = 2 * n * p + z**2
    spread = z * math.sqrt(z**2 + 4 * n * p * (1 - p))
    return (centre - spread) / denom, (centre + spread) / denom


__all__ = ["mcnemar_exact", "wilson"]
