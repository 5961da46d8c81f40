"""Paired statistics (overseer.bench.stats) against hand-computed values and properties."""

from __future__ import annotations

import math

import numpy as np
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


def test_mcnemar_sample_size_matches_connors_formula_by_hand() -> None:
    from overseer.bench.stats import mcnemar_mde, mcnemar_n, mcnemar_power

    # d = 0.10, discordance 0.20: (1.95996 * sqrt(.2) + 0.84162 * sqrt(.19))^2 / .01 = 154.6
    assert mcnemar_n(0.10, 0.20) == 155
    assert mcnemar_power(155, 0.10, 0.20) == pytest.approx(0.80, abs=0.005)
    assert mcnemar_mde(155, 0.20) == pytest.approx(0.10, abs=0.001)
    # below the effect, the discordance is raised to it: 0 observed acts as d
    assert mcnemar_n(0.103, 0.0) == mcnemar_n(0.103, 0.103) == 74
    assert math.isnan(mcnemar_mde(3, 0.0))  # sqrt(3) < 1.96: nothing is detectable
    assert mcnemar_mde(16, 0.1) > mcnemar_mde(64, 0.1) > mcnemar_mde(256, 0.1)
    with pytest.raises(ValueError, match="effect expected"):
        mcnemar_n(0.0, 0.2)


def test_mcnemar_mde_has_its_power_in_a_simulation() -> None:
    """Pairs drawn with discordant shares 0.15 / 0.05 (d = 0.10) at the n the formula asks:
    the share of McNemar tests (normal approximation, two-sided 0.05) that reject is 0.8."""
    from scipy.stats import chi2

    from overseer.bench.stats import mcnemar_n

    n = mcnemar_n(0.10, 0.20)
    rng = np.random.default_rng(7)
    cells = rng.multinomial(n, [0.15, 0.05, 0.80], size=4000)
    b, c = cells[:, 0], cells[:, 1]
    stat = (b - c) ** 2 / np.maximum(b + c, 1)
    rejected = float((stat > chi2.ppf(0.95, 1)).mean())
    assert rejected == pytest.approx(0.80, abs=0.03)


def test_ratio_power_and_paired_power_on_records() -> None:
    from overseer.bench.stats import paired_power, ratio_mde, ratio_n

    # spread 0.2, 30 pairs: 1 - exp(-(1.95996 + 0.84162) * 0.2 / sqrt(30)) = 0.0972
    assert ratio_mde(0.2, 30) == pytest.approx(0.0972, abs=1e-4)
    assert ratio_n(0.76, 0.2) == 5  # (2.8016 * 0.2 / 0.2744)^2 = 4.17
    recs: list[ResultRecord] = []
    for t in range(20):  # 4 wins, 0 losses, 16 ties; tokens halve or stay
        recs += [rec("base", t, t >= 4, 100), rec("conf", t, True, 50 if t % 2 else 100)]
    pw = paired_power(recs, "base", "conf", paper_diff=0.10, paper_ratio=0.76)
    assert (pw.n, pw.discordance) == (20, 0.2)
    assert pw.n_for_paper == 155 and pw.n_for_paper_tokens is not None
    assert 0.2 < pw.mde < 1 and 0 < pw.mde_tokens < 1


def test_paired_diff_ci_by_hand_and_without_discordant_pairs() -> None:
    from overseer.bench.stats import paired_diff_ci

    # 8 wins, 2 losses, 13 pairs: cells + 1/2, d = 6/15, se = sqrt(11 - 36/15)/15
    lo, hi = paired_diff_ci(8, 2, 13)
    half = 1.959964 * math.sqrt(11 - 36 / 15) / 15
    assert (lo, hi) == (pytest.approx(0.4 - half), pytest.approx(0.4 + half))
    lo, hi = paired_diff_ci(0, 0, 30)  # no discordant pair: still an interval, not a point
    assert lo == pytest.approx(-hi) and 0.05 < hi < 0.07
    assert all(math.isnan(x) for x in paired_diff_ci(0, 0, 0))
    with pytest.raises(ValueError, match="wins \\+ losses <= n"):
        paired_diff_ci(3, 2, 4)
