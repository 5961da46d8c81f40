"""The trace's hot path writes plain dicts through orjson, unvalidated: every event kind it
writes must still be, byte for byte, a valid line of the schema; validation at the writer is
a flag (on in the tests), and readers validate."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import orjson
import pytest

from overseer.models import Completion, ScriptedModel, Usage
from overseer.runtime import Executor, make_team, read_trace
from overseer.runtime._events import _MODELS, EVENT_NAMES, PluginEvent
from overseer.runtime._trace import VALIDATE_ENV, Trace, dumps_line

TEAM = make_team("chain", 2).model_dump()
VERDICT = {"action": "guide", "by": "s", "reason": "r", "text": "t", "note": "", "task": ""}

#: one sample of every event kind that is not written by a plain team run below
SAMPLES: dict[str, dict[str, Any]] = {
    "verdict": {"agent": "a1", "round": 0, "step": 1, **VERDICT},
    "verification": {"agent": "a1", "by": "s", "task": "check 2+2", "finding": "4"},
    "verdict_ignored": {"by": "s", "action": "rollback", "reason": "rollback cap"},
    "rollback": {"round": 0, "agent": "a1", "by": "s", "reason": "r", "removed": 2, "count": 1},
    "team": {"team": TEAM},
    "team_replaced": {"round": 1, "by": "p", "reason": "pruned", "team": TEAM},
    "agent_replaced": {
        "agent": "a1",
        "by": "s",
        "reason": "r",
        "purged": 1,
        "spec": {"name": "a1", "role": "x"},
    },
    "agent_failure": {"agent": "a2", "round": 0, "reason": "unparsable", "detail": "not JSON"},
    "vote": {"counts": {"4": 2, "5": 1}, "winner": "a1"},
    "error": {"error": "ValueError: x", "traceback": "Traceback ...\n"},
    "turn": {
        "agent": "a1",
        "role": "fisher",
        "round": 0,
        "attempt": 1,
        "output": "{}",
        "message": "I fish 3",
        "error": None,
    },
    "invalid_move": {"agent": "a1", "role": "fisher", "error": "took 200 of 100"},
    "monitor_features": {
        "by": "m",
        "role": "r",
        "agent": "a1",
        "turn": 2,
        "attempt": 1,
        "entropy": 0.25,
        "varentropy": 0.5,
        "kurtosis": 3.0,
        "positions": 4,
        "fallback": False,
        "estimate": 0.75,
        "tau": None,
    },
    "rule": {"by": "g", "rule": "loop", "agent": "a1", "subtask": "s", "detail": "d"},
    **{
        name: {"by": "plugin", "detail": {"n": 1, "ok": True}}
        for name in get_args(PluginEvent.model_fields["event"].annotation)
    },
}


def _check_line(line: bytes) -> str:
    """Validate one written line from its bytes against its event's model; the model keeps
    every field as written (nothing coerced, nothing dropped). Returns the event name."""
    plain = orjson.loads(line)
    model = _MODELS[plain["event"]].model_validate_json(line)
    assert model.model_dump(mode="json", by_alias=True, exclude_unset=True) == plain
    return str(plain["event"])


async def test_every_event_kind_written_unvalidated_is_a_valid_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VALIDATE_ENV, "0")  # the production writer: no validation at write
    res = await Executor(
        ScriptedModel(lambda m: {"thought": "t", "action": "answer", "answer": "4"}),
        trace_dir=tmp_path,
    ).run(make_team("chain", 2), "2+2?")
    trace = Trace(res.trace_path, res.run_id)
    assert trace.validate is False
    for name, fields in SAMPLES.items():
        trace.event(name, **fields)
    done = Completion("4", Usage(10, 1), 0.01, model="m", finish_reason="stop")
    trace.model_call("a1", "agent", "m", ({"role": "user", "content": "2+2? é"},), done)
    trace.close()
    lines = res.trace_path.read_bytes().splitlines()
    written = {_check_line(line) for line in lines}
    assert written == EVENT_NAMES  # a new event kind needs a sample here
    assert len(list(read_trace(res.trace_path, validate=True))) == len(lines)


def test_validation_is_a_flag_and_lines_match_the_standard_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VALIDATE_ENV, "1")
    checked = Trace(tmp_path / "a.jsonl", "r")
    with pytest.raises(ValueError, match=r"trace event 'rollback': .*removed"):
        checked.event("rollback", round=1, agent="a", by="x", reason="y", count=1)
    checked.close()
    fast = Trace(tmp_path / "b.jsonl", "r", validate=False)
    fast.event("rollback", round=1, agent="a", by="x", reason="y", count=1)  # not checked
    fast.close()
    with pytest.raises(ValueError, match=r"line 1: trace event 'rollback'"):
        list(read_trace(tmp_path / "b.jsonl", validate=True))  # readers still check
    record = {"v": 2, "ts": 1.5, "run": "r", "event": "x", "big": 2**70, "k": {1: "é"}}
    assert orjson.loads(dumps_line(record)) == {**record, "k": {"1": "é"}}  # int keys, bigints
    assert dumps_line(record).endswith(b"\n")


async def test_the_trace_is_on_disk_before_each_model_call(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def reply(messages: list) -> dict[str, str]:
        path = next(tmp_path.glob("*.jsonl"))
        seen.append([orjson.loads(x)["event"] for x in path.read_bytes().splitlines()])
        return {"thought": "t", "action": "answer", "answer": "4"}

    await Executor(ScriptedModel(reply), trace_dir=tmp_path).run(make_team("chain", 2), "2+2?")
    assert seen[0] == ["run_start", "round_start"]
    assert seen[1][-3:] == ["model_call", "interaction", "message"]  # a1's step, then a2 asks


def test_the_fast_path_writes_the_bytes_of_the_non_str_keys_writer(tmp_path: Path) -> None:
    """A record is written with orjson's string-key fast path, retried with int keys allowed
    and then through the standard library: each line is the bytes the one-call writer wrote."""
    trace = Trace(tmp_path / "t.jsonl", "r", validate=False)
    records = [
        {"sender": "a1", "round": 0, "seq": 1, "content": 'é \u2028 "q"'},
        {"counts": {4: 2, "5": 1}, "winner": "a1"},  # int keys: the second attempt
        {"detail": {"big": 2**70}},  # beyond 64 bits: the standard library
    ]
    for fields in records:
        trace.record("vote", fields)
    trace.close()
    opts = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
    lines = (tmp_path / "t.jsonl").read_bytes().splitlines(True)
    for line, fields in zip(lines, records, strict=True):
        head = {**orjson.loads(line), **fields}  # the written clock, the fields as given
        try:
            assert line == orjson.dumps(head, option=opts)
        except orjson.JSONEncodeError:
            assert line == dumps_line(head) and b'"big": 1180591620717411303424' in line
