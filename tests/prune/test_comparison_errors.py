"""The full-vs-pruned table counts an errored task apart, never as a wrong answer."""

from __future__ import annotations

from overseer.bench import ResultRecord
from overseer.bench.reports import ResultKey
from overseer.experiments.prune import comparison_rows
from overseer.models import Usage
from overseer.runtime import make_team


def rec(i: int, correct: bool, error: str | None = None) -> ResultRecord:
    return ResultRecord(ResultKey("c", "m", "s", f"t/{i}", 0), "", None, correct, float(correct),
                        {"agent:a": Usage(100, 10)}, 0.0, error)  # fmt: skip


def test_accuracy_is_over_answered_tasks_and_errors_have_their_column() -> None:
    team = make_team("complete", 2, rounds=1)
    recs = {
        "full": [rec(0, True), rec(1, False), rec(2, False, "budget exceeded")],
        "pruned": [rec(0, False, "boom"), rec(1, False, "boom")],
    }
    full, pruned = comparison_rows(team, team, recs)
    assert full[2:5] == ["3", "0.500", "1"]  # n, acc over the 2 answered, errors
    assert pruned[2:5] == ["2", "-", "2"]
