"""The plumbing of benchmarks/framework_tasks.py, on the scripted loopback server (no model):
every framework and arm runs and is stored, the counts are the server's, a rerun skips what
is stored, caps hold, the proxy arm goes through `overseer proxy`, and the page is written."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from overseer.tasks.pageloop import PageTask, make_tasks

from .loopback import LoopbackServer, Reply, ToolCall

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    """benchmarks/framework_tasks.py, loaded from its file (benchmarks is no package)."""
    spec = importlib.util.spec_from_file_location(
        "framework_tasks", ROOT / "benchmarks" / "framework_tasks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ft = _bench()
TASK = make_tasks(1)[0]


def trapped(task: PageTask) -> Any:
    """A model walking into every trap: fetch the page, page on four times with the same
    argument (the fourth is past the rule tier's loop_limit of 3), try the failing tool,
    then answer the task's number (smolagents through its final_answer tool, the others in
    text; as soon as overseer closes the tools, at once)."""
    plan = [
        ToolCall("fetch_page", {"url": task.url}),
        *[ToolCall("next_page", {"n": 2})] * 4,
        ToolCall("cached_copy", {"url": task.url}),
    ]

    def script(body: Mapping[str, Any], n: int) -> Reply:
        offered = {t["function"]["name"] for t in body.get("tools") or []}
        step = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        if step < len(plan) and plan[step].name in offered:
            return Reply(calls=(plan[step],))
        if "final_answer" in offered:
            return Reply(calls=(ToolCall("final_answer", {"answer": f"It is {task.answer}."}),))
        return Reply(text=f"The answer is {task.answer}.")

    return script


def test_every_framework_and_arm_is_run_stored_paired_and_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, page = tmp_path / "runs.sqlite", tmp_path / "frameworks.md"
    # the proxy arm, a process each (smolagents: below; on the real model: tests/e2e)
    proxied = ("langgraph", "pydantic-ai", "openai-agents")
    with LoopbackServer(trapped(TASK)) as srv:
        argv = ["--base-url", srv.base_url, "--model", "scripted", "--n", "1", "--max-calls", "8"]
        argv += ["--store", str(store), "--page", str(page)]
        assert ft.main([*argv, "--arms", "without,with,nomask"]) == 0
        # a second invocation adds the proxy arm and skips every stored row
        argv += ["--frameworks", ",".join(proxied), "--arms", "without,with,nomask,proxy"]
        assert ft.main(argv) == 0
        served, runs = len(srv.requests), srv.usages
        rows = {(r.framework, r.arm): r for r in ft.Store(store).rows()}
        arms = {(f, a) for f in ft.FRAMEWORKS for a in ("without", "with", "nomask")}
        assert set(rows) == arms | {(f, "proxy") for f in proxied}
        # the counts are the server's own: every reply's usage, summed
        assert sum(r.calls for r in rows.values()) == len(runs)
        assert sum(r.prompt_tokens for r in rows.values()) == sum(u["prompt_tokens"] for u in runs)
        cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in runs)
        assert (
            sum(r.evaluated_tokens for r in rows.values())
            == sum(u["prompt_tokens"] for u in runs) - cached
        )
        # a rerun finds every row it asks for stored: no request reaches the server
        assert ft.main(argv) == 0
        assert len(srv.requests) == served
    for (fw, arm), r in rows.items():
        assert r.right and r.error is None, (fw, arm, r.answer, r.error)
        assert r.evaluated_from == "cached" and r.tools["fetch_page"] == 1
        assert 0 < r.page_tokens <= r.prompt_tokens
    for fw in ft.FRAMEWORKS:
        plain, guarded = rows[fw, "without"], rows[fw, "with"]
        assert not plain.acted and guarded.acted["purification"] == 1
        assert guarded.acted["loop_breaker"] >= 1
        assert guarded.page_tokens * 3 < plain.page_tokens
        assert guarded.prompt_tokens * 3 < plain.prompt_tokens
        assert "masking" not in rows[fw, "nomask"].acted
    for fw in proxied:
        r = rows[fw, "proxy"]
        assert r.acted["purification"] == 1 and r.acted["loop_breaker"] >= 1
        assert r.page_tokens * 5 < rows[fw, "without"].page_tokens
    assert capsys.readouterr().out.count("paired on the same tasks") == 3 * len(ft.FRAMEWORKS)
    title, *text = page.read_text(encoding="utf-8").splitlines()
    assert title.startswith("# Real framework agents") and "x prompt tokens" in title
    assert "right 4 vs 4 of 4 runs" in title
    assert {f"**{fw}**" for fw in ft.FRAMEWORKS} <= set(text)
    assert sum(line.startswith("| with vs without |") for line in text) == 4
    assert sum(line.startswith("| nomask vs with |") for line in text) == 4
    assert sum("(met)" in line for line in text) == 4


def test_every_framework_stops_at_the_call_cap(tmp_path: Path) -> None:
    """A model that pages forever: each framework's own cap ends the run at --max-calls."""

    def stubborn(body: Mapping[str, Any], n: int) -> Reply:
        return (
            Reply(calls=(ToolCall("next_page", {"n": n}),))
            if body.get("tools")
            else Reply(text="?")
        )

    args = ft.options(["--model", "scripted", "--max-calls", "4"])
    for fw in ft.FRAMEWORKS:
        for arm in ("without", "with"):
            with LoopbackServer(stubborn) as srv:
                args.base_url = srv.base_url
                row = ft.run_one(fw, arm, TASK, args)
            assert row.calls == 4 and not row.right, (fw, arm, row)


