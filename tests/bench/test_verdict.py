"""The report opens with its verdict: per configuration against the baseline one sentence
(token ratio with its interval, accuracy difference with its interval and McNemar p, acted on
k of n), then provenance and date; rule-tier actions are named by what the rule did."""

from __future__ import annotations

import calendar
import json
from pathlib import Path

import pytest

from overseer.bench import ResultRecord, ResultStore
from overseer.bench._store import ResultKey
from overseer.bench._traces import interventions
from overseer.bench.reports import verdict_lines
from overseer.cli import main
from overseer.models import Usage

DAY = calendar.timegm((2026, 11, 26, 12, 0, 0))
PROV = {"commit": "abc1234", "overseer": "0.1.0", "xllamacpp": "x", "model_file": "sha256:f",
        "threads": "1", "prompt_cache": "off"}  # fmt: skip


def rec(config: str, task: int, correct: bool, tokens: int) -> ResultRecord:
    return ResultRecord(
        key=ResultKey(config, "m", "s", f"t/{task}", 0),
        answer="",
        parsed="x",
        correct=correct,
        score=float(correct),
        usage_by_actor={"agent:a": Usage(tokens, 10)},
        latency_s=0.0,
        finished_at=DAY + task,
        provenance=PROV,
    )


def records() -> list[ResultRecord]:
    """10 pairs: the rule tier wins 1, loses 3 and spends half the tokens."""
    out = []
    for t in range(10):
        out.append(rec("team", t, t < 5, 1000))
        out.append(rec("team+rules", t, t < 2 or t == 9, 490))
    return out


def test_one_sentence_per_configuration_then_provenance_and_date() -> None:
    lines = verdict_lines(records(), "team", ["team", "team+rules"], {"team+rules": (6, 10)})
    assert len(lines) == 3
    plain, sentence, made = lines
    assert plain == (
        "team+rules used half the tokens and answered right less often than team: 3 vs 5 of "
        "10; too few tasks to tell a difference."
    )
    assert sentence.startswith(
        "team+rules vs team on s (m, 10 pairs): 0.50x the net tokens (95% CI"
    )
    assert "accuracy -20.0 points (95% CI " in sentence and "McNemar p = 0.62" in sentence
    assert "1 win, 3 losses, 6 ties" in sentence and "acted on 6 of 10 runs" in sentence
    assert made.startswith("Made 2026-11-26 (UTC) by commit abc1234, ") and "(20 results)" in made
    no_base = verdict_lines(records(), None, [], {})
    assert no_base[0] == "No verdict: no baseline."


def test_report_text_opens_with_the_verdict_and_json_carries_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "r.sqlite"
    with ResultStore(store) as rs:
        for r in records():
            rs.add(r)
    assert main(["report", "--store", str(store), "--baseline", "team"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0] == "verdict: team+rules used half the tokens and answered right less often "
        "than team: 3 vs 5 of 10; too few tasks to tell a difference."
    )
    assert out[1].startswith("statistics: team+rules vs team on s (m, 10 pairs): 0.50x")
    assert out[2].startswith("made: Made 2026-11-26 (UTC)")
    assert main(["report", "--store", str(store), "--baseline", "team", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"][0] == out[0].removeprefix("verdict: ")


def test_rule_actions_are_named_by_the_rule_and_counted_once() -> None:
    at = {"agent": "r", "round": 0, "step": 2}
    events = [
        {"event": "rule", "by": "supervisor", "rule": "purification", **at},
        {"event": "rule", "by": "supervisor", "rule": "masking", **at},
        {"event": "rule", "by": "supervisor", "rule": "loop_breaker", **at},
        # the refusal the loop breaker gave is the same action: not counted again
        {"event": "verdict", "by": "supervisor", "action": "replace", "note": "loop_breaker", **at},
        {"event": "verdict", "by": "supervisor", "action": "guide", "note": "", **at},
    ]
    assert interventions(events) == {
        ("supervisor rules", "purified"): 1,
        ("supervisor rules", "masked"): 1,
        ("supervisor rules", "loop refused"): 1,
        ("supervisor", "guide"): 1,
    }
