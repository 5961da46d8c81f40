"""Paired statistics (overseer.bench.stats) against hand-computed values and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overseer.bench import ResultRecord
from overseer.bench._store import ResultKey
from overseer.bench.stats import bootstrap_ratio, mcnemar_exact, paired, paired_table
from overseer.models import Usage


def rec(
    config: str, task: int, correct: bool, tokens: int, *, seed: int = 0, error: str | None = None
) -> ResultRecord:
    return ResultRecord(
        key=ResultKey(config, "m", "s", f"t/{task}", seed),
        answer="",
        parsed=None,
        correct=correct,
        score=float(correct),
        usage_by_actor={"agent:a": Usage(tokens, 0), "supervisor:s": Usage(0, 0)},
        latency_s=0.0,
        error=error,
    )


def test_mcnemar_exact_hand_values() -> None:
    # 8 vs 2 discordant: 2 * P(X <= 2), X ~ Bin(10, 1/2) = 2 * 56/1024
    assert mcnemar_exact(8, 2) == pytest.approx(0.109375)
    assert mcnemar_exact(2, 8) == pytest.approx(0.109375)
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 3) == pytest.approx(1.0)
    assert mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError, match="counts >= 0"):
        mcnemar_exact(-1, 2)


def test_paired_counts_accuracy_and_errors_apart() -> None:
    # 14 pairs: 8 wins, 2 losses, 2 ties both right, 1 tie both wrong, 1 with a config error,
    # and one baseline-only task that has no pair.
    recs: list[ResultRecord] = []
    for t in range(8):
        recs += [rec("base", t, False, 100), rec("conf", t, True, 50)]
    for t in range(8, 10):
        recs += [rec("base", t, True, 100), rec("conf", t, False, 50)]
    for t in range(10, 12):
        recs += [rec("base", t, True, 100), rec("conf", t, True, 50)]
    recs += [rec("base", 12, False, 100), rec("conf", 12, False, 50)]
    recs += [rec("base", 13, True, 100), rec("conf", 13, False, 50, error="boom")]
    recs += [rec("base", 99, True, 100)]
    p = paired(recs, "base", "conf")
    assert (p.n, p.errors_baseline, p.errors_config) == (13, 0, 1)
    assert (p.wins, p.losses, p.ties) == (8, 2, 3)
    assert p.acc_baseline == pytest.approx(4 / 13)
    assert p.acc_config == pytest.approx(10 / 13)
    assert p.diff == pytest.approx(6 / 13)
    assert p.mcnemar_p == pytest.approx(0.109375)
    # tokens over all 14 common pairs (the errored one spent tokens too); every pair has the
    # same ratio, so every resample has it and the interval is a point
    assert p.token_ratio == pytest.approx(0.5)
    assert p.ratio_lo == pytest.approx(0.5) and p.ratio_hi == pytest.approx(0.5)


def test_pairs_are_task_and_seed() -> None:
    recs = [rec("b", 0, True, 10, seed=0), rec("c", 0, False, 20, seed=1)]
    p = paired(recs, "b", "c")
    assert p.n == 0 and math.isnan(p.acc_baseline) and math.isnan(p.diff)
    assert math.isnan(p.token_ratio) and p.mcnemar_p == 1.0
    assert p.as_dict()["acc_config"] is None


def test_paired_table_skips_the_baseline_and_keeps_order() -> None:
    recs = [rec(c, 0, True, 10) for c in ("b", "x", "y")]
    rows = paired_table(recs, "b", ["b", "y", "x"])
    assert [r.config for r in rows] == ["y", "x"]


def test_bootstrap_is_seeded_and_checks_input() -> None:
    base, conf = [10, 20, 30, 40, 50], [5, 30, 20, 80, 10]
    assert bootstrap_ratio(base, conf, seed=3) == bootstrap_ratio(base, conf, seed=3)
    r, lo, hi = bootstrap_ratio(base, conf, seed=3)
    assert r == pytest.approx(145 / 150)
    assert lo < r < hi
    assert all(math.isnan(x) for x in bootstrap_ratio([], []))
    with pytest.raises(ValueError, match="equal-length"):
        bootstrap_ratio([1, 2], [1])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 5000)), min_size=1, max_size=40),
    st.integers(0, 2**31),
)
def test_bootstrap_interval_contains_the_ratio(pairs: list[tuple[int, int]], seed: int) -> None:
    base = [b for b, _ in pairs]
    conf = [c for _, c in pairs]
    r, lo, hi = bootstrap_ratio(base, conf, seed=seed, n_boot=2000)
    assert r == pytest.approx(sum(conf) / sum(base))
    assert lo <= r + 1e-12 and r - 1e-12 <= hi