def test_the_peers_act_in_their_own_framework_and_the_unanswerable_are_scored(
    tmp_path: Path,
) -> None:
    """Issue 48: each peer arm runs the framework's own mechanism and the row says what it
    did (LangChain cleared and limited tool calls; masking hid outputs beyond the last
    MASK_KEEP); an unanswerable task answered with a number is counted as invented."""
    (missing,) = make_tasks(1, 29, chars=(11_000, 13_000), kind="missing")

    def pager(body: Mapping[str, Any], n: int) -> Reply:
        step = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        if body.get("tools") and step < 13:
            return Reply(calls=(ToolCall("next_page", {"n": step}),))
        return Reply(text="It is 42.")  # a value the page never held

    args = ft.options(["--model", "scripted", "--max-calls", "14"])
    runs = [("langgraph", "lc-tuned"), ("langgraph", "mask"), ("openai-agents", "mask"),
            ("pydantic-ai", "mask"), ("smolagents", "mask"), ("openai-agents", "trim")]  # fmt: skip
    acted = {}
    for fw, arm in runs:
        with LoopbackServer(pager) as srv:
            args.base_url = srv.base_url
            row = ft.run_one(fw, arm, missing, args)
        assert row.kind == "missing" and row.invented and not row.right, (fw, arm, row)
        acted[fw, arm] = row.acted
    assert acted["langgraph", "lc-tuned"].get("limited", 0) >= 1
    for fw in ("langgraph", "openai-agents", "pydantic-ai", "smolagents"):
        assert max(acted[fw, "mask"].values(), default=0) >= 1, (fw, acted[fw, "mask"])
    # the SDK's trimmer never trims inside one turn: its recent window holds the whole run
    assert acted["openai-agents", "trim"] == {}
    assert not ft.applies("pydantic-ai", "trim") and ft.applies("pydantic-ai", "mask")


