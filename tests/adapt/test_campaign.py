"""The distillation campaign of `overseer adapt init|distill`, as a library function."""

from __future__ import annotations

from overseer.adapt import ExperiencePool, Repository
from overseer.adapt.distill import REFLECT_PROMPT
from overseer.experiments.adapt_campaign import distill_tasks, training_tasks

from .conftest import TableEmbedder, answer, router, sop

NEED = {"objective": "plan", "capabilities": [], "tools": [], "roles": []}
REFLECTION = {
    "failure_cause": "booked nothing",
    "lessons": [{"agent": "Solver", "attribution": "no call", "strategy": "call the tools"}],
}


def test_training_tasks_come_from_the_training_split_only() -> None:
    tasks, train = training_tasks("travel", seed=0, limit=2)
    assert len(tasks) == 2 and {t.id for t in tasks} <= train
    assert len(train) == 4  # 20% of the 20 travel tasks


async def test_a_travel_task_is_scored_on_its_environment_transcript(tmp_path) -> None:
    def other(messages):
        return REFLECTION if messages[0]["content"] == REFLECT_PROMPT else "{"

    m = router(
        need=lambda _: NEED,
        op=lambda _: sop("Solver").model_dump(),
        agent=lambda _: answer("Done."),
        watch=lambda _: {"decision": "ok"},
        other=other,
    )
    emb = TableEmbedder({})
    db = tmp_path / "adapt.sqlite"
    tasks, train = training_tasks("travel", seed=0, limit=1)
    seen = []
    recs = await distill_tasks(
        m, Repository(db, emb), ExperiencePool(db, emb), tasks, train, tries=1,
        trace_dir=tmp_path / "runs", on_record=lambda t, r: seen.append(t.id),
    )  # fmt: skip
    (rec,) = recs
    assert seen == [tasks[0].id] and not rec.success
    assert "environment check" in rec.attempts[0].detail  # the travel scorer judged it
