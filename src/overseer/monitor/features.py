"""Uncertainty features of one agent turn: entropy, varentropy, kurtosis at the decision tokens.

The seed (appendix A) defines, for a probability vector P:

    Entropy(P)    = -sum_p p log p
    Varentropy(P) =  sum_p p (log p + Entropy(P))^2
    Kurtosis(P)   =  sum_p p (-log p - Entropy(P))^4 / Varentropy(P)^2

Varentropy is the variance of the surprisal -log p, so it is never negative; the seed prints
it with a leading minus, a sign slip that would not change a monitor anyway (features are
min-max scaled and a polynomial ridge is symmetric under a feature's sign flip). Kurtosis is
0 when the varentropy is 0 (a one-hot or flat vector: the surprisal does not vary).

Like the seed with proprietary models, P is approximated by the top-k (k = 10) alternatives
the backend reports at a position, renormalised to sum to one. A turn's features are the
maxima over its decision positions (the tokens of the values after chosen JSON keys, e.g.
"action" and "character"), plus the turn count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from overseer.models import TokenLogprob
from overseer.models.positions import decision_positions, value_spans

__all__ = [
    "FEATURES",
    "TOP_K",
    "TurnFeatures",
    "decision_positions",
    "turn_features",
    "value_spans",
]

TOP_K = 10
FEATURES: tuple[str, ...] = ("entropy", "varentropy", "kurtosis")


def distribution(top: Sequence[tuple[str, float]] | Sequence[float], k: int = TOP_K) -> np.ndarray:
    """The top-k alternatives (logprobs, best first) renormalised into a probability vector."""
    lps = [float(t[1]) if isinstance(t, tuple) else float(t) for t in top][:k]
    if not lps:
        raise ValueError("top logprobs: expected at least one alternative, got none")
    arr = np.asarray(lps, dtype=float)
    if not np.all(np.isfinite(arr) | (arr == -np.inf)) or np.any(arr > 1e-6):
        raise ValueError(f"top logprobs: expected finite values <= 0, got {lps}")
    p = np.exp(arr - arr.max())
    return p / p.sum()


def entropy(p: np.ndarray) -> float:
    """Shannon entropy in nats: -sum p log p (zero-probability entries contribute nothing)."""
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def varentropy(p: np.ndarray) -> float:
    """Variance of the surprisal: sum p (log p + H)^2."""
    nz = p[p > 0]
    h = entropy(p)
    return float((nz * (np.log(nz) + h) ** 2).sum())


def kurtosis(p: np.ndarray) -> float:
    """Fourth moment of the surprisal over the squared varentropy; 0 when varentropy is 0."""
    nz = p[p > 0]
    h = entropy(p)
    v = varentropy(p)
    if v <= 1e-12:
        return 0.0
    return float((nz * (-np.log(nz) - h) ** 4).sum() / v**2)


def position_stats(top: Sequence[tuple[str, float]], k: int = TOP_K) -> tuple[float, float, float]:
    """(entropy, varentropy, kurtosis) of one position's renormalised top-k distribution."""
    p = distribution(top, k)
    return entropy(p), varentropy(p), kurtosis(p)


@dataclass(frozen=True)
class TurnFeatures:
    """A turn's monitor input: max entropy/varentropy/kurtosis over its decision positions.

    `positions` is how many positions were used; `fallback` says no decision token was found
    and every generated token was used instead.
    """

    turn: int
    entropy: float
    varentropy: float
    kurtosis: float
    positions: int
    fallback: bool = False

    def vector(self, names: Sequence[str]) -> list[float]:
        """The named features in order (`turn` included where named)."""
        d = asdict(self)
        return [float(d[n]) for n in names]


def turn_features(
    tokens: Sequence[TokenLogprob] | None,
    keys: Sequence[str],
    turn: int,
    *,
    k: int = TOP_K,
    positions: Sequence[int] = (),
) -> TurnFeatures:
    """Features of one generation: max of each statistic over the decision positions
    (`positions` when the caller found them, else the numbers after `keys`)."""
    if not tokens:
        raise ValueError(
            "logprobs: expected per-token top-k logprobs (call the model with top_logprobs=10)"
        )
    idx = [i for i in positions if 0 <= i < len(tokens)] or decision_positions(tokens, keys)
    fallback = not idx
    if fallback:
        idx = list(range(len(tokens)))
    stats = []
    for i in idx:
        top = tokens[i].top or ((tokens[i].token, tokens[i].logprob),)
        stats.append(position_stats(top, k))
    arr = np.asarray(stats)
    h, v, kurt = (float(x) for x in arr.max(axis=0))
    if not all(math.isfinite(x) for x in (h, v, kurt)):
        raise ValueError(f"turn {turn}: non-finite uncertainty features {h}, {v}, {kurt}")
    return TurnFeatures(turn, h, v, kurt, len(idx), fallback)
