"""Each attribution method: the judges with a scripted model that names step k must give step k;
the baselines and the learned scorer on hand-made and shipped logs."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from overseer.models import ModelError, ScriptedModel
from overseer.traces import Annotation, TraceStep, Trajectory, load_whowhen
from overseer.traces._baselines import (
    FirstRepeatBaseline,
    LastAgentBaseline,
    MostFrequentBaseline,
    RandomBaseline,
)
from overseer.traces.judges import AllAtOnce, BinarySearch, StepByStep
from overseer.traces.learned import LearnedScorer


def _log(n: int = 12, k: int = 7, long_step: int | None = None) -> Trajectory:
    agents = ["planner", "coder", "terminal"]
    steps = tuple(
        TraceStep(i, agents[i % 3], "user",
                  ("x " * 3000) if i == long_step else f"message {i} from {agents[i % 3]}")
        for i in range(n)
    )  # fmt: skip
    return Trajectory("log", "test", "What is 2+2?", steps, ground_truth="4",
                      annotation=Annotation(agents[k % 3], k, "wrong"))  # fmt: skip


def names_step(k: int, agent: str) -> Any:
    """A scripted judge that knows the decisive step is k and answers every prompt so."""

    def reply(messages: list[dict[str, str]]) -> dict[str, Any]:
        text = messages[-1]["content"]
        if m := re.search(r"steps (\d+)-(\d+) of \d+\)", text):  # a chunk of all-at-once
            a, b = int(m[1]), int(m[2])
            step = k if a <= k <= b else a
            return {"here": a <= k <= b, "agent": agent, "step": step, "reason": "chunk"}
        if m := re.search(r"The last step shown is step (\d+)", text):
            return {"decisive": int(m[1]) == k, "reason": "looked"}
        if m := re.search(r"first part \(steps (\d+)-(\d+)\)", text):
            return {"part": "first" if k <= int(m[2]) else "second", "reason": "halved"}
        return {"agent": agent, "step": k, "reason": "named"}

    return reply


@pytest.mark.parametrize("judge", [AllAtOnce, StepByStep, BinarySearch])
@pytest.mark.parametrize("k", [0, 5, 11])
def test_a_judge_that_names_step_k_gives_step_k(judge: type, k: int) -> None:
    t = _log(k=k)
    agent = t.steps[k].agent
    model = ScriptedModel(names_step(k, agent))
    a = asyncio.run(judge(model).attribute(t, with_truth=False))
    assert (a.step, a.agent) == (k, agent)
    assert a.step_correct(t) and a.agent_correct(t) and a.outcome == "ok"
    assert a.calls == len(model.calls) and a.prompt_tokens > 0


def test_step_by_step_and_binary_search_costs() -> None:
    t = _log(k=5)
    sbs = StepByStep(ScriptedModel(names_step(5, "planner")))
    assert asyncio.run(sbs.attribute(t)).calls == 6  # steps 0..5, stops at the first yes
    bs = BinarySearch(ScriptedModel(names_step(5, "planner")))
    assert asyncio.run(bs.attribute(t)).calls == 3  # 0-11 -> 0-5 -> 3-5 -> 5-5


def test_truth_is_given_only_when_asked() -> None:
    model = ScriptedModel(names_step(3, "planner"))
    asyncio.run(AllAtOnce(model).attribute(_log(k=3), with_truth=True))
    asyncio.run(AllAtOnce(model).attribute(_log(k=3), with_truth=False))
    with_, without = (c["messages"][-1]["content"] for c in model.calls)
    assert "The correct answer to the task is: 4" in with_ and "correct answer" not in without


def test_a_long_log_is_chunked_and_a_long_step_clipped_never_silently() -> None:
    t = _log(n=40, k=33, long_step=2)
    model = ScriptedModel(names_step(33, t.steps[33].agent))
    a = asyncio.run(AllAtOnce(model, window=900).attribute(t))
    assert a.step == 33 and a.outcome == "chunked" and a.notes["chunks"] > 1
    assert a.notes["clipped_steps"] == 1
    assert any(
        "characters of this step not shown" in c["messages"][-1]["content"] for c in model.calls
    )
    sbs = asyncio.run(StepByStep(ScriptedModel(names_step(33, "x")), window=900).attribute(t))
    assert sbs.step == 33 and sbs.outcome == "windowed" and sbs.notes["windowed_calls"] > 0
    bs = asyncio.run(BinarySearch(ScriptedModel(names_step(33, "x")), window=900).attribute(t))
    assert bs.step == 33 and bs.notes["clipped_steps"] > 0


def test_model_failures_are_typed_outcomes() -> None:
    t = _log()
    bad = asyncio.run(AllAtOnce(ScriptedModel(["not json", "still not"])).attribute(t))
    assert bad.outcome == "unparsed" and bad.step is None and bad.calls == 1
    over = asyncio.run(
        AllAtOnce(ScriptedModel([ModelError("prompt over the window")])).attribute(t)
    )
    assert over.outcome == "over_window" and over.agent is None
    none = asyncio.run(StepByStep(ScriptedModel(names_step(99, "x"))).attribute(t))
    assert none.outcome == "none_flagged" and none.step == 11


def _run(method: Any, t: Trajectory) -> Any:
    return asyncio.run(method.attribute(t))


def test_llm_free_baselines() -> None:
    t = _log(k=4)
    r1, r2 = _run(RandomBaseline(3), t), _run(RandomBaseline(3), t)
    assert (r1.agent, r1.step) == (r2.agent, r2.step) and 0 <= r1.step < 12
    last = _run(LastAgentBaseline(), t)
    assert (last.agent, last.step) == ("terminal", 11)
    rep = _run(FirstRepeatBaseline(), t)
    assert rep.outcome == "fallback" and rep.step == 11
    steps = list(t.steps)
    steps[8] = TraceStep(8, "coder", "user", "message 1 from coder")  # repeats step 1
    t2 = Trajectory("r", "test", "q", tuple(steps))
    assert _run(FirstRepeatBaseline(), t2).step == 8
    mf = MostFrequentBaseline()
    mf.fit([_log(k=4), _log(k=4), _log(k=2)])  # coder twice (steps 4), terminal once
    got = _run(mf, t)
    assert (got.agent, got.step) == ("coder", 4)


def test_learned_scorer_finds_the_step_its_features_mark() -> None:
    """Logs whose decisive step is the first one with an error word: the scorer learns it."""

    def log(i: int) -> Trajectory:
        k = 2 + i % 7
        steps = tuple(
            TraceStep(j, f"a{j % 2}", "user",
                      f"step {j} " + ("Error: it failed" if j == k else "all fine"))
            for j in range(10)
        )  # fmt: skip
        return Trajectory(f"l{i}", "test", "q", steps, annotation=Annotation(f"a{k % 2}", k))

    train, test = [log(i) for i in range(30)], [log(i) for i in range(30, 40)]
    m = LearnedScorer("logreg", seed=0)
    with pytest.raises(RuntimeError, match="fit"):
        m.scores(test[0])
    m.fit(train)
    got = [_run(m, t) for t in test]
    assert all(a.step_correct(t) for a, t in zip(got, test, strict=True))
    assert "errors" in got[0].reason or "first_error_step" in got[0].reason


def test_learned_scorer_on_shipped_logs_beats_random_on_alg() -> None:
    alg = load_whowhen("alg")
    m = LearnedScorer("logreg", seed=0)
    m.fit(alg[:90])
    right = sum(_run(m, t).step_correct(t) for t in alg[90:])
    rand = sum(_run(RandomBaseline(0), t).step_correct(t) for t in alg[90:])
    assert right > rand