def test_an_agentdojo_task_runs_in_each_framework_and_is_scored_by_its_own_check(
    tmp_path: Path,
) -> None:
    """Issue 48 (b): AgentDojo's user tasks run as cases of the benchmark: the suite's tools
    reach the framework's agent, and the task's own utility check scores the answer."""
    (case,) = [c for c in ft.dojo_cases(["banking"], 2) if c.id.endswith("user_task_1")]

    def solver(body: Mapping[str, Any], n: int) -> Reply:
        offered = {t["function"]["name"] for t in body.get("tools") or []}
        step = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        if step == 0 and "get_most_recent_transactions" in offered:
            return Reply(calls=(ToolCall("get_most_recent_transactions", {"n": 100}),))
        if "final_answer" in offered:
            return Reply(calls=(ToolCall("final_answer", {"answer": "It was 1050."}),))
        return Reply(text="Your total spending in March 2022 was 1050.")

    args = ft.options(["--model", "scripted", "--max-calls", "6"])
    for fw in ft.FRAMEWORKS:
        with LoopbackServer(solver) as srv:
            args.base_url = srv.base_url
            row = ft.run_one(fw, "with", case, args)
        assert row.kind == "dojo-answer" and row.tools == {"get_most_recent_transactions": 1}
        assert row.right and not row.invented, (fw, row)


