"""One-shot pruning counts and save/load; attacks change only the chosen agent; cost model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from overseer.models import ScriptedModel
from overseer.prune import EdgeMasks, apply_attack, estimate_costs, prune_team
from overseer.prune.attacks import GIBBERISH_MODEL, choose_target
from overseer.prune.cost import (
    Graph,
    MessageCosts,
    RunCost,
    deliveries,
    dialogue_savings,
    query_level_cost,
    query_level_savings,
    vanilla_cost,
)
from overseer.prune.prune import n_pruned
from overseer.runtime import Executor, TeamSpec, make_team


@pytest.mark.parametrize(
    ("n", "p", "drop"),
    [(10, 0.3, 3), (10, 0.5, 5), (5, 0.5, 3), (6, 0.0, 0), (6, 1.0, 6), (15, 0.3, 5), (3, 0.1, 0)],
)
def test_n_pruned_rounds_half_up(n: int, p: float, drop: int) -> None:
    assert n_pruned(n, p) == drop


def test_pruning_keeps_exactly_the_right_edges() -> None:
    team = make_team("complete", 5, rounds=2, temporal="all")  # 10 spatial, 25 temporal
    m = EdgeMasks.from_team(team)
    rng = np.random.default_rng(0)
    m.spatial_logits[:] = rng.normal(size=10)
    m.temporal_logits[:] = rng.normal(size=25)
    pruned = prune_team(team, m, 0.3)
    assert (
        len(pruned.spatial_edges) == 7 and len(pruned.temporal_edges) == 17
    )  # 7.5 rounds up to 8 cut
    sp = dict(zip(m.spatial, m.spatial_probs, strict=True))
    lowest_kept = min(sp[e] for e in pruned.spatial_edges)
    assert all(sp[e] < lowest_kept for e in set(team.spatial_edges) - set(pruned.spatial_edges))
    assert set(pruned.spatial_edges) <= set(team.spatial_edges)
    assert pruned.agents == team.agents and pruned.decision == team.decision


def test_ties_are_broken_deterministically_by_spec_position() -> None:
    team = make_team("complete", 4)  # 6 edges, all masks at 0.5
    m = EdgeMasks.from_team(team)
    pruned = prune_team(team, m, 0.5)
    assert pruned.spatial_edges == team.spatial_edges[:3]  # later edges go first
    assert prune_team(team, m, 0.5) == pruned


def test_pruning_with_all_candidates_keeps_only_existing_edges() -> None:
    team = make_team("layered", 5, rounds=2, temporal="self")
    m = EdgeMasks.from_team(team, candidates="all")
    m.spatial_logits[:] = np.linspace(3, -3, len(m.spatial))  # reverse edges may rank high
    pruned = prune_team(team, m, 0.5)
    assert set(pruned.spatial_edges) <= set(team.spatial_edges)
    assert len(pruned.spatial_edges) == len(team.spatial_edges) - n_pruned(
        len(team.spatial_edges), 0.5
    )
    assert len(pruned.temporal_edges) == 5 - 3


def test_edges_the_masks_did_not_learn_are_kept() -> None:
    team = make_team("complete", 3, rounds=2, temporal="all")
    m = EdgeMasks.from_team(team, train_temporal=False)
    pruned = prune_team(team, m, 0.5)
    assert pruned.temporal_edges == team.temporal_edges and len(pruned.spatial_edges) == 1


def test_pruned_spec_saves_and_loads(tmp_path: Path) -> None:
    team = make_team("random", 5, rounds=2, temporal="all", seed=3)
    m = EdgeMasks.from_team(team)
    m.spatial_logits[:] = np.arange(len(m.spatial))
    pruned = prune_team(team, m, 0.3)
    path = pruned.save(tmp_path / "sub" / "pruned.json")
    assert TeamSpec.load(path) == pruned
    with pytest.raises(ValueError, match="pruning ratio"):
        prune_team(team, m, 1.5)


# -- attacks ---------------------------------------------------------------------------------
def test_attacks_change_only_the_chosen_agent() -> None:
    team = make_team("complete", 5, rounds=2, temporal="all")
    for attack in ("prompt", "replace"):
        for seed in range(5):
            at = apply_attack(team, attack, seed)
            assert at.target == choose_target(team, seed)
            changed = [a.name for a, b in zip(team.agents, at.team.agents, strict=True) if a != b]
            assert changed == [at.target]
            rest = at.team.model_dump(exclude={"agents"})
            assert rest == team.model_dump(exclude={"agents"})
    assert apply_attack(team, "prompt", 0).team.agent(choose_target(team, 0)).role == "Deceiver"
    assert apply_attack(team, "none", 0).team == team
    texty = team.model_copy(
        update={
            "agents": tuple(a.model_copy(update={"answer_format": "text"}) for a in team.agents)
        }
    )
    liar = apply_attack(texty, "prompt", 0)
    assert liar.team.agent(liar.target).answer_format == "text"  # the liar keeps its format
    assert len({choose_target(team, s) for s in range(20)}) > 1
    with pytest.raises(ValueError, match="attack"):
        apply_attack(team, "poison", 0)


async def test_replacement_attack_replaces_only_the_target_output(tmp_path: Path) -> None:
    team = make_team("complete", 3, rounds=1)
    at = apply_attack(team, "replace", 1)

    model = ScriptedModel(
        lambda m: {"thought": "t", "action": "answer", "answer": "Careful work. Answer: C"},
        by_actor={"decision": lambda m: "Answer: C"},
    )
    ex = Executor(model, models=at.models, trace_dir=tmp_path)
    res = await ex.run(at.team, "Pick one. Finish with a line 'Answer: X' where X is a letter.")
    msgs = {m.sender: m.content for m in res.messages if m.kind == "message"}
    assert msgs[at.target] != "Careful work. Answer: C" and "Answer: " in msgs[at.target]
    assert all(v == "Careful work. Answer: C" for k, v in msgs.items() if k != at.target)
    assert at.models[GIBBERISH_MODEL].calls == 1  # type: ignore[attr-defined]
    assert len(model.calls) == 3  # two honest agents and the decision
    assert res.usage_by_actor[f"agent:{at.target}"].prompt_tokens > 0


# -- cost model -------------------------------------------------------------------------------
def test_eq17_is_vanilla_minus_the_two_stages() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        c = MessageCosts(*rng.uniform(10, 200, 3))
        g = Graph(int(rng.integers(1, 20)), int(rng.integers(0, 25)), 5, int(rng.integers(1, 4)))
        q, q1, m, p = 100, int(rng.integers(1, 30)), int(rng.integers(1, 4)), rng.uniform(0, 1)
        train, rest = query_level_cost(c, g, queries=q, train_queries=q1, samples=m, ratio=p)
        direct = vanilla_cost(c, g, q) - train - rest
        eq17 = query_level_savings(c, g, queries=q, train_queries=q1, samples=m, ratio=p)
        assert eq17 == pytest.approx(direct)


def test_dialogue_savings_closed_form() -> None:
    c, g = MessageCosts(40, 30, 100), Graph(10, 25, 5, 4)
    x = 40 * 10 + 30 * 25
    k, k1, m, p = 4, 1, 1, 0.5
    expected = (p * k + (1 - m - p) * k1) * x + (1 - m) * k1 * 100 * 5
    assert dialogue_savings(c, g, train_rounds=k1, samples=m, ratio=p) == pytest.approx(expected)


def test_estimate_costs_recovers_the_generating_averages() -> None:
    c_msg, c_q = 30.0, 120.0
    runs = [
        RunCost(int(c_q * calls + c_msg * (s + t)), int(c_msg * calls), calls, s, t)
        for calls, s, t in [(10, 20, 25), (10, 8, 12), (6, 3, 0)]
    ]
    est = estimate_costs(runs)
    assert est.c_s == est.c_t == pytest.approx(c_msg) and est.c_q == pytest.approx(c_q)
    with pytest.raises(ValueError, match="agent call"):
        estimate_costs([])


async def test_deliveries_count_messages_read_along_edges(tmp_path: Path) -> None:
    team = make_team("chain", 3, rounds=2, temporal="all")  # 2 spatial, 9 temporal edges

    def reply(messages: list) -> object:
        return {"thought": "t", "action": "answer", "answer": "ok"}

    res = await Executor(ScriptedModel(reply), trace_dir=tmp_path).run(team, "q")
    assert deliveries(team, res) == (2 * 2, 9)
    cost = RunCost.of(team, res)
    assert cost.calls == 6 and cost.prompt_tokens > 0
