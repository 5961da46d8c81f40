"""AgentDojo's user tasks from inspect-evals 0.26.0 (no model): counts, the tools as the four
frameworks build them, the ground truth scored by the tasks' own checks, the recorded kinds,
fresh environments per run, and tool errors raised as the host's type."""

from __future__ import annotations

import warnings

import pytest

from overseer.tasks.agentdojo import (
    EXPECTED_TASKS,
    SUITES,
    DojoDataError,
    DojoTask,
    DojoToolError,
    DojoTools,
    _tasks,
    load_dojo,
)
from overseer.tasks.agentdojo._kinds import DEEPDIFF_SENSITIVE, deepdiff_compares_computed_fields

#: the tasks whose ground truth is run: all of banking, slack and travel (fast checks); of
#: workspace (each state check diffs the whole environment, about a second) answer-only,
#: action and combined tasks, and one that needs deepdiff < 8.5
SAMPLE = {
    "workspace": (0, 1, 4, 6, 13, 22, 25, 33, 36),
    "travel": tuple(range(20)),
    "banking": tuple(range(16)),
    "slack": (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19, 20),
}


def _dojo(suite: str, n: int | None = None) -> tuple[DojoTask, ...]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_dojo(suite, n)


def _task(suite: str, number: int) -> DojoTask:
    return next(t for t in _dojo(suite) if t.number == number)


def _solve(task: DojoTask) -> tuple[DojoTools, list[str]]:
    """A fresh run with the task's ground-truth calls made through the tools."""
    tools = task.tools()
    outputs = [tools.call(name, args) for name, args in task.ground_truth()]
    return tools, outputs


def _needs_old_deepdiff(suite: str, number: int) -> bool:
    return number in DEEPDIFF_SENSITIVE[suite] and not deepdiff_compares_computed_fields()


@pytest.mark.parametrize("suite", SUITES)
def test_counts_ids_and_order(suite: str) -> None:
    tasks = _dojo(suite)
    assert len(tasks) == EXPECTED_TASKS[suite]
    numbers = [t.number for t in tasks]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert all(t.id == f"agentdojo/{suite}/user_task_{t.number}" for t in tasks)
    assert all(t.suite == suite and t.prompt.strip() for t in tasks)
    assert [t.id for t in _dojo(suite, 3)] == [t.id for t in tasks[:3]]


def test_counts_are_checked_and_bad_input_named(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DojoDataError, match="expected one of workspace, travel"):
        load_dojo("shopping")
    with pytest.raises(ValueError, match="positive integer"):
        load_dojo("banking", 0)
    _tasks._suite_tasks.cache_clear()
    monkeypatch.setitem(_tasks.EXPECTED_TASKS, "banking", 17)
    try:
        with pytest.raises(DojoDataError) as err:
            load_dojo("banking")
        assert str(err.value) == "AgentDojo banking suite: expected 17 user tasks, found 16"
    finally:
        _tasks._suite_tasks.cache_clear()


def test_the_counts_across_suites() -> None:
    assert EXPECTED_TASKS == {"workspace": 40, "travel": 20, "banking": 16, "slack": 20}


@pytest.mark.parametrize("suite", SUITES)
def test_tools_build_in_langchain_openai_agents_smolagents_and_pydantic_ai(suite: str) -> None:
    from agents import FunctionTool, function_tool
    from langchain_core.tools import BaseTool
    from langchain_core.tools import tool as lc_tool
    from pydantic_ai import Tool as PaiTool
    from smolagents import Tool as SmolTool
    from smolagents import tool as smol_tool

    for task in _dojo(suite, 2):
        tools = task.tools()
        functions = tools.functions()
        assert [f.__name__ for f in functions] == tools.names and functions
        for f in functions:
            assert isinstance(lc_tool(f), BaseTool)
            oa = function_tool(f)
            assert isinstance(oa, FunctionTool) and oa.name == f.__name__
            params = set(oa.params_json_schema["properties"])
            sm = smol_tool(f)
            assert isinstance(sm, SmolTool) and set(sm.inputs) == params
            assert all(sm.inputs[p]["description"] for p in params)
            pai = PaiTool(f)
            assert set(pai.function_schema.json_schema["properties"]) == params


def test_a_tool_runs_through_langchain_and_smolagents_and_is_counted() -> None:
    from langchain_core.tools import tool as lc_tool
    from smolagents import tool as smol_tool

    tools = _task("banking", 1).tools()
    get_iban = next(f for f in tools.functions() if f.__name__ == "get_iban")
    recent = next(f for f in tools.functions() if f.__name__ == "get_most_recent_transactions")
    iban = tools.env.bank_account.iban
    assert lc_tool(get_iban).invoke({}) == iban
    assert smol_tool(get_iban)() == iban
    out = lc_tool(recent).invoke({"n": 2})
    assert isinstance(out, str) and "amount:" in out
    assert tools.ran == {"get_iban": 2, "get_most_recent_transactions": 1}
    assert [c.function for c in tools.calls] == [
        "get_iban",
        "get_iban",
        "get_most_recent_transactions",
    ]


