"""Monitor plug-ins in a real game loop: rows recorded, rollback below threshold, caps, random."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from overseer.envs import WhoDunitConfig, generate_games, play_whodunit
from overseer.models import ScriptedModel, TokenLogprob
from overseer.monitor import RandomMonitor, RoleMonitor, UncertaintyMonitor

CFG = WhoDunitConfig(n_suspects=5, n_attributes=6, max_turns=6, split_sizes=(1, 1, 1))
GAME = generate_games(CFG)["test"][0]
P = GAME.attributes[0]
V = GAME.value(GAME.culprit, P)


def confused_digits(i: int, tok: str) -> TokenLogprob:
    """Scripted logprobs: a digit token is uncertain (flat over 10), everything else sure."""
    flat = any(ch.isdigit() for ch in tok) and "9" not in tok
    probs = [0.1] * 10 if flat else [0.99] + [0.01 / 9] * 9
    top = tuple((f"a{j}", math.log(p)) for j, p in enumerate(probs))
    return TokenLogprob(tok, top[0][1], top)


def beth(messages: list) -> dict:
    """Beth, the awarder: awards the culprit at once."""
    return {"thoughts": "", "action": 3, "character": GAME.culprit, "property": P, "value": V}


def scripted(**kw: Any) -> ScriptedModel:
    """The accuser shares a fact; Beth (her own actor) awards the culprit."""
    return ScriptedModel(accuser, by_actor={"Beth": beth}, **kw)


def accuser(messages: list) -> dict:
    return {
        "thoughts": "",
        "action": 2,
        "answer": True,
        "property": P,
        "value": V,
        "character": GAME.matching(P, V),
    }


def linear_monitor(role: str, tau: float) -> RoleMonitor:
    """estimate = 1 - entropy / ln(10) on scaled input: low when the decision token is flat."""
    ln10 = math.log(10)
    return RoleMonitor(
        role=role,
        inputs=("turn", "entropy"),
        degree=1,
        tau=tau,
        gain=0.0,
        scale=np.array([0.0, 2 / ln10]),
        offset=np.array([0.0, -1.0]),
        powers=np.array([[1, 0], [0, 1]]),
        coef=np.array([0.0, -0.5]),
        intercept=0.5,
    )


async def test_recorder_only_collects_rows() -> None:
    rec = UncertaintyMonitor()
    model = scripted(logprobs_fn=confused_digits)
    r = await play_whodunit(GAME, model, CFG, supervisors=[rec])
    assert r.resets == 0 and r.turns == 1
    (row,) = rec.rows
    assert row["role"] == "accuser" and row["turn"] == 1 and row["estimate"] is None
    assert row["positions"] >= 2 and not row["fallback"]
    assert abs(row["entropy"] - math.log(10)) < 1e-9  # the flat digit position wins


async def test_low_estimate_rolls_back_up_to_the_cap() -> None:
    for cap, expected in ((1, 1), (2, 2)):
        mon = UncertaintyMonitor({"accuser": linear_monitor("accuser", 0.5)}, cap=cap)
        model = scripted(logprobs_fn=confused_digits)
        r = await play_whodunit(GAME, model, CFG, supervisors=[mon])
        assert r.resets == expected and r.turns == expected + 1 and r.success
        assert sum(i["by"] == mon.name for i in r.interventions) == expected
        assert all(row["estimate"] < 0.05 for row in mon.rows)
        assert "estimated success 0.00 < 0.50" in r.interventions[0]["reason"]


async def test_confident_turns_pass() -> None:
    mon = UncertaintyMonitor({"accuser": linear_monitor("accuser", 0.5)}, cap=2)
    r = await play_whodunit(GAME, scripted(logprobs_fn=None), CFG, supervisors=[mon])
    assert r.resets == 0 and mon.rows[0]["estimate"] > 0.5


async def test_random_monitor_respects_p_and_cap() -> None:
    never = RandomMonitor({"accuser": 0.0}, np.random.default_rng(0), cap=2)
    r = await play_whodunit(GAME, scripted(), CFG, supervisors=[never])
    assert r.resets == 0
    always = RandomMonitor({"accuser": 1.0}, np.random.default_rng(0), cap=2)
    r = await play_whodunit(GAME, scripted(), CFG, supervisors=[always])
    assert r.resets == 2 and r.turns == 3
