"""Travel scoring without a model (gold replay 20/20, empty 0/20), tools on the environment,
and the masfly solver: prompt only, never the task's answer."""

from __future__ import annotations

import json
import math

import pytest

from overseer.adapt.instantiate import OP_PROMPT
from overseer.adapt.retrieve import NEED_PROMPT
from overseer.bench import ResultRecord, team_solver
from overseer.bench.reports import ResultKey
from overseer.experiments.adapt import masfly_solver, travel_table
from overseer.models import ScriptedModel, Usage
from overseer.runtime import read_trace
from overseer.tasks import Task, score
from overseer.tasks.travel import TravelSession, gold_transcript, load_travel, score_travel

from .conftest import TableEmbedder, answer, router


def test_gold_replay_scores_all_and_empty_answers_none() -> None:
    tasks = load_travel("all")
    assert len(tasks) == 20
    gold = [score(t, gold_transcript(t.meta["travel_task"])) for t in tasks]
    assert sum(s.correct for s in gold) == 20 and all(s.value == 1.0 for s in gold)
    empty = [score(t, "") for t in tasks]
    assert sum(s.correct for s in empty) == 0
    assert all(s.parsed is None for s in empty)  # nothing delivered
    # read-only tasks keep their environment check: the micro rate is not zero
    assert 0 < sum(s.value for s in empty) / 20 < 1


def test_tools_change_the_environment_and_the_checks_see_it() -> None:
    s = TravelSession(0)  # rate and book 'Le Marais Boutique' Jan 11-15
    out = s.call("get_rating_reviews_for_hotels", {"hotel_names": ["Le Marais Boutique"]})
    assert "Rating" in out.output or "rating" in out.output.lower()
    wrong = json.loads(s.transcript("booked"))
    wrong["calls"].append(
        {
            "function": "reserve_hotel",
            "arguments": {
                "hotel": "Le Marais Boutique",
                "start_day": "2025-01-12",
                "end_day": "2025-01-15",
            },
        }
    )
    sc = score_travel(0, json.dumps(wrong))
    assert not sc.correct and "environment check failed" in sc.detail
    wrong["calls"][-1]["arguments"]["start_day"] = "2025-01-11"
    assert score_travel(0, json.dumps(wrong)).correct
    assert len(s.tools) == 28
    bad = s.tools["reserve_hotel"]
    import asyncio

    res = asyncio.run(bad.call({"hotel": "x"}))
    assert res.error and "start_day" in res.error


class Sealed(Task):
    """A task whose answer and tests cannot be read."""

    def __getattribute__(self, name: str):
        if name == "answer":
            raise AssertionError("the solver read the task's answer")
        if name == "meta":
            return {}
        return super().__getattribute__(name)


async def test_masfly_solver_never_reads_the_answer(tmp_path) -> None:
    need = {"objective": "add", "capabilities": [], "tools": [], "roles": []}
    op = {
        "team": ["Solver"],
        "agents": [{"name": "Solver", "responsibility": "r", "instructions": "i", "tools": []}],
        "edges": [],
        "description": "d",
    }
    m = router(
        need=lambda _: need,
        op=lambda _: op,
        agent=lambda _: answer("The answer is 5"),
        watch=lambda _: {"decision": "ok"},
    )
    solve = masfly_solver(
        m, store=tmp_path / "a.sqlite", embedder=TableEmbedder({}), trace_dir=tmp_path
    )
    t = Sealed(suite="toy", id="toy/1", prompt="What is 2+3?", answer="5", kind="numeric")
    out = await solve(t, 0)
    assert out.answer == "The answer is 5" and out.error is None
    assert out.extra["op_source"] == "llm" and out.extra["team"] == ["Solver"]
    # need analysis and OP instantiation are booked in the run, as the planner
    assert "planner:planner" in out.usage_by_actor
    planned = [
        e["input"][0]["content"]
        for e in read_trace(out.extra["trace"])
        if e["event"] == "model_call" and e["overseer.actor.kind"] == "planner"
    ]
    assert planned == [NEED_PROMPT, OP_PROMPT]


async def test_a_rerun_of_a_travel_team_writes_its_own_trace(tmp_path) -> None:
    # an interrupted attempt and its rerun must not share a trace file: readers would see both
    model = ScriptedModel(lambda _: answer("Done."))
    solve = team_solver(
        model, preset="chain", agents=2, rounds=1, environment=True, trace_dir=tmp_path
    )
    task = load_travel("all")[0]
    first, second = await solve(task, 0), await solve(task, 0)
    paths = {first.extra["trace"], second.extra["trace"]}
    assert len(paths) == 2
    for p in paths:
        starts = [e for e in read_trace(p) if e["event"] == "run_start"]
        assert len(starts) == 1


def test_travel_table_rates() -> None:
    from overseer.bench import ResultRecord
    from overseer.bench.reports import ResultKey
    from overseer.models import Usage

    def rec(cfg, i, ok, parsed, value):
        return ResultRecord(
            key=ResultKey(cfg, "m", "travel", f"t{i}", 0),
            answer="",
            parsed=parsed,
            correct=ok,
            score=value,
            usage_by_actor={"a": Usage(10, 5)},
            latency_s=0.0,
        )

    rows = travel_table([rec("chain", 1, False, None, 0.5), rec("chain", 2, True, "x", 1.0)])
    expected = {"config": "chain", "n": 2, "success": 0.5, "delivery": 0.5, "micro": 0.75}
    assert rows == [{**expected, "tokens": 15.0, "errors": 0}]


def test_travel_table_keeps_errors_apart() -> None:
    def rec(i: int, ok: bool, error: str | None) -> ResultRecord:
        return ResultRecord(ResultKey("chain", "m", "travel", f"t{i}", 0), "", "x" if ok else None,
                            ok, float(ok), {"a": Usage(10, 0)}, 0.0, error)  # fmt: skip

    (row,) = travel_table([rec(1, True, None), rec(2, False, None), rec(3, False, "timeout")])
    assert (row["n"], row["errors"], row["success"], row["delivery"]) == (3, 1, 0.5, 0.5)
    assert row["tokens"] == 10.0
    (row,) = travel_table([rec(1, False, "boom")])
    assert row["errors"] == 1 and math.isnan(row["success"])


@pytest.mark.parametrize("split", ["train", "test"])
def test_travel_splits_are_disjoint(split: str) -> None:
    other = "test" if split == "train" else "train"
    a = {t.id for t in load_travel(split)}
    assert a and not a & {t.id for t in load_travel(other)}
