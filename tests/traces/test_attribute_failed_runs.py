"""`overseer attribute` on the traces of runs that failed at different points (issue 51): a
run that failed before any interaction (only run_start, only a run_end with its error, a model
call and no step) gets an "empty log" fallback from every method instead of an IndexError, and
a judge's reply that does not fit its schema is a typed "unparsed" outcome, not a KeyError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from overseer.cli import main
from overseer.models import ScriptedModel
from overseer.traces.judges import JUDGES


def _ev(kind: str, **kw: Any) -> dict[str, Any]:
    return {"event": kind, **kw}


def _step(agent: str, **kw: Any) -> dict[str, Any]:
    return _ev("interaction", agent=agent, role="solver", input="x", observation="o", **kw)


START = _ev("run_start", query="What is 1?", run="r1")
END = _ev("run_end", error="ModelError: the model is down", answer=None)
NO_STEP = {
    "only-run-end": [END],
    "only-run-start": [START],
    "start-and-end": [START, END],
    "a-model-call-no-step": [START, _ev("model_call", agent="a"), END],
}
STEPS = {
    "one-step": [START, _step("a"), END],
    "two-steps-a-tool": [START, _step("a"), _step("b", tool="calc", error="boom"), END],
}


#: every method but the learned ones (they train on Who&When first, a minute each)
METHODS = ("random", "most-frequent", "first-repeat", "last-agent", *JUDGES)


def _judge_says(monkeypatch: pytest.MonkeyPatch, reply: dict[str, Any]) -> None:
    model = ScriptedModel(lambda messages: json.dumps(reply))
    monkeypatch.setattr("overseer.models.load_model", lambda *a, **kw: model)


def _attribute(tmp: Path, events: list[dict[str, Any]], capsys: Any) -> list[dict[str, Any]]:
    f = tmp / "trace.jsonl"
    f.write_text("".join(json.dumps(e) + "\n" for e in events))
    code = main(["attribute", str(f), "--method", ",".join(METHODS), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return list(json.loads(out)["attributions"])


@pytest.mark.parametrize("events", list(NO_STEP.values()), ids=list(NO_STEP))
def test_a_run_that_failed_before_any_step_is_an_empty_log_for_every_method(
    events: list[dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _judge_says(monkeypatch, {"agent": "a", "step": 0, "reason": "r"})
    rows = _attribute(tmp_path, events, capsys)
    assert len(rows) == len(METHODS)
    for row in rows:
        assert (row["agent"], row["step"], row["outcome"]) == (None, None, "fallback"), row


@pytest.mark.parametrize("events", list(STEPS.values()), ids=list(STEPS))
def test_a_judge_reply_of_the_wrong_shape_is_unparsed_not_a_crash(
    events: list[dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _judge_says(monkeypatch, {"thought": "t", "action": "answer", "answer": "1", "step": 7})
    rows = _attribute(tmp_path, events, capsys)
    judged = [r for r in rows if r["method"] in JUDGES and r["calls"]]  # one step: no search
    assert len(judged) >= 2
    for row in judged:
        assert row["outcome"] == "unparsed" and "no valid reply" in row["reason"], row
