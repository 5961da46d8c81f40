"""Summary figures per configuration, checked against hand-computed values."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from overseer.bench import ResultRecord, ResultStore, summarize, summary_table
from overseer.bench._report import errors_table
from overseer.bench._store import ResultKey
from overseer.cli import main
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


def test_errors_are_their_own_column_and_out_of_accuracy() -> None:
    recs = [rec("c", i, i < 3, 10, 1) for i in range(4)]  # 3 right, 1 wrong
    recs[3] = replace(recs[3], parsed="B")  # the wrong one read; the right ones unparsed here
    recs += [
        ResultRecord(
            key=ResultKey("c", "m", "s", f"e/{i}", 0),
            answer="",
            parsed=None,
            correct=False,
            score=0.0,
            usage_by_actor={},
            latency_s=0.0,
            error=f"model error {i}",
        )
        for i in range(6)
    ]
    (row,) = summarize(recs)
    assert (row.n, row.errors, row.correct, row.accuracy) == (10, 6, 3, 0.75)
    assert row.unparsed == 3  # answered with nothing read; errors are not counted again
    assert 0.25 < row.ci_low < 0.75 < row.ci_high <= 1.0  # Wilson over the 4 answered
    console = Console(record=True, width=200)
    console.print(summary_table([row]))
    line = next(x for x in console.export_text().splitlines() if " c " in x)
    cells = [c.strip() for c in line.split("\u2502") if c.strip()]
    assert cells[3:8] == ["10", "6", "3", "0.750", f"{row.ci_low:.2f}-{row.ci_high:.2f}"]


def test_all_errors_give_no_accuracy_and_the_error_list() -> None:
    recs = [ResultRecord(ResultKey("c", "m", "s", "t/1", 2), "", None, False, 0.0, {}, 0.0, "boom")]
    (row,) = summarize(recs)
    assert row.errors == 1 and math.isnan(row.accuracy) and math.isnan(row.ci_low)
    console = Console(record=True, width=200)
    console.print(summary_table([row]))
    console.print(errors_table([*recs, rec("c", 2, True, 1, 1)]))
    text = console.export_text()
    assert "boom" in text and "t/1" in text and "t/2" not in text


def test_report_errors_cli_lists_errored_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.sqlite"
    with ResultStore(path) as rs:
        for i in range(4):
            rs.add(rec("direct", i, i < 2, 10, 1))
        rs.add(ResultRecord(ResultKey("direct", "m", "s", "t/9", 1), "", None, False, 0.0, {},
                            0.0, "ModelRequestError: server said 500"))  # fmt: skip
    assert main(["report", "--store", str(path), "--errors"]) == 0
    out = capsys.readouterr().out
    assert "ModelRequestError: server said 500" in out and "t/9" in out
    assert "0.500" in out  # 2 of the 4 answered; the errored one is not a wrong answer
    assert main(["report", "--store", str(path)]) == 0
    assert "server said 500" not in capsys.readouterr().out
