"""WhoDunitEnv: game generation invariants, splits, schemas, rules and bad actions."""

from __future__ import annotations

import pytest

from overseer.envs import Game, WhoDunitConfig, generate_games
from overseer.envs._loop import _State, check_move
from overseer.envs.whodunit import move_schema, player_system_prompt

SMALL = WhoDunitConfig(n_suspects=5, n_attributes=6, max_turns=7, split_sizes=(12, 5, 8))
SMALL_SYM = WhoDunitConfig.symmetric(
    n_suspects=8, n_attributes=9, max_turns=9, split_sizes=(10, 4, 6)
)


def test_defaults_are_the_seeds_sizes() -> None:
    a = WhoDunitConfig()
    assert (a.n_suspects, a.n_attributes, a.max_turns, a.split_sizes) == (
        10,
        12,
        31,
        (210, 90, 180),
    )
    assert [r for _, r in a.agents()] == ["accuser", "intel"]
    s = WhoDunitConfig.symmetric()
    assert (s.n_suspects, s.n_attributes, s.max_turns, s.facts_per_agent) == (20, 20, 20, 3)


def test_default_splits_are_deterministic_and_disjoint() -> None:
    games = generate_games(WhoDunitConfig())
    assert [len(games[s]) for s in ("train", "validation", "test")] == [210, 90, 180]
    again = generate_games(WhoDunitConfig())
    assert games == again
    other = generate_games(WhoDunitConfig(), seed=1)
    assert other["test"][0] != games["test"][0]
    keys = {
        split: {(frozenset(g.suspects), g.suspects[g.culprit - 1]) for g in gs}
        for split, gs in games.items()
    }
    assert sum(len(k) for k in keys.values()) == 480  # all distinct, so splits are disjoint
    for g in games["train"][:50]:
        assert len(set(g.suspects)) == 10 and len(g.attributes) == 12
        # the full description fits the Winner only
        assert g.consistent_with([g.fact(i) for i in range(12)]) == [g.culprit]


def test_symmetric_facts_single_out_the_winner_together() -> None:
    games = generate_games(SMALL_SYM)
    for g in [*games["train"], *games["test"]]:
        assert len(g.facts) == 3 and all(len(f) == 3 for f in g.facts)
        flat = [i for f in g.facts for i in f]
        assert len(set(flat)) == 9  # no fact held twice
        assert g.consistent_with([g.fact(i) for i in flat]) == [g.culprit]


def test_default_symmetric_games_generate() -> None:
    games = generate_games(WhoDunitConfig.symmetric(split_sizes=(20, 5, 5)))
    g = games["test"][0]
    assert g.n == 20 and len(g.attributes) == 20
    assert g.consistent_with([g.fact(i) for f in g.facts for i in f]) == [g.culprit]


def _solo_solvable(cfg: WhoDunitConfig) -> tuple[int, int]:
    """(games one player's facts alone solve, all games) over the three splits of `cfg`."""
    games = [g for gs in generate_games(cfg).values() for g in gs]
    solo = sum(
        any(g.consistent_with([g.fact(i) for i in f]) == [g.culprit] for f in g.facts)
        for g in games
    )
    return solo, len(games)


def test_symmetric_games_need_two_players_by_default() -> None:
    cfg = WhoDunitConfig.symmetric()
    assert cfg.require_collaboration
    assert _solo_solvable(cfg) == (0, 480)
    for g in generate_games(cfg)["test"]:
        flat = [i for f in g.facts for i in f]
        assert g.consistent_with([g.fact(i) for i in flat]) == [g.culprit]


