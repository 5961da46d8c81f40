"""The WhoDunitEnv game loop on a scripted model: turns, retries, limits, supervisors, rollback."""

from __future__ import annotations

from pathlib import Path

from overseer.envs import WhoDunitConfig, generate_games, play_whodunit
from overseer.models import ScriptedModel
from overseer.runtime import BaseSupervisor, Interaction, Run, Verdict, read_trace

CFG = WhoDunitConfig(n_suspects=5, n_attributes=6, max_turns=7, split_sizes=(2, 2, 2))
GAME = generate_games(CFG)["test"][0]
P = GAME.attributes[0]
V = GAME.value(GAME.culprit, P)
WRONG = next(c for c in range(1, 6) if c != GAME.culprit)


def broad() -> dict:
    return {"thoughts": "ask", "action": 2, "character": 1, "property": P, "value": V}


def share() -> dict:
    return {
        "thoughts": "x",
        "action": 2,
        "answer": True,
        "property": P,
        "value": V,
        "character": GAME.matching(P, V),
    }


def award(c: int) -> dict:
    return {"thoughts": "sure", "action": 3, "character": c, "property": P, "value": V}


async def test_asym_game_to_a_correct_award(tmp_path: Path) -> None:
    model = ScriptedModel([broad(), share(), award(GAME.culprit)])
    r = await play_whodunit(GAME, model, CFG, seed=3, trace_dir=tmp_path)
    assert r.success and r.awarded == GAME.culprit and r.ended == "award"
    assert r.turns == 3 and r.resets == 0 and r.invalid_actions == 0 and r.false_claims == 0
    assert r.transcript[0] == "Beth asks Alex for general information."
    assert r.transcript[1].startswith("Alex shares: characters")
    assert set(r.usage_by_actor) == {"agent:Beth", "agent:Alex"}
    call = model.calls[0]
    assert call["top_logprobs"] == 10 and call["schema"]["properties"]["action"]["enum"] == [
        1,
        2,
        3,
    ]
    assert "turn 1 of 7" in call["messages"][1]["content"]
    assert "Beth asks Alex" in model.calls[1]["messages"][1]["content"]
    events = [e["event"] for e in read_trace(tmp_path / f"{GAME.id}-s3.jsonl")]
    assert events.count("turn") == 3 and events.count("model_call") == 3


async def test_invalid_move_is_re_asked_then_the_turn_is_lost() -> None:
    bad = {"thoughts": "", "action": 3, "character": 99, "property": P, "value": V}
    model = ScriptedModel([bad, award(WRONG)])
    r = await play_whodunit(GAME, model, CFG)
    assert r.awarded == WRONG and not r.success and r.invalid_actions == 0
    assert "not valid" in model.calls[1]["messages"][-1]["content"]
    model = ScriptedModel([bad, "not json", share(), award(GAME.culprit)])
    r = await play_whodunit(GAME, model, CFG)
    assert r.invalid_actions == 1 and r.success and r.turns == 3
    assert r.transcript[0].startswith("Alex shares")  # Beth lost her turn


async def test_turn_limit_ends_without_award() -> None:
    model = ScriptedModel(lambda m: share(), by_actor={"Beth": lambda m: broad()})
    r = await play_whodunit(GAME, model, CFG)
    assert r.ended == "turn_limit" and r.awarded is None and not r.success and r.turns == 7


async def test_intel_false_claims_are_counted() -> None:
    lie = {**share(), "character": [c for c in range(1, 6) if c not in GAME.matching(P, V)]}
    r = await play_whodunit(GAME, ScriptedModel([broad(), lie, award(GAME.culprit)]), CFG)
    assert r.false_claims == 1


class StopWrongAward(BaseSupervisor):
    """Rolls back the first proposed award, records what it saw."""

    name = "stopper"
    actions = frozenset({"rollback"})

    def __init__(self) -> None:
        self.seen: list[Interaction] = []
        self.channel_at_verdict: list[tuple] = []

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        self.seen.append(interaction)
        self.channel_at_verdict.append(run.channel.snapshot())
        move = interaction.meta["move"]
        if move is not None and move.award is not None and interaction.step == 0:
            return Verdict.rollback(by=self.name, reason="wrong award coming")
        return Verdict.approve()


async def test_rollback_before_the_award_resets_the_whole_conversation() -> None:
    sup = StopWrongAward()
    replies = [broad(), share(), award(WRONG), broad(), share(), award(GAME.culprit)]
    model = ScriptedModel(replies)
    r = await play_whodunit(GAME, model, CFG, supervisors=[sup], seed=1)
    assert r.success and r.resets == 1 and r.turns == 6
    assert r.interventions == [
        {"round": 3, "agent": "Beth", "by": "stopper", "reason": "wrong award coming", "removed": 2}
    ]
    # after the reset: turn count restarts, conversation empty, a new sampling seed
    assert "turn 1 of 7" in model.calls[3]["messages"][1]["content"]
    assert "(nothing yet)" in model.calls[3]["messages"][1]["content"]
    assert model.calls[3]["seed"] != model.calls[0]["seed"]
    assert sup.channel_at_verdict[3] == ()  # the exact empty starting channel
    assert len(r.transcript) == 3  # only the replayed conversation
    assert sup.seen[0].meta["decision_keys"] == ("action", "character")
    assert sup.seen[0].logprobs is not None and sup.seen[0].role == "accuser"


async def test_reset_cap_of_the_loop_is_respected() -> None:
    class Always(BaseSupervisor):
        name = "always"
        actions = frozenset({"rollback"})

        async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
            return Verdict.rollback(by=self.name, reason="no")

    model = ScriptedModel(lambda m: award(GAME.culprit))
    r = await play_whodunit(GAME, model, CFG, supervisors=[Always()], max_resets=2)
    assert r.resets == 2 and r.turns == 3 and r.success


async def test_symmetric_game() -> None:
    cfg = WhoDunitConfig.symmetric(n_suspects=6, n_attributes=9, max_turns=6, split_sizes=(1, 1, 1))
    g = generate_games(cfg)["test"][0]
    model = ScriptedModel(
        [
            {"thoughts": "", "action": 1, "fact": 1, "character": 1},
            {"thoughts": "", "action": 3, "fact": 1, "character": 1},
            {"thoughts": "", "action": 2, "fact": 1, "character": g.culprit},
        ]
    )
    r = await play_whodunit(g, model, cfg)
    assert r.success and r.turns == 3
    a, v = g.fact(g.facts[0][0])
    assert r.transcript == [
        f"Ava shares a fact about the Winner: {a} is {v}.",
        "Ben skips.",
        f"Cleo gives the award to character {g.culprit}.",
    ]
    assert f"1. {g.fact(g.facts[2][0])[0]}" in model.calls[2]["messages"][1]["content"]