def test_the_proxy_purifies_what_smolagents_sends() -> None:
    """smolagents sends its calls as 'Calling tools:' text and each output as a user turn
    'Observation:...': the proxy judges those too (the page cut, the loop refused)."""
    args = ft.options(["--model", "scripted", "--max-calls", "6"])
    with LoopbackServer(trapped(TASK)) as srv:
        args.base_url = srv.base_url
        row = ft.run_one("smolagents", "proxy", TASK, args)
        plain = ft.run_one("smolagents", "without", TASK, args)
    # (today its trace reports two purifications of the one fetched page)
    assert row.right and row.acted.get("purification", 0) >= 1
    assert row.page_tokens * 3 < plain.page_tokens


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--frameworks", "crewai"], "--frameworks: expected some of langgraph,"),
        (["--arms", "with,maybe"], "--arms: expected some of without,with,nomask,proxy"),
        (["--max-calls", "1"], "--max-calls: expected an integer >= 2, got 1"),
    ],
)
def test_bad_options_fail_with_one_line(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        ft.options(argv)
    assert info.value.code == 2 and said in capsys.readouterr().err


def test_no_server_and_runs_left_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ft.main(["--n", "1", "--store", str(tmp_path / "s.sqlite")]) == 2
    assert capsys.readouterr().err.strip() == (
        "framework_tasks: --base-url or --serve: expected a server for the runs left"
    )
    assert ft.main(["--n", "0", "--store", str(tmp_path / "s.sqlite")]) == 2
    assert "expected n an integer in [1, 500], got 0" in capsys.readouterr().err


def test_an_export_restores_the_same_rows_into_a_new_store(tmp_path: Path) -> None:
    """`--export FILE` then `--rows-from FILE`: a later session resumes from the same rows
    (a row the new store has already is kept, the export's other run of it kept as history),
    and the same rows give the same bytes."""
    from _frameworks_report import Row, Store

    old = Store(tmp_path / "old.sqlite")
    for arm, right in (("with", True), ("without", False)):
        old.put(Row("m", "langgraph", arm, 40, "pageloop11k/40/0", right=right, acted={"x": 1}))
    assert old.export(tmp_path / "a.jsonl.gz") == 2
    new = Store(tmp_path / "new.sqlite")
    new.put(Row("m", "langgraph", "with", 40, "pageloop11k/40/0", right=False))
    assert new.absorb(tmp_path / "a.jsonl.gz") == 2
    got = {r.arm: r.right for r in new.rows()}
    assert got == {"with": False, "without": False}
    old.export(tmp_path / "b.jsonl.gz")
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    # the export's other run of `with` is history, under another key (`with-COMMIT`, `old`
    # when it names none): not among the rows the tables and the page read
    keys = sorted(new.db.execute("SELECT arm, json_extract(row, '$.right') FROM runs"))
    assert keys == [("with", 0), ("with-old", 1), ("without", 0)]
    assert new.absorb(tmp_path / "a.jsonl.gz") == 0


def test_a_rerun_at_newer_code_supersedes_the_stored_run_and_keeps_it_as_history(
    tmp_path: Path,
) -> None:
    """`--rows-from FILE --replace`: the export's runs replace the stored ones of the same key;
    each replaced row moves to `ARM-COMMIT` (out of the tables), the others are untouched."""
    from _frameworks_report import Row, Store

    store = Store(tmp_path / "s.sqlite")
    for task, right in (("pageloop11k-missing/40/0", False), ("pageloop11k/40/0", True)):
        store.put(Row("m", "smolagents", "with", 40, task, right=right, commit="aaa"))
    rerun = Store(tmp_path / "rerun.sqlite")
    rerun.put(Row("m", "smolagents", "with", 40, "pageloop11k-missing/40/0", right=True,
                  commit="bbb"))  # fmt: skip
    rerun.export(tmp_path / "r.jsonl.gz")
    assert store.absorb(tmp_path / "r.jsonl.gz", replace=True) == 1
    now = sorted((r.task, r.right, r.commit) for r in store.rows())
    assert now == [("pageloop11k-missing/40/0", True, "bbb"), ("pageloop11k/40/0", True, "aaa")]
    keys = sorted(store.db.execute("SELECT arm, task FROM runs"))
    assert ("with-aaa", "pageloop11k-missing/40/0") in keys and len(keys) == 3
    assert store.absorb(tmp_path / "r.jsonl.gz") == 0  # without --replace: kept as stored


def test_a_store_rebuilt_from_its_export_keeps_the_archived_runs_as_history(
    tmp_path: Path,
) -> None:
    """An export lists an archived run (`with-aaa`) with its arm as run (`with`), after the
    current one: absorbed into a new store it is history again, not dropped and not current,
    and the rebuilt store exports the same bytes."""
    from _frameworks_report import Row, Store

    store = Store(tmp_path / "s.sqlite")
    store.put(Row("m", "smolagents", "with", 40, "pageloop11k/40/0", right=False, commit="aaa"))
    rerun = Store(tmp_path / "rerun.sqlite")
    rerun.put(Row("m", "smolagents", "with", 40, "pageloop11k/40/0", right=True, commit="bbb"))
    rerun.export(tmp_path / "r.jsonl.gz")
    store.absorb(tmp_path / "r.jsonl.gz", replace=True)
    store.export(tmp_path / "all.jsonl.gz")
    rebuilt = Store(tmp_path / "rebuilt.sqlite")
    assert rebuilt.absorb(tmp_path / "all.jsonl.gz") == 2
    assert [(r.right, r.commit) for r in rebuilt.rows()] == [(True, "bbb")]
    keys = sorted(rebuilt.db.execute("SELECT arm, task FROM runs"))
    assert keys == [("with", "pageloop11k/40/0"), ("with-aaa", "pageloop11k/40/0")]
    rebuilt.export(tmp_path / "again.jsonl.gz")
    assert (tmp_path / "again.jsonl.gz").read_bytes() == (tmp_path / "all.jsonl.gz").read_bytes()
    assert rebuilt.absorb(tmp_path / "all.jsonl.gz") == 0  # each run once, history included


def test_the_best_peer_is_judged_on_the_tasks_overseer_ran_not_on_one_cheap_task() -> None:
    """An arm run on one task of five is not the best peer for being cheap there; among the
    arms that ran (nearly) all of overseer's tasks, the best share right wins, then fewer
    prompt tokens a task."""
    from _frameworks_report import Row
    from _peers_report import best_peer

    def rows(arm: str, n: int, right: int, tokens: int) -> list[Row]:
        return [
            Row("m", "langgraph", arm, 40, f"pageloop11k/40/{i}", prompt_tokens=tokens,
                right=i < right)
            for i in range(n)
        ]  # fmt: skip

    got = [*rows("with", 5, 2, 5_000), *rows("without", 5, 0, 40_000)]
    got += [*rows("lc-tuned", 5, 0, 9_000), *rows("mask", 1, 0, 100)]
    assert best_peer(got, "langgraph", "a") == "lc-tuned"
    got += rows("mask", 5, 5, 30_000)[1:]  # mask on all five now, four of them right
    assert best_peer(got, "langgraph", "a") == "mask"


def test_the_peers_pages_title_passes_the_evidence_page_check() -> None:
    """The title the report writes (judged cells, or none judged) states a verdict the page
    check of tests/evidence recognises; stop 54's CI failed on a title without one."""
    from _frameworks_report import Row
    from _peers_report import verdict
    from tests.evidence.test_page_titles import verdict_problems

    def rows(arm: str, kind: str, n: int, right: int) -> list[Row]:
        return [
            Row("m", "langgraph", arm, 40, f"pageloop11k/40/{kind}{i}", kind=kind,
                prompt_tokens=1_000, right=i < right)
            for i in range(n)
        ]  # fmt: skip

    judged = [*rows("with", "missing", 12, 12), *rows("without", "missing", 12, 0)]
    for title in (verdict(judged), verdict(rows("with", "missing", 2, 2))):
        assert verdict_problems(f"# {title}\n") == []


def test_a_peer_that_changed_no_request_is_named_with_why() -> None:
    """A peer whose runs all left every request as it was is said to have run as the plain
    agent (with why, for masking and the trimmer); one that acted once is not named."""
    from _frameworks_report import Row
    from _peers_report import idle_peers

    def rows(arm: str, acted: list[bool]) -> list[Row]:
        return [
            Row("m", "pydantic-ai", arm, 41, f"pageloop11k/41/{i}", acted={"x": 1} if a else {})
            for i, a in enumerate(acted)
        ]  # fmt: skip

    said = idle_peers([*rows("with", [True] * 3), *rows("mask", [False] * 3)], "pydantic-ai", "a")
    assert said.startswith("mask changed no request") and "M = 10" in said
    assert (
        idle_peers([*rows("with", [True]), *rows("mask", [False, True])], "pydantic-ai", "a") == ""
    )
    assert idle_peers(rows("with", [True]), "pydantic-ai", "a") == ""


def test_a_cell_where_no_arm_answered_right_says_so() -> None:
    """A family (a) or (b) cell where every arm got every task wrong is said to measure no
    accuracy difference; one right answer anywhere, or family (c), gets no such sentence."""
    from _frameworks_report import Row
    from _peers_report import none_right

    def rows(arm: str, right: list[bool], fw: str = "langgraph") -> list[Row]:
        return [
            Row("m", fw, arm, 0, f"agentdojo/banking/user_task_{i}", kind="dojo", right=r)
            for i, r in enumerate(right)
        ]  # fmt: skip

    wrong = [*rows("with", [False] * 3), *rows("without", [False] * 3)]
    assert none_right(wrong, "langgraph", "b").startswith("No arm answered any task right")
    assert none_right([*wrong, *rows("lc-tuned", [False, True, False])], "langgraph", "b") == ""
    assert none_right(wrong, "openai-agents", "b") == ""  # that framework ran nothing here
    assert none_right(wrong, "langgraph", "c") == ""


def test_stored_unanswerable_runs_are_scored_again_by_todays_scorer() -> None:
    """A fix to the not-found scorer reaches the runs already stored, every arm alike; an
    invented value, an error and an answerable task keep what was stored."""
    Row = ft.Row
    base = {"model": "m", "framework": "smolagents", "seed": 40, "kind": "failing"}
    said = Row(arm="with", task="pageloop11k-failing/40/3", answer="It does not hold the answer.",
               **base)  # fmt: skip
    invented = Row(arm="without", task="pageloop11k-failing/40/1", answer="It does not hold "
                   "the answer: 1294.", invented=True, **base)  # fmt: skip
    failed = Row(arm="with", task="pageloop11k-failing/40/4", answer="Could not find it.",
                 error="TimeoutError", **base)  # fmt: skip
    answered = Row(arm="with", task="pageloop11k/40/0", answer="It is 12 m.", right=True,
                   **(base | {"kind": "answerable"}))  # fmt: skip
    out = ft.rescored([said, invented, failed, answered])
    assert [r.right for r in out] == [True, False, False, True]
