"""Uncertainty features against hand-computed values, and decision positions in JSON output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from overseer.models import TokenLogprob
from overseer.monitor.features import (
    decision_positions,
    distribution,
    entropy,
    kurtosis,
    position_stats,
    turn_features,
    value_spans,
    varentropy,
)

LN2 = math.log(2)


def test_half_quarter_quarter() -> None:
    # surprisals ln2 (p=.5), 2ln2 (p=.25 twice): mean 1.5 ln2, deviations +-0.5 ln2
    p = np.array([0.5, 0.25, 0.25])
    assert entropy(p) == pytest.approx(1.5 * LN2)
    assert varentropy(p) == pytest.approx(0.25 * LN2**2)
    assert kurtosis(p) == pytest.approx(1.0)


def test_two_point_closed_form() -> None:
    # Bernoulli(0.9): V = pq ln(p/q)^2, kurtosis = (1 - 3pq) / pq
    p = np.array([0.9, 0.1])
    assert entropy(p) == pytest.approx(-(0.9 * math.log(0.9) + 0.1 * math.log(0.1)))
    assert varentropy(p) == pytest.approx(0.09 * math.log(9) ** 2)
    assert kurtosis(p) == pytest.approx((1 - 0.27) / 0.09)


def test_flat_and_one_hot_have_zero_varentropy_and_kurtosis() -> None:
    flat = np.full(10, 0.1)
    assert entropy(flat) == pytest.approx(math.log(10))
    assert varentropy(flat) == pytest.approx(0.0, abs=1e-12)
    assert kurtosis(flat) == 0.0
    one = np.array([1.0, 0.0, 0.0])
    assert (entropy(one), varentropy(one), kurtosis(one)) == (0.0, 0.0, 0.0)


def test_top_k_is_renormalised_and_cut_at_k() -> None:
    top = [("a", math.log(0.45)), ("b", math.log(0.05))]  # 50% of the mass reported
    assert distribution(top) == pytest.approx([0.9, 0.1])
    h, v, k = position_stats(top)
    assert h == pytest.approx(-(0.9 * math.log(0.9) + 0.1 * math.log(0.1)))
    assert v == pytest.approx(0.09 * math.log(9) ** 2) and k == pytest.approx(0.73 / 0.09)
    many = [(str(i), math.log(0.05)) for i in range(15)]
    assert len(distribution(many)) == 10 and distribution(many) == pytest.approx([0.1] * 10)


@pytest.mark.parametrize("bad", [[], [("a", 0.5)], [("a", float("nan"))]])
def test_bad_logprobs_are_refused(bad: list) -> None:
    with pytest.raises(ValueError, match="top logprobs"):
        distribution(bad)


def test_value_spans_numbers_strings_lists_nested() -> None:
    text = '{"thoughts": "pick 7", "action": 3, "character": [1, 10], "x": {"fish": "12"}}'
    spans = value_spans(text, ["action", "character", "fish"])
    assert [text[a:b] for a, b in spans] == ["3", "1", "10", "12"]
    assert value_spans(text, ["thoughts"]) == [(text.index("7"), text.index("7") + 1)]
    assert value_spans(text, ["missing"]) == []


def tok(s: str, probs: list[float]) -> TokenLogprob:
    top = tuple((f"t{i}", math.log(p)) for i, p in enumerate(probs))
    return TokenLogprob(s, top[0][1], top)


SURE = [0.99, 0.01]
HALF = [0.5, 0.5]
ODD = [0.5, 0.25, 0.25]


def test_decision_positions_cover_multi_token_numbers() -> None:
    toks = [tok(s, SURE) for s in ['{"', "action", '":', " 3", ",", ' "', "character", '":']]
    toks += [tok(" 1", SURE), tok("0", SURE), tok("}", SURE)]
    assert decision_positions(toks, ["action", "character"]) == [3, 8, 9]
    assert decision_positions(toks, ["character"]) == [8, 9]


def test_turn_features_take_the_max_over_decision_positions_only() -> None:
    toks = [
        tok('{"thoughts": "', SURE),
        tok("maybe", [0.1] * 10),  # very uncertain, but not a decision position
        tok('", "action": ', SURE),
        tok("2", HALF),
        tok(', "character": ', SURE),
        tok("4", ODD),
        tok("}", SURE),
    ]
    f = turn_features(toks, ["action", "character"], turn=5)
    assert f.turn == 5 and f.positions == 2 and not f.fallback
    assert f.entropy == pytest.approx(1.5 * LN2)  # ODD beats HALF (ln 2)
    assert f.varentropy == pytest.approx(0.25 * LN2**2)  # HALF has 0
    assert f.kurtosis == pytest.approx(1.0)
    assert f.vector(["turn", "entropy"]) == [5.0, pytest.approx(1.5 * LN2)]


def test_turn_features_fall_back_to_all_tokens_and_need_logprobs() -> None:
    toks = [tok("hello", SURE), tok(" there", [0.1] * 10)]
    f = turn_features(toks, ["action"], turn=1)
    assert f.fallback and f.positions == 2 and f.entropy == pytest.approx(math.log(10))
    with pytest.raises(ValueError, match="top_logprobs=10"):
        turn_features(None, ["action"], turn=1)
