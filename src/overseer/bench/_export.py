"""Per-result rows of a result store, flat, for CSV and JSON Lines (pandas, spreadsheets, jq).

One row per stored result: its key, outcome (right / wrong / error: an errored result is
neither right nor wrong), tokens in total and per actor kind, latency, the trace path the run
wrote, and the solver's `extra` (a JSON text in CSV, an object in JSON Lines).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from overseer.bench._store import ResultRecord
from overseer.manifest import schema_problem

#: The actor kinds a ledger books tokens under, in the order the report stacks them.
ACTOR_KINDS = (
    "agent",
    "decision",
    "supervisor",
    "verifier",
    "monitor",
    "watcher",
    "planner",
    "trainer",
)

Outcome = Literal["right", "wrong", "error"]

COLUMNS = (
    "config",
    "model",
    "suite",
    "task_id",
    "seed",
    "outcome",
    "correct",
    "score",
    "parsed",
    "answer",
    "error",
    "prompt_tokens",
    "cached_prompt_tokens",
    "completion_tokens",
    "total_tokens",
    *(f"tokens_{k}" for k in ACTOR_KINDS),
    "tokens_other",
    "latency_s",
    "trace",
    "finished_at",
    "extra",
)


def outcome(rec: ResultRecord) -> Outcome:
    """right, wrong, or error (no answer at all: kept apart from wrong answers)."""
    if rec.error is not None:
        return "error"
    return "right" if rec.correct else "wrong"


def tokens_by_kind(rec: ResultRecord) -> dict[str, int]:
    """Total tokens per actor kind (usage keys are `kind:actor`); unknown kinds go to other."""
    out = dict.fromkeys((*ACTOR_KINDS, "other"), 0)
    for key, usage in rec.usage_by_actor.items():
        kind = key.split(":", 1)[0]
        out[kind if kind in out else "other"] += usage.total_tokens
    return out


def stored_trace(rec: ResultRecord) -> str | None:
    """The trace file the result's run wrote, as stored (None: the solver wrote none)."""
    value = rec.extra.get("trace")
    return value if isinstance(value, str) and value else None


def result_row(rec: ResultRecord) -> dict[str, Any]:
    """One flat row of a result (see COLUMNS); `extra` stays a mapping."""
    k, u = rec.key, rec.usage
    row: dict[str, Any] = {
        "config": k.config,
        "model": k.model,
        "suite": k.suite,
        "task_id": k.task_id,
        "seed": k.seed,
        "outcome": outcome(rec),
        "correct": rec.correct and rec.error is None,
        "score": rec.score,
        "parsed": rec.parsed,
        "answer": rec.answer,
        "error": rec.error,
        "prompt_tokens": u.prompt_tokens,
        "cached_prompt_tokens": u.cached_prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.total_tokens,
    }
    row.update({f"tokens_{kind}": n for kind, n in tokens_by_kind(rec).items()})
    row.update(
        latency_s=rec.latency_s,
        trace=stored_trace(rec),
        finished_at=rec.finished_at,
        extra=dict(rec.extra),
    )
    return row


def write_csv(records: Iterable[ResultRecord], path: str | Path) -> int:
    """Write one CSV row per result (header: COLUMNS); returns the number of rows."""
    n = 0
    with Path(path).open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for rec in records:
            row = result_row(rec)
            row["extra"] = json.dumps(row["extra"], sort_keys=True, default=str)
            w.writerow(row)
            n += 1
    return n


def write_jsonl(records: Iterable[ResultRecord], path: str | Path) -> int:
    """Write one JSON object per line and result; returns the number of lines."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(result_row(rec), sort_keys=True, default=str) + "\n")
            n += 1
    return n


def record_json(rec: ResultRecord) -> dict[str, Any]:
    """A result as JSON that `record_from_json` turns back into the same record: the flat row
    (see COLUMNS) with the tokens of every actor and the provenance stamp."""
    row = result_row(rec)
    row["usage_by_actor"] = {
        a: [u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens]
        for a, u in sorted(rec.usage_by_actor.items())
    }
    row["provenance"] = dict(rec.provenance)
    row["correct"] = rec.correct  # as stored (an errored result keeps its flag)
    return row


#: The JSON type of each field of a `record_json` row: what an export's manifest declares and
#: `check_row` enforces (a strict pydantic model, `overseer.manifest.row_model`). "int" and
#: "number" are never a bool; a trailing "?" allows null.
ROW_SCHEMA: dict[str, str] = {
    **dict.fromkeys(("config", "model", "suite", "task_id", "outcome", "answer"), "str"),
    "seed": "int",
    "correct": "bool",
    "score": "number",
    "parsed": "str?",
    "error": "str?",
    **dict.fromkeys(
        ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "total_tokens"), "int"
    ),
    **{f"tokens_{k}": "int" for k in (*ACTOR_KINDS, "other")},
    "latency_s": "number",
    "trace": "str?",
    "finished_at": "number",
    "extra": "object",
    "usage_by_actor": "object",
    "provenance": "object",
}


def _usage_problem(d: Mapping[str, Any]) -> str | None:
    """The actor usage must be [prompt, cached, completion] counts that add up to the row's."""
    sums = [0, 0, 0]
    for actor, u in d["usage_by_actor"].items():
        if not (
            isinstance(u, list)
            and len(u) == 3
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in u)
        ):
            return f"usage_by_actor[{actor!r}]: expected [prompt, cached, completion] counts >= 0"
        sums = [a + b for a, b in zip(sums, u, strict=True)]
    names = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens")
    for name, total in zip(names, sums, strict=True):
        if d[name] != total:
            return f"field {name!r}: {d[name]} is not the actors' sum {total}"
    if d["total_tokens"] != sums[0] + sums[2]:
        return f"field 'total_tokens': {d['total_tokens']} is not prompt + completion"
    return None


def check_row(d: Mapping[str, Any], schema: Mapping[str, str] = ROW_SCHEMA) -> str | None:
    """What is wrong with a `record_json` row (the first problem found), or None: a field
    missing, extra or of the wrong type, a token count that does not add up, an outcome that
    contradicts `correct` and `error`."""
    problem = schema_problem(d, schema)
    if problem is None and "usage_by_actor" in schema:
        problem = _usage_problem(d)
    if problem is None and {"outcome", "correct", "error"} <= set(schema):
        want = "error" if d["error"] is not None else ("right" if d["correct"] else "wrong")
        if d["outcome"] != want:
            problem = f"field 'outcome': {d['outcome']!r} contradicts correct/error ({want})"
    return problem


def record_from_json(d: Mapping[str, Any]) -> ResultRecord:
    """The record of a `record_json` object; KeyError/TypeError/ValueError on a bad one."""
    from overseer.bench._store import ResultKey
    from overseer.models import Usage

    usage = {
        a: Usage(prompt_tokens=int(p), cached_prompt_tokens=int(c), completion_tokens=int(o))
        for a, (p, c, o) in dict(d["usage_by_actor"]).items()
    }
    key = ResultKey(
        str(d["config"]), str(d["model"]), str(d["suite"]), str(d["task_id"]), int(d["seed"])
    )
    return ResultRecord(
        key,
        str(d["answer"]),
        d["parsed"],
        bool(d["correct"]),
        float(d["score"]),
        usage,
        float(d["latency_s"]),
        d["error"],
        dict(d["extra"]),
        float(d["finished_at"]),
        {str(k): str(v) for k, v in dict(d["provenance"]).items()},
    )