def test_symmetric_games_without_collaboration_are_the_earlier_games() -> None:
    old = WhoDunitConfig.symmetric(require_collaboration=False)
    assert _solo_solvable(old) == (134, 480)  # the 28%
    assert generate_games(old) == generate_games(old)
    assert generate_games(old)["test"] != generate_games(WhoDunitConfig.symmetric())["test"]


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"n_suspects": 1}, "n_suspects"),
        ({"n_attributes": 21}, "n_attributes"),
        ({"n_suspects": 10, "n_attributes": 3}, "distinct characters"),
        ({"variant": "tri"}, "variant"),
        ({"n_agents": 3}, "n_agents"),
        ({"max_turns": 0}, "max_turns"),
    ],
)
def test_bad_sizes_name_the_field(kw: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        WhoDunitConfig(**kw)


def test_too_many_games_for_tiny_sizes_is_a_clear_error() -> None:
    cfg = WhoDunitConfig(n_suspects=2, n_attributes=1, split_sizes=(50, 0, 0))
    with pytest.raises(ValueError, match="cannot draw 50 distinct games"):
        generate_games(cfg)


def test_game_round_trips_through_a_dict() -> None:
    g = generate_games(SMALL_SYM)["train"][0]
    assert Game.from_dict(g.to_dict()) == g
    with pytest.raises(ValueError, match="bad game record"):
        Game.from_dict({"id": "x"})


def test_schemas_and_prompts_use_award_wording() -> None:
    g = generate_games(SMALL)["test"][0]
    s = move_schema(SMALL, g, "accuser")
    assert s["properties"]["action"] == {"enum": [1, 2, 3]}
    assert s["properties"]["character"]["maximum"] == 5
    assert next(iter(s["properties"])) == "thoughts"
    assert (
        "thoughts"
        not in move_schema(
            WhoDunitConfig(n_suspects=5, n_attributes=6, thoughts_chars=0), g, "intel"
        )["properties"]
    )
    text = player_system_prompt(SMALL, g, "Beth", "accuser")
    assert "award" in text and "Winner" in text and "character" in text
    assert "culprit" not in text.lower() and "suspect" not in text.lower()
    from overseer.envs.whodunit import describe

    assert describe(g, g.culprit) in text
    intel = player_system_prompt(SMALL, g, "Alex", "intel")
    assert describe(g, g.culprit) in intel  # the lineup, without saying who wins
    assert "Winner is described" not in intel


def test_rules_for_each_role() -> None:
    g = generate_games(SMALL)["test"][0]
    st = _State()
    p, v = g.attributes[0], g.value(2, g.attributes[0])
    ask = check_move(
        g, SMALL, "Beth", "accuser", {"action": 1, "character": 2, "property": p, "value": v}, st
    )
    assert ask.question == (2, p, v) and "character 2" in (ask.message or "")
    st.pending = ask.question
    yes = check_move(g, SMALL, "Alex", "intel", {"action": 1, "answer": True}, st)
    no = check_move(g, SMALL, "Alex", "intel", {"action": 1, "answer": False}, st)
    assert not yes.false_claim and no.false_claim and "does not have" in (no.message or "")
    truth = g.matching(p, v)
    broad = check_move(
        g,
        SMALL,
        "Alex",
        "intel",
        {"action": 2, "property": p, "value": v, "character": truth[::-1]},
        st,
    )
    assert not broad.false_claim and str(truth) in (broad.message or "")
    award = check_move(g, SMALL, "Beth", "accuser", {"action": 3, "character": g.culprit}, st)
    assert award.award == g.culprit


@pytest.mark.parametrize(
    ("role", "answer", "needle"),
    [
        ("accuser", {"action": 4, "character": 1}, "action"),
        ("accuser", {"action": 3, "character": 99}, "character"),
        ("accuser", {"action": 3, "character": "2"}, "integer"),
        ("accuser", {"action": 1, "character": 1, "property": "tail", "value": "x"}, "property"),
        ("accuser", {"action": 1, "character": 1, "property": "hat", "value": "sad"}, "value"),
        ("intel", {"action": 1, "answer": True}, "no yes/no question"),
        ("intel", {"action": 2, "property": "hat", "value": "brown", "character": [0]}, "list"),
        ("accuser", [1, 2], "JSON object"),
    ],
)
def test_bad_actions_say_what_is_wrong(role: str, answer: object, needle: str) -> None:
    g = generate_games(SMALL)["test"][0]
    with pytest.raises(ValueError, match=needle):
        check_move(g, SMALL, "Beth" if role == "accuser" else "Alex", role, answer, _State())


def test_symmetric_rules() -> None:
    g = generate_games(SMALL_SYM)["test"][0]
    name = SMALL_SYM.agents()[1][0]
    m = check_move(g, SMALL_SYM, name, "player", {"action": 1, "fact": 2}, _State())
    a, v = g.fact(g.facts[1][1])
    assert m.message == f"{name} shares a fact about the Winner: {a} is {v}."
    with pytest.raises(ValueError, match="fact"):
        check_move(g, SMALL_SYM, name, "player", {"action": 1, "fact": 4}, _State())
    assert (
        check_move(g, SMALL_SYM, name, "player", {"action": 3}, _State()).message
        == f"{name} skips."
    )
