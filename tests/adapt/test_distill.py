"""Reflective distillation: success stores a generalised SOP, failure stores an experience and
re-runs a revised OP, code starts from one agent, and test-split tasks are refused."""

from __future__ import annotations

import pytest

from overseer.adapt import Distiller, ExperiencePool, LeakageError, MASFly, MASFlyConfig, Repository
from overseer.adapt.distill import GENERALISE_PROMPT, REFLECT_PROMPT
from overseer.experiments.adapt_campaign import training_ids
from overseer.tasks import Task, ascore, load_suite, split_tasks

from .conftest import TableEmbedder, answer, router, sop

TASK = Task(suite="toy", id="toy/1", prompt="What is 2+3?", answer="5", kind="numeric")
NEED = {"objective": "add", "capabilities": [], "tools": [], "roles": []}


def fly(tmp_path, model, **cfg) -> MASFly:
    emb = TableEmbedder({})
    db = tmp_path / "adapt.sqlite"
    config = MASFlyConfig(**({"watcher": False} | cfg))
    return MASFly(
        model,
        Repository(db, emb),
        ExperiencePool(db, emb),
        config=config,
        trace_dir=tmp_path / "runs",
    )


def other(generalised: dict, reflection: dict, revised: dict | str):
    def reply(messages):
        system = messages[0]["content"]
        if system == GENERALISE_PROMPT:
            return generalised
        if system == REFLECT_PROMPT:
            return reflection
        return revised

    return reply


REFLECTION = {
    "failure_cause": "added wrongly",
    "lessons": [{"agent": "Solver", "attribution": "said 6", "strategy": "recount"}],
}


async def test_success_stores_the_generalised_sop(tmp_path) -> None:
    general = sop("Solver").model_copy(update={"description": "general flow"}).model_dump()
    m = router(
        need=lambda _: NEED,
        op=lambda _: sop("Solver").model_dump(),
        agent=lambda _: answer("The answer is 5"),
        other=other(general, REFLECTION, "{"),
    )
    f = fly(tmp_path, m)
    rec = await Distiller(f, train_ids={"toy/1"}).distill(TASK, TASK.prompt, evaluate=ascore)
    assert rec.success and [a.correct for a in rec.attempts] == [True]
    case = f.repository.cases()[0]
    assert case.sop.description == "general flow" and case.domain == "numeric"
    assert case.source == "toy/1" and len(f.pool) == 0


async def test_failure_stores_an_experience_revises_and_reruns(tmp_path) -> None:
    revised = sop("Solver", "Checker").model_dump()

    m = router(
        need=lambda _: NEED,
        op=lambda _: sop("Solver").model_dump(),
        agent=lambda _: answer("The answer is 6"),
        by_actor={"Checker": lambda _: answer("The answer is 5")},
        other=other(revised, REFLECTION, revised),
    )
    f = fly(tmp_path, m)
    d = Distiller(f, train_ids={"toy/1"}, max_tries=2)
    rec = await d.distill(TASK, TASK.prompt, evaluate=ascore)
    assert [(a.correct, a.op_source) for a in rec.attempts] == [(False, "llm"), (True, "revised")]
    exp = f.pool.all()[0]
    assert exp.failure_cause == "added wrongly" and exp.lessons[0].agent == "Solver"
    assert rec.attempts[0].experience_id == exp.id
    assert f.repository.cases()[0].sop.team == ["Solver", "Checker"]


async def test_code_starts_from_one_agent_and_adds_one_role_on_failure(tmp_path) -> None:
    code = Task(
        suite="toy",
        id="toy/c",
        prompt="def one():\n    '''Return 1.'''\n",
        answer="",
        kind="code",
        meta={"entry_point": "one", "test": "def check(f):\n    assert f() == 1\n"},
    )
    m = router(
        need=lambda _: NEED,
        agent=lambda _: answer("```python\ndef one():\n    return 2\n```"),
        other=other({}, REFLECTION, "{"),  # reflection ok, revision unusable -> fallback
    )
    f = fly(tmp_path, m)
    d = Distiller(f, train_ids={"toy/c"}, max_tries=2)
    rec = await d.distill(code, code.prompt, evaluate=ascore)
    assert [a.op_source for a in rec.attempts] == ["fallback_single", "revised"]
    assert not rec.success and len(f.pool) == 2
    ops = [c for c in m.calls if c["messages"][0]["content"].startswith("You design")]
    assert ops == []  # the first OP was the one-agent team, no design call


async def test_test_split_tasks_are_refused_before_any_model_call(tmp_path) -> None:
    tasks = load_suite("gsm8k-sample", split="all")
    train = training_ids(tasks, seed=0)
    parts = split_tasks(tasks, seed=0)
    assert train == {t.id for t in parts["train"]}
    m = router()
    d = Distiller(fly(tmp_path, m), train_ids=train)
    for t in parts["test"][:3] + parts["validation"][:1]:
        with pytest.raises(LeakageError, match="not in the training split"):
            await d.distill(t, t.prompt, evaluate=ascore)
    assert m.calls == []