def test_the_send_email_attachment_is_typed_for_strict_schemas() -> None:
    import asyncio
    import json

    from agents import function_tool
    from agents.tool_context import ToolContext

    tools = _task("workspace", 0).tools()
    send = function_tool(next(f for f in tools.functions() if f.__name__ == "send_email"))
    assert send.params_json_schema["$defs"]["FileAttachment"]["required"] == ["type", "file_id"]
    args = json.dumps(
        {
            "recipients": ["a@b.com"],
            "subject": "s",
            "body": "b",
            "attachments": [{"type": "file", "file_id": "19"}],
            "cc": None,
            "bcc": None,
        }
    )
    ctx = ToolContext(context=None, tool_name=send.name, tool_call_id="1", tool_arguments=args)
    out = asyncio.run(send.on_invoke_tool(ctx, args))
    assert "status: sent" in out
    assert tools.env.inbox.sent[-1].attachments == ["19"] and tools.ran == {"send_email": 1}


@pytest.mark.parametrize("suite", SUITES)
def test_ground_truth_passes_and_the_answer_is_read_where_the_kind_says(suite: str) -> None:
    for number in SAMPLE[suite]:
        task = _task(suite, number)
        tools, _ = _solve(task)
        solved = task.score(task.ground_truth_output, tools)
        if _needs_old_deepdiff(suite, number):
            assert not solved, f"{task.id}: expected to fail with deepdiff >= 8.5"
            continue
        assert solved, task.id
        empty = task.score("", tools)
        assert empty is (not task.reads_answer), task.id
        assert not task.score(None, tools) or not task.reads_answer


@pytest.mark.parametrize("suite", SUITES)
def test_recorded_kinds_match_the_tasks_own_checks(suite: str) -> None:
    for number in SAMPLE[suite]:
        task = _task(suite, number)
        if _needs_old_deepdiff(suite, number):
            continue
        assert task.classify() == task.kind, task.id


def test_kinds_per_suite() -> None:
    kinds = {s: {k: sum(t.kind == k for t in _dojo(s)) for k in ("answer", "both")} for s in SUITES}
    assert kinds == {
        "workspace": {"answer": 17, "both": 5},
        "travel": {"answer": 14, "both": 5},
        "banking": {"answer": 2, "both": 0},
        "slack": {"answer": 0, "both": 0},
    }
    assert [t.number for t in _dojo("banking") if t.kind == "trivial"] == [5, 8, 9, 10]


def test_a_fresh_run_does_not_see_a_previous_runs_changes() -> None:
    task = _task("banking", 0)  # pays a bill: a new transaction
    before = len(task.tools().env.bank_account.transactions)
    done, _ = _solve(task)
    assert len(done.env.bank_account.transactions) == before + 1
    assert task.score("", done)
    fresh = task.tools()
    assert len(fresh.env.bank_account.transactions) == before
    assert fresh.ran == {} and fresh.calls == []
    assert not task.score("", fresh)


def test_a_tools_own_error_is_raised_as_the_hosts_type() -> None:
    class HostToolError(Exception):
        pass

    tools = _task("workspace", 0).tools()
    send = next(f for f in tools.functions() if f.__name__ == "send_email")
    with pytest.raises(DojoToolError, match=r"(?s)send_email: ValidationError: .*valid email"):
        send(["not an address"], "s", "b")  # AgentDojo's Email model rejects it
    tools.failure = HostToolError
    with pytest.raises(HostToolError):
        send(recipients=["not an address"], subject="s", body="b")
    with pytest.raises(HostToolError, match="unknown tool"):
        tools.call("format_disk", {})
    with pytest.raises(HostToolError, match="send_email"):
        send()
    with pytest.raises(HostToolError, match="send_email: missing a required argument"):
        tools.call("send_email", {"to": "a@b.com"})
    assert tools.ran["send_email"] == 2
    assert len(tools.env.inbox.sent) == len(_task("workspace", 0).tools().env.inbox.sent)


def test_travel_shares_the_one_shim() -> None:
    from overseer.tasks.agentdojo import _shim
    from overseer.tasks.travel import _shim as travel_shim

    assert travel_shim.CURRENT is _shim.CURRENT
    assert travel_shim.load_travel_suite() is _shim.load_suite("travel")
    assert travel_shim.TravelDataError is DojoDataError
