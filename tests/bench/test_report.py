"""Summary figures per configuration, checked against hand-computed values."""

from __future__ import annotations

import pytest
from rich.console import Console

from overseer.bench import ResultRecord, summarize, summary_table
from overseer.bench._store import ResultKey
from overseer.models import Usage


def rec(config: str, i: int, correct: bool, prompt: int, completion: int) -> ResultRecord:
    return ResultRecord(
        key=ResultKey(config, "m", "s", f"t/{i}", 0),
        answer="",
        parsed=None,
        correct=correct,
        score=float(correct),
        usage_by_actor={"agent:x": Usage(prompt, completion, prompt // 2)},
        latency_s=1.0,
        error=None if correct or i != 9 else "boom",
    )


def test_summary_figures() -> None:
    base = [rec("base", i, i % 2 == 0, 100, 10 * i) for i in range(10)]
    cheap = [rec("cheap", i, i < 8, 50, 5 * i) for i in range(10)]
    rows = summarize(base + cheap, baseline="base", order=["cheap", "base"])
    assert [r.config for r in rows] == ["cheap", "base"]
    c, b = rows
    # task 9 errored in both: it stays in n and in the error column, not in accuracy (issue 14)
    assert (b.n, b.correct, b.accuracy, b.errors) == (10, 5, pytest.approx(5 / 9), 1)
    assert c.accuracy == pytest.approx(8 / 9) and c.errors == 1
    assert b.mean_tokens == pytest.approx(100 + 45)
    assert b.p90_tokens == pytest.approx(100 + 81)  # numpy linear percentile of 0..90
    assert b.mean_cached == 50 and b.mean_prompt == 100 and b.mean_completion == 45
    assert c.tokens_vs_baseline == pytest.approx((50 + 22.5) / 145)
    assert b.tokens_vs_baseline == pytest.approx(1.0)
    assert 0.2 < b.ci_low < 0.5 < b.ci_high < 0.85


def test_no_baseline_gives_no_ratio_and_table_renders() -> None:
    rows = summarize([rec("a", 1, True, 10, 1)])
    assert rows[0].tokens_vs_baseline is None
    console = Console(record=True, width=200)
    console.print(summary_table(rows))
    text = console.export_text()
    assert "a" in text and "1.000" in text
