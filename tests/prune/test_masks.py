"""Edge masks: DAG sampling, log-probabilities checked by enumeration, closed-form gradients."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from overseer.prune import EdgeMasks
from overseer.prune.masks import GraphSample, _reaches
from overseer.runtime import make_team
from overseer.runtime._spec import topological_order


def three_agent_masks(seed: int = 1) -> EdgeMasks:
    """All six ordered pairs of 3 agents as spatial candidates, two temporal ones, uneven logits."""
    names = ["a1", "a2", "a3"]
    sp = list(itertools.permutations(names, 2))
    tp = [("a1", "a2"), ("a3", "a3")]
    rng = np.random.default_rng(seed)
    return EdgeMasks(
        names,
        sp,
        tp,
        [("a1", "a2"), ("a2", "a3")],
        [("a3", "a3")],
        spatial_logits=rng.normal(0, 1.2, len(sp)),
        temporal_logits=np.array([0.8, -1.1]),
    )


def enumerate_outcomes(m: EdgeMasks, order: tuple[int, ...]) -> list[tuple[GraphSample, float]]:
    """Every outcome of the sampling process for a fixed visit order, with its probability
    computed step by step (independently of `log_prob`)."""
    p, q = m.spatial_probs, m.temporal_probs
    out = []

    def rec(step: int, kept: np.ndarray, decided: np.ndarray, prob: float) -> None:
        if step == len(order):
            for bits in itertools.product([False, True], repeat=len(m.temporal)):
                t = np.array(bits, dtype=bool)
                pt = float(np.prod(np.where(t, q, 1 - q)))
                out.append((GraphSample(kept.copy(), decided.copy(), t, order), prob * pt))
            return
        k = order[step]
        a, b = (m.index[x] for x in m.spatial[k])
        adj = {i: set() for i in range(len(m.names))}
        for j in np.flatnonzero(kept):
            u, v = (m.index[x] for x in m.spatial[j])
            adj[u].add(v)
        if _reaches(adj, b, a):
            rec(step + 1, kept, decided, prob)
            return
        d = decided.copy()
        d[k] = True
        rec(step + 1, kept, d, prob * (1 - p[k]))
        k1 = kept.copy()
        k1[k] = True
        rec(step + 1, k1, d, prob * p[k])

    n = len(m.spatial)
    rec(0, np.zeros(n, bool), np.zeros(n, bool), 1.0)
    return out


def test_init_is_probability_one_half_and_one_round_has_no_temporal_candidates() -> None:
    team = make_team("complete", 4, rounds=1)
    m = EdgeMasks.from_team(team)
    assert np.allclose(m.spatial_probs, 0.5) and m.spatial == list(team.spatial_edges)
    assert m.temporal == []
    m2 = EdgeMasks.from_team(make_team("complete", 4, rounds=2, temporal="all"), candidates="all")
    assert len(m2.spatial) == 12 and len(m2.temporal) == 16 and np.allclose(m2.temporal_probs, 0.5)


def test_samples_are_dags_and_runnable_teams() -> None:
    team = make_team("complete", 5, rounds=2, temporal="all")
    m = EdgeMasks.from_team(team, candidates="all")
    m.spatial_logits[:] = 3.0  # almost every edge wants in: cycles must be refused
    rng = np.random.default_rng(0)
    skipped = 0
    for _ in range(200):
        s = m.sample(rng)
        sampled = m.apply(team, s)  # TeamSpec validation rejects cycles
        topological_order(sampled.names, sampled.spatial_edges)
        skipped += int((~s.decided).sum())
        assert not (s.spatial & ~s.decided).any()  # a skipped edge is never kept
    assert skipped > 0


def test_log_prob_sums_to_one_and_matches_enumeration_for_each_order() -> None:
    m = three_agent_masks()
    for order in itertools.permutations(range(6)):
        outs = enumerate_outcomes(m, order)
        total = sum(np.exp(m.log_prob(s)) for s, _ in outs)
        assert total == pytest.approx(1.0, abs=1e-12)
        for s, prob in outs:
            assert np.exp(m.log_prob(s)) == pytest.approx(prob, rel=1e-12)


def test_sampled_frequencies_match_exp_log_prob_for_a_fixed_order() -> None:
    m = three_agent_masks()
    order = (3, 0, 5, 1, 4, 2)
    outs = enumerate_outcomes(m, order)
    expected = {s.key(): np.exp(m.log_prob(s)) for s, _ in outs}
    rng = np.random.default_rng(7)
    n = 40_000
    counts = Counter(m.sample(rng, order=order).key() for _ in range(n))
    assert set(counts) <= set(expected)
    for key, p in expected.items():
        assert abs(counts[key] / n - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-3


def test_sampled_frequencies_match_the_marginal_over_random_orders() -> None:
    m = three_agent_masks(seed=3)
    marginal: Counter = Counter()
    orders = list(itertools.permutations(range(6)))
    for order in orders:
        for s, _ in enumerate_outcomes(m, order):
            marginal[s.key()] += np.exp(m.log_prob(s)) / len(orders)
    assert sum(marginal.values()) == pytest.approx(1.0)
    rng = np.random.default_rng(11)
    n = 40_000
    counts = Counter(m.sample(rng).key() for _ in range(n))
    for key, p in marginal.items():
        assert abs(counts[key] / n - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-3


def test_grad_log_prob_matches_finite_differences() -> None:
    m = three_agent_masks()
    rng = np.random.default_rng(5)
    for _ in range(20):
        s = m.sample(rng)
        gs, gt = m.grad_log_prob(s)
        h = 1e-6
        for arr, g in ((m.spatial_logits, gs), (m.temporal_logits, gt)):
            for k in range(len(arr)):
                arr[k] += h
                up = m.log_prob(s)
                arr[k] -= 2 * h
                down = m.log_prob(s)
                arr[k] += h
                assert g[k] == pytest.approx((up - down) / (2 * h), abs=1e-6)
        assert np.all(gs[~s.decided] == 0)


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ValueError, match="unknown agent"):
        EdgeMasks(["a"], [("a", "b")], [], [], [])
    m = EdgeMasks.from_team(make_team("chain", 3))
    with pytest.raises(ValueError, match="permutation"):
        m.sample(np.random.default_rng(0), order=(0, 0))
    with pytest.raises(ValueError, match="candidates"):
        EdgeMasks.from_team(make_team("chain", 3), candidates="some")  # type: ignore[arg-type]
