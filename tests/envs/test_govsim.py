"""GovSim fishing: splits, metrics by hand, sustainable and greedy games, rollbacks."""

from __future__ import annotations

import pytest

from overseer.envs.govsim import GovSimConfig, gini, govsim_splits, metrics, play_govsim
from overseer.models import ScriptedModel
from overseer.runtime import BaseSupervisor, Interaction, Run, Verdict


def fishers(catch: int):
    def reply(messages: list) -> dict:
        text = messages[-1]["content"]
        if "How many tons" in text:
            return {"fish": catch}
        if "Say one thing" in text:
            return {"message": f"let us each take {catch}"}
        return {"note": f"took {catch}"}

    return reply


def test_splits_follow_appendix_d1() -> None:
    s = govsim_splits()
    assert s["test"] == [100, *range(210, 301, 5)] and len(s["test"]) == 20
    pool = set(s["train"]) | set(s["validation"])
    assert pool == {105 + 5 * k for k in range(20)} and not set(s["train"]) & set(s["validation"])
    assert (len(s["train"]), len(s["validation"])) == (13, 7)
    assert govsim_splits() == s and govsim_splits(1) != s


def test_metrics_by_hand() -> None:
    assert gini([1, 1, 1]) == 0.0 and gini([0, 0, 3]) == pytest.approx(2 / 3)
    # R0 = 100, 2 fishers, 2 months: month 1 R=100 (share 25), month 2 R=80 (share 15)
    eff, eq, over = metrics(100, 2, [[30, 10], [6, 20]], [100, 80], 2)
    assert eff == pytest.approx(1 - (100 - 66) / 100)
    assert eq == pytest.approx(1 - gini([36, 30]))
    assert over == pytest.approx(2 / 4)  # 30 > 25 and 20 > 15


async def test_sustainable_fishers_survive_all_months() -> None:
    cfg = GovSimConfig(months=3)
    model = ScriptedModel(fishers(10))
    r = await play_govsim(100, model, cfg)
    assert r.success and r.survival_time == 3 and r.resources == [100, 100, 100]
    assert r.catches == [[10] * 5] * 3 and r.over_usage == 0.0 and r.equality == 1.0
    assert r.efficiency == pytest.approx(1.0)  # 150 caught of c = 3 * 100 / 2
    assert len(model.calls) == 3 * 15 and r.turns == 3 * 10
    assert model.calls[0]["top_logprobs"] == 10
    assert model.calls[0]["schema"]["properties"]["fish"]["maximum"] == 100


async def test_greedy_fishers_collapse_the_lake() -> None:
    r = await play_govsim(100, ScriptedModel(fishers(30)), GovSimConfig())
    assert not r.success and r.survival_time == 0 and len(r.catches) == 1
    assert sorted(r.catches[0]) == [0, 10, 30, 30, 30]  # served in a seeded random order
    assert r.over_usage == pytest.approx(3 / 5)  # three catches of 30 above the share of 10


class RollbackOnce(BaseSupervisor):
    actions = frozenset({"rollback"})

    def __init__(self, phase: str, month: int) -> None:
        self.name = f"once-{phase}"
        self.phase, self.month, self.done = phase, month, False
        self.before: list[str] = []

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        i = interaction
        if not self.done and (i.role, i.round, interaction.agent) == (
            self.phase,
            self.month,
            "Cy",
        ):
            self.done = True
            self.before = [m.content for m in run.channel.messages]
            return Verdict.rollback(by=self.name, reason="test")
        return Verdict.approve()


async def test_discussion_rollback_restarts_the_talk() -> None:
    sup = RollbackOnce("discuss", 1)
    model = ScriptedModel(fishers(10))
    r = await play_govsim(100, model, GovSimConfig(months=1), supervisors=[sup])
    assert r.resets == 1 and r.interventions[0]["removed"] == 2  # Ana's and Bo's words
    assert r.turns == 5 + 3 + 5
    assert sup.before[-2:] == [
        "Ana (month 1): let us each take 10",
        "Bo (month 1): let us each take 10",
    ]


async def test_harvest_rollback_redoes_last_discussion_without_its_notes() -> None:
    sup = RollbackOnce("harvest", 2)
    model = ScriptedModel(fishers(10))
    r = await play_govsim(100, model, GovSimConfig(months=2), supervisors=[sup])
    assert r.resets == 1 and r.success and r.interventions[0]["removed"] == 5
    # month 1: harvest + talk, month 2: 3 harvest turns, month 1 talk again, month 2 again
    assert r.turns == 5 + 5 + 3 + 5 + 5 + 5
    notes_prompt = model.calls[-1]["messages"][1]["content"]
    assert notes_prompt.count("month 1: took 10") == 1  # the discarded reflection is gone


async def test_bad_capacity_is_refused() -> None:
    with pytest.raises(ValueError, match="r0"):
        await play_govsim(8, ScriptedModel(fishers(1)), GovSimConfig())
    with pytest.raises(ValueError, match="months"):
        GovSimConfig(months=0)
