"""AgentPrune's evaluation of full vs pruned teams on the Ray backend stores what asyncio stores.

Ray starts once for the module (local, 2 CPUs, no dashboard) and is shut down after it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from overseer.bench import ResultStore, RunSummary
from overseer.bench.backends import RayBackend, WorkerSpec
from overseer.experiments.prune import evaluate_pruned
from overseer.experiments.prune_runs import RunSettings, build_team
from overseer.models import ScriptedModel
from overseer.tasks import load_suite

pytestmark = pytest.mark.usefixtures("local_ray")  # tests/conftest.py


def reply(messages: list) -> object:
    """The agents answer B, or A on questions mentioning 'the'."""
    pick = "A" if " the " in messages[-1]["content"] else "B"
    return {"thought": "t", "action": "answer", "answer": f"I think {pick}. Answer: {pick}"}


def scripted() -> ScriptedModel:
    """The agents as `reply`; the decision node (actor "decision") answers B."""
    return ScriptedModel(reply, by_actor={"decision": lambda m: "Answer: B"})


def on_ray(configs) -> RayBackend:
    return RayBackend(WorkerSpec(configs, scripted), workers=2)


def evaluate(tmp_path: Path, store: Path, backend_for=None) -> RunSummary:
    tasks = load_suite("mmlu-sample", split="test", seed=0, limit=3)
    base = build_team("complete", 3, rounds=1, kind=tasks[0].kind)
    pruned = build_team("chain", 3, rounds=1, kind=tasks[0].kind)
    rs = RunSettings(max_tokens=64, trace_dir=tmp_path / "runs", seed=0)
    summary, recs = asyncio.run(
        evaluate_pruned(base, pruned, tasks, attack="replace", rs=rs, model_name="scripted",
                        load_model=scripted, store=store, backend_for=backend_for)
    )  # fmt: skip
    assert [len(v) for v in recs.values()] == [3, 3]
    return summary


def stored(path: Path) -> dict:
    with ResultStore(path) as rs:
        return {
            r.key: (r.answer, r.correct, r.score, r.error, dict(r.usage_by_actor))
            for r in rs.records()
        }


def test_full_and_pruned_on_ray_store_what_asyncio_stores(tmp_path: Path) -> None:
    a, r = tmp_path / "a.sqlite", tmp_path / "r.sqlite"
    assert evaluate(tmp_path, a) == RunSummary(6, 0, 6, 0, True)
    assert evaluate(tmp_path, r, on_ray) == RunSummary(6, 0, 6, 0, True)
    assert evaluate(tmp_path, r, on_ray) == RunSummary(6, 6, 0, 0, False)  # resumed
    assert stored(r) == stored(a)
    assert (
        len({sum(u.prompt_tokens for u in v[4].values()) for v in stored(r).values()}) > 1
    )  # teams differ in cost
