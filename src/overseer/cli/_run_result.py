"""The printed result of `overseer run`: the answer, the failures, what oversaw the run and
what acted, tokens per actor and the trace path (or one JSON document with --json)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from overseer.cli._app import CommandFailed, out_console
from overseer.cli._io import emit_json, strip_controls

if TYPE_CHECKING:
    from rich.table import Table

    from overseer.runtime import RunResult


def _usage_table(res: RunResult) -> Table:
    from rich.table import Table

    t = Table(title=f"tokens by actor (run {res.run_id})")
    for col in ("actor", "calls", "prompt", "cached", "completion", "total"):
        t.add_column(col, justify="left" if col == "actor" else "right")
    rows = [(a, u, res.calls_by_actor.get(a, 0)) for a, u in sorted(res.usage_by_actor.items())]
    rows.append(("net", res.total, sum(res.calls_by_actor.values())))
    for actor, u, calls in rows:
        t.add_row(
            actor,
            str(calls),
            str(u.prompt_tokens),
            str(u.cached_prompt_tokens),
            str(u.completion_tokens),
            str(u.total_tokens),
            style="bold" if actor == "net" else None,
        )
    return t


def run_failure(res: RunResult, backend: str = "the model") -> str | None:
    """Why a run did not do what it was asked: a stop in error, every model call failed (a
    context-window stop included), or an empty answer (stop reason empty_answer)."""
    if res.stop_reason == "error":
        return f"run {res.run_id} stopped in error: {res.error}"
    detail = res.calls_all_failed()
    if detail is not None:
        return f"run {res.run_id}: every model call failed (backend {backend}): {detail}"
    if res.stop_reason == "empty_answer":
        return (
            f"run {res.run_id}: the answer is empty (stop reason empty_answer: every reply "
            f"was unparsable or empty); trace {res.trace_path}"
        )
    return None


def acted(res: RunResult) -> dict[str, dict[str, int]]:
    """The verdicts the run's plug-ins gave, by plug-in and action, from its trace (the bus
    writes one `verdict` event per verdict it applied; approvals are not written)."""
    from overseer.runtime import read_trace

    counts: dict[str, Counter[str]] = {}
    try:
        events = list(read_trace(res.trace_path))
    except (OSError, ValueError):  # no trace (trace_dir None) or an unreadable one
        return {}
    for e in events:
        if e.get("event") == "verdict":
            by = str(e.get("by", "?"))
            counts.setdefault(by, Counter())[str(e.get("action", "?"))] += 1
    return {by: dict(c) for by, c in sorted(counts.items())}


def oversight(res: RunResult, overseers: list[str]) -> dict[str, Any]:
    """What oversaw the run, what acted (verdicts by plug-in and action) and the plug-ins' own
    counts (RunResult.plugin_stats: steps reviewed, rule firings, actions)."""
    return {"overseers": overseers, "acted": acted(res), "stats": dict(res.plugin_stats)}


def _oversight_lines(doc: dict[str, Any]) -> list[str]:
    who = ", ".join(doc["overseers"]) or "nothing (no plug-in on the bus)"
    lines = [f"oversaw the run: {who}"]
    acts = doc["acted"]
    if doc["overseers"]:
        told = "; ".join(f"{by}: " + _counts(a) for by, a in acts.items())
        lines.append(
            f"acted: {sum(sum(a.values()) for a in acts.values())} verdicts"
            + (f" ({told})" if told else "")
        )
    rules: Counter[str] = Counter()
    for name, st in doc["stats"].items():
        rules.update(st.get("rules") or {})  # each rule plug-in reports its own firings
        if set(st) - {"rules"}:  # a plug-in with counts of its own: the LLM tier, a monitor
            actions = st.get("actions") or {}
            lines.append(
                f"{name}: {st.get('steps', 0)} steps reviewed; "
                f"actions: {_counts(actions) or 'none'}"
            )
    if any("rules" in st for st in doc["stats"].values()):
        lines.append(f"rule firings: {_counts(dict(rules)) or 'none'}")
    return lines


def _counts(c: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items()))


def result_doc(res: RunResult, the_task: Any, overseers: list[str] | None = None) -> dict[str, Any]:
    """The result of `overseer run` as one JSON-ready document."""
    doc: dict[str, Any] = {
        "run_id": res.run_id,
        "answer": res.answer,
        "stop_reason": res.stop_reason,
        "error": res.error,
        "rounds": res.rounds,
        "failures": [asdict(f) for f in res.failures],
        "usage": asdict(res.total),
        "by_actor": {
            a: {**asdict(u), "calls": res.calls_by_actor.get(a, 0)}
            for a, u in sorted(res.usage_by_actor.items())
        },
        "oversight": oversight(res, overseers or []),
        "trace": str(res.trace_path),
    }
    if the_task is not None:
        from overseer.tasks import score  # a packaged task (--task): the lab's scorer

        sc = score(the_task, res.answer)
        doc["task"] = {
            "id": the_task.id,
            "gold": the_task.answer,
            "parsed": sc.parsed,
            "correct": sc.correct,
        }
    return doc


def print_result(res: RunResult, the_task: Any, overseers: list[str] | None = None) -> None:
    """The answer, its score on a task, failures, oversight, tokens by actor, the trace."""
    console = out_console()
    console.print(f"answer ({res.stop_reason}):", style="bold")
    console.print(strip_controls(res.answer))
    if the_task is not None:
        from overseer.tasks import score  # a packaged task (--task): the lab's scorer

        sc = score(the_task, res.answer)
        console.print(
            f"task {the_task.id}: gold {the_task.answer!r}, parsed {sc.parsed!r}, "
            f"correct {sc.correct}",
        )
    for f in res.failures:
        console.print(f"agent {f.agent} failed in round {f.round}: {f.reason}: {f.detail}")
    if res.error:
        console.print(f"stopped: {res.error}")
    for line in _oversight_lines(oversight(res, overseers or [])):
        console.print(strip_controls(line))
    console.print(_usage_table(res))
    console.print(f"trace: {res.trace_path}")


def report_run(
    res: Any,
    the_task: Any,
    *,
    json_out: bool,
    allow_errors: bool,
    backend: str = "the model",
    overseers: list[str] | None = None,
) -> None:
    """Print the result (or one JSON document); a run that failed (see `run_failure`) is one
    line naming `backend` and exit 1."""
    if json_out:
        emit_json(result_doc(res, the_task, overseers))
    else:
        print_result(res, the_task, overseers)
    failure = run_failure(res, backend)
    if failure and not allow_errors:
        raise CommandFailed(failure)
