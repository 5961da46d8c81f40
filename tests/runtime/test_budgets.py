"""Budgets: validated when made, a call capped to the tokens left, a context overflow stops."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from overseer.models import Completion, Model, Request, ScriptedModel, Usage
from overseer.models.errors import ContextWindowError
from overseer.runtime import Budget, Executor, Ledger, make_team
from overseer.runtime._ledger import BudgetExceeded, MeteredModel

PROMPT = 29


class Greedy(Model):
    """Always spends every completion token it is allowed; a fixed prompt size."""

    name = "greedy"

    def __init__(self) -> None:
        self.asked: list[int] = []

    def _complete(self, request: Request) -> Completion:
        self.asked.append(request.max_tokens)
        text = '{"thought": "t", "action": "answer", "answer": "x"}'
        return Completion(text, Usage(PROMPT, request.max_tokens), 0.0, self.name)


@pytest.mark.parametrize(
    "bad",
    [
        {"max_tokens": 0},
        {"max_tokens": -5},
        {"max_calls": 0},
        {"max_seconds": 0.0},
        {"max_seconds": -1.0},
    ],
)
def test_budget_rejects_zero_and_negative(bad: dict) -> None:
    with pytest.raises(ValueError, match=f"budget {next(iter(bad))}: expected > 0"):
        Budget(**bad)


def test_a_call_is_capped_to_what_is_left() -> None:
    inner = Greedy()
    ledger = Ledger("r", Budget(max_tokens=600))
    m = MeteredModel(inner, ledger, "a1", "agent", None)
    with pytest.raises(BudgetExceeded):
        for _ in range(10):
            m.complete([{"role": "user", "content": "q"}], max_tokens=200)
    # 229 + 229 = 458 spent, then 142 left: the third call is capped to 142 -> 629 would be
    # 600 + one prompt; never more than that.
    assert inner.asked == [200, 200, 142]
    assert ledger.total.total_tokens <= 600 + PROMPT
    assert ledger.reserved == 0


async def test_concurrent_calls_share_what_is_left() -> None:
    inner = Greedy()
    ledger = Ledger("r", Budget(max_tokens=300))
    m = MeteredModel(inner, ledger, "a1", "agent", None)

    async def one() -> None:
        with contextlib.suppress(BudgetExceeded):
            await m.acomplete([{"role": "user", "content": "q"}], max_tokens=200)

    await asyncio.gather(*(one() for _ in range(4)))
    assert sum(inner.asked) <= 300  # promises to calls under way count as spent
    assert ledger.total.completion_tokens <= 300 and ledger.reserved == 0


async def test_team_run_never_overshoots_by_more_than_a_prompt(tmp_path: Path) -> None:
    inner = Greedy()
    ex = Executor(inner, trace_dir=tmp_path, budget=Budget(max_tokens=600), max_tokens=200)
    res = await ex.run(make_team("chain", 4, rounds=3), "Q")
    assert res.stop_reason == "budget_tokens"
    assert res.total.total_tokens <= 600 + PROMPT


async def test_context_overflow_stops_the_run_the_first_time(tmp_path: Path) -> None:
    calls: list[int] = []

    def overflow(messages: list) -> object:
        calls.append(1)
        raise ContextWindowError("request (631 tokens) exceeds the available context size")

    model = ScriptedModel(overflow)
    res = await Executor(model, trace_dir=tmp_path).run(make_team("chain", 4), "Q")
    assert res.stop_reason == "context_window"
    assert "exceeds the available context size" in (res.error or "")
    assert len(calls) == 1 and not res.failures  # not once more for every agent


async def test_bench_budget_limits_each_task_on_its_own(tmp_path: Path) -> None:
    from overseer.bench import ResultStore, SolverConfig, SolverOutput, run_experiment
    from overseer.tasks import Task

    def build(model: Model):
        async def solve(task: Task, seed: int) -> SolverOutput:
            for _ in range(5):  # a greedy solver: five calls of 200 tokens each
                await model.acomplete([{"role": "user", "content": task.id}], max_tokens=200)
            return SolverOutput("1", {})

        return solve

    inner = Greedy()
    tasks = [Task("toy", f"toy/{i}", "q", "1", "numeric") for i in range(2)]
    with ResultStore(tmp_path / "r.sqlite") as store:
        s = await run_experiment(
            configs=[SolverConfig("greedy", "", build)], tasks=tasks, seeds=[0], model_name="g",
            load_model=lambda: inner, store=store, progress=False, budget=Budget(max_tokens=600),
        )  # fmt: skip
        errors = [r.error for r in store.records()]
    assert s.errors == 2 and all("budget exceeded (tokens)" in (e or "") for e in errors), errors
    assert inner.asked == [200, 200, 142] * 2  # each task got its own 600 tokens
