"""The report's "Who failed" section on a failed team run's trace."""

from __future__ import annotations

from typing import Any

from overseer.bench._who_failed import who_failed_section
from overseer.bench.reports import ResultKey


def _events(agents: list[str]) -> list[dict[str, Any]]:
    ev: list[dict[str, Any]] = [{"event": "run_start", "run": "r", "query": "2+2?"}]
    for i, a in enumerate(agents):
        text = "Traceback: ZeroDivisionError" if i == 2 else f"step {i} is fine"
        ev.append({"event": "interaction", "agent": a, "role": "r", "tool": None,
                   "thought": "", "input": text, "observation": "", "error": None})  # fmt: skip
    ev.append({"event": "run_end", "answer": "5", "error": None})
    return ev


def test_who_failed_names_an_agent_and_step_of_each_failed_team_run() -> None:
    key = ResultKey("team", "m", "gsm", "t1", 0)
    s = who_failed_section([(key, _events(["planner", "coder", "coder", "critic"]))])
    assert s is not None and s.title == "Who failed"
    (row,) = s.rows
    assert [c.text for c in row[:3]] == ["team", "t1", "0"]
    assert row[3].text in ("planner", "coder", "critic") and 0 <= int(row[4].text) < 4


def test_no_section_without_a_team() -> None:
    key = ResultKey("direct", "m", "gsm", "t1", 0)
    assert who_failed_section([(key, _events(["solo", "solo"]))]) is None
    assert who_failed_section([]) is None
