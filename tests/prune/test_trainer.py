"""Trainer: gradients against finite differences, direction on toy utilities, regularisers,
Adam, the dialogue-level pruner on the Executor."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from overseer.models import ScriptedModel
from overseer.prune import DialoguePruner, EdgeMasks, TrainConfig
from overseer.prune.trainer import (
    PolicyGradient,
    Rollout,
    anchor_excess,
    nuclear_norm,
    regularizer_grads,
    train_query_level,
)
from overseer.runtime import Executor, Run, TeamSpec, make_team, read_trace


def train(
    team: TeamSpec, cfg: TrainConfig, utility: Callable[[TeamSpec], float], steps: int
) -> tuple[EdgeMasks, list]:
    m = EdgeMasks.from_team(team)

    async def rollout(spec: TeamSpec, q: int, k: int) -> Rollout:
        return Rollout(utility(spec))

    rep = asyncio.run(train_query_level(m, team, rollout, steps, cfg))
    return m, rep.history


def penalty(m: EdgeMasks, cfg: TrainConfig) -> float:
    """rank_weight * sum ||S||_* + anchor_weight * sum max(0, ||A - S||_F - delta)."""
    total = 0.0
    for edges, p, a in (
        (m.spatial, m.spatial_probs, m.anchor_spatial_vector()),
        (m.temporal, m.temporal_probs, m.anchor_temporal_vector()),
    ):
        if not edges:
            continue
        mat = m.spatial_matrix() if edges is m.spatial else m.temporal_matrix()
        total += cfg.rank_weight * nuclear_norm(mat)[0]
        total += cfg.anchor_weight * anchor_excess(p, a, cfg.delta_rms * np.sqrt(len(edges)))[0]
    return total


@pytest.mark.parametrize("candidates", ["existing", "all"])
def test_regularizer_gradients_match_finite_differences(candidates: str) -> None:
    team = make_team("layered", 5, rounds=2, temporal="all")
    m = EdgeMasks.from_team(team, candidates=candidates)  # type: ignore[arg-type]
    rng = np.random.default_rng(0)
    m.spatial_logits[:] = rng.normal(0, 1.5, m.spatial_logits.shape)
    m.temporal_logits[:] = rng.normal(0, 1.5, m.temporal_logits.shape)
    cfg = TrainConfig(rank_weight=0.7, anchor_weight=1.3, delta_rms=0.1)
    gs, gt, _ = regularizer_grads(m, cfg)
    h = 1e-6
    for arr, g in ((m.spatial_logits, gs), (m.temporal_logits, gt)):
        for k in range(len(arr)):
            arr[k] += h
            up = penalty(m, cfg)
            arr[k] -= 2 * h
            down = penalty(m, cfg)
            arr[k] += h
            assert g[k] == pytest.approx((up - down) / (2 * h), abs=1e-5)


def test_anchor_is_free_within_delta() -> None:
    p, a = np.array([0.9, 0.8]), np.array([1.0, 1.0])
    assert anchor_excess(p, a, 0.5) == (0.0, pytest.approx(np.zeros(2)))
    exc, g = anchor_excess(p, a, 0.1)
    assert exc == pytest.approx(np.hypot(0.1, 0.2) - 0.1) and np.all(g < 0)


def test_policy_gradient_moves_masks_toward_useful_edges() -> None:
    team = make_team("complete", 4, rounds=2, temporal="all")
    good_s = {("a1", "a4"), ("a2", "a3")}
    good_t = {("a4", "a4")}

    def utility(spec: TeamSpec) -> float:
        s = sum(1 if e in good_s else -1 for e in spec.spatial_edges)
        t = sum(1 if e in good_t else -1 for e in spec.temporal_edges)
        return (s + t) / 10

    cfg = TrainConfig(rank_weight=0.0, anchor_weight=0.0, lr=0.1, samples=2, seed=3)
    m, hist = train(team, cfg, utility, 150)
    for e, p in zip(m.spatial, m.spatial_probs, strict=True):
        assert (p > 0.8) if e in good_s else (p < 0.2), (e, p)
    for e, p in zip(m.temporal, m.temporal_probs, strict=True):
        assert (p > 0.8) if e in good_t else (p < 0.2), (e, p)
    assert np.mean([h.utility for h in hist[-20:]]) > np.mean([h.utility for h in hist[:20]])


def test_one_step_goes_the_way_of_the_reinforce_gradient() -> None:
    team = make_team("chain", 3)
    m = EdgeMasks.from_team(team)
    pg = PolicyGradient(m, TrainConfig(rank_weight=0, anchor_weight=0, baseline=False))
    s = m.sample(np.random.default_rng(0))
    before = m.spatial_probs.copy()
    pg.step([s], [1.0])  # a rewarded sample: its kept edges up, its dropped edges down
    moved = np.sign(m.spatial_probs - before)
    assert np.array_equal(moved, np.where(s.spatial, 1.0, -1.0))


def test_baseline_removes_a_constant_reward() -> None:
    team = make_team("complete", 3, rounds=1)
    cfg = TrainConfig(rank_weight=0, anchor_weight=0, baseline=True, baseline_decay=0.5)
    m, hist = train(team, cfg, lambda spec: 1.0, 30)
    assert hist[-1].baseline == pytest.approx(1.0, abs=1e-6)
    # after the first step the advantage is ~0: the masks barely move on a constant utility
    assert np.all(np.abs(m.spatial_probs - 0.5) < 0.2)


def effective_rank(mat: np.ndarray) -> float:
    s = np.linalg.svd(mat, compute_uv=False)
    q = s[s > 1e-12] / s.sum()
    return float(np.exp(-(q * np.log(q)).sum()))


def test_low_rank_term_lowers_nuclear_norm_and_effective_rank() -> None:
    team = make_team("complete", 5, rounds=1)
    good = set(list(team.spatial_edges)[::2])

    def utility(spec: TeamSpec) -> float:
        return sum(e in good for e in spec.spatial_edges) / 5

    free, h0 = train(team, TrainConfig(rank_weight=0.0, anchor_weight=0.0, lr=0.05), utility, 200)
    low, h1 = train(team, TrainConfig(rank_weight=0.3, anchor_weight=0.0, lr=0.05), utility, 200)
    assert h1[-1].spatial_nuclear < 0.6 * h0[-1].spatial_nuclear
    assert effective_rank(low.spatial_matrix()) < effective_rank(free.spatial_matrix()) - 0.2
    assert h1[-1].spatial_nuclear < h1[0].spatial_nuclear


def test_anchor_term_keeps_masks_near_the_original_topology() -> None:
    team = make_team("complete", 5, rounds=1)

    def utility(spec: TeamSpec) -> float:  # every edge costs: pulls all masks to 0
        return -len(spec.spatial_edges) / 10

    delta = 0.5 * np.sqrt(10)
    free, h0 = train(team, TrainConfig(rank_weight=0, anchor_weight=0), utility, 200)
    held, h1 = train(
        team, TrainConfig(rank_weight=0, anchor_weight=5.0, delta_rms=0.5), utility, 200
    )
    assert h0[-1].spatial_anchor_dist > 2.5
    assert h1[-1].spatial_anchor_dist < delta + 0.1
    assert held.spatial_probs.mean() > free.spatial_probs.mean() + 0.3


def test_no_temporal_training_with_one_round() -> None:
    team = make_team("complete", 3, rounds=1)
    m = EdgeMasks.from_team(team)
    assert m.temporal == [] and m.temporal_logits.shape == (0,)
    pg = PolicyGradient(m, TrainConfig())
    pg.step([m.sample(np.random.default_rng(0))], [1.0])  # runs without temporal parameters


def test_training_is_seeded() -> None:
    team = make_team("complete", 4, rounds=2, temporal="all")

    def utility(spec: TeamSpec) -> float:
        return float(("a1", "a2") in spec.spatial_edges)

    a, _ = train(team, TrainConfig(seed=9), utility, 10)
    b, _ = train(team, TrainConfig(seed=9), utility, 10)
    c, _ = train(team, TrainConfig(seed=10), utility, 10)
    assert np.array_equal(a.spatial_logits, b.spatial_logits)
    assert not np.array_equal(a.spatial_logits, c.spatial_logits)


def test_bad_config_is_rejected() -> None:
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=0)
    with pytest.raises(ValueError, match="baseline_decay"):
        TrainConfig(baseline_decay=1.0)


def scripted() -> ScriptedModel:
    """Agents and the decision node (actor "decision") all answer C."""
    return ScriptedModel(
        lambda m: {"thought": "t", "action": "answer", "answer": "Answer: C"},
        by_actor={"decision": lambda m: "Answer: C"},
    )


async def test_dialogue_pruner_trains_k_rounds_then_runs_the_pruned_team(tmp_path: Path) -> None:
    team = make_team("complete", 4, rounds=4, temporal="all")
    seen: list[int] = []

    async def round_utility(run: Run) -> float:
        seen.append(run.round)
        return 1.0

    pruner = DialoguePruner(team, round_utility, train_rounds=2, ratio=0.5, cfg=TrainConfig(seed=1))
    model = scripted()
    ex = Executor(model, supervisors=[pruner], trace_dir=tmp_path)
    res = await ex.run(pruner.first_team(), "Which letter? 'Answer: X'")
    assert res.stop_reason == "done", res.error
    events = list(read_trace(res.trace_path))
    ups = [e for e in events if e["event"] == "agentprune_update"]  # one per policy step
    assert seen == [0, 1] and len(ups) == 2
    swaps = [e for e in events if e["event"] == "team_replaced"]
    assert [(s["round"], s["by"]) for s in swaps] == [(0, "agentprune"), (1, "agentprune")]
    pruned = TeamSpec.model_validate(swaps[-1]["team"])
    assert len(pruned.spatial_edges) == 3 and len(pruned.temporal_edges) == 8
    assert [u["pruned"] for u in ups] == [False, True]
    # rounds 2 and 3 ran on the pruned structure: agents read only their pruned spatial preds
    last = [c for c in model.calls if c["actor"] != "decision"][-4:]
    for c in last:
        name, text = c["actor"], c["messages"][-1]["content"]
        n_in = (
            text.split("From teammates this round:")[1].count("\n[") if "this round:" in text else 0
        )
        assert n_in == len(pruned.spatial_preds(name))


async def test_one_dialogue_pruner_trains_each_run_afresh(tmp_path: Path) -> None:
    team = make_team("complete", 4, rounds=4, temporal="all")
    utilities = iter([1.0, 0.0, 1.0, 0.0])

    async def round_utility(run: Run) -> float:
        return next(utilities)

    pruner = DialoguePruner(team, round_utility, train_rounds=2, ratio=0.5, cfg=TrainConfig(seed=1))
    ex = Executor(scripted(), supervisors=[pruner], trace_dir=tmp_path)
    first = await ex.run(pruner.first_team(), "Which letter?", run_id="one")
    second = await ex.run(pruner, "Which letter?", run_id="two")  # the pruner as team builder
    assert first.stop_reason == second.stop_reason == "done", (first.error, second.error)

    def updates(res) -> list[tuple]:
        return [
            (e["round"], e["utility"], e["spatial"], e["temporal"], e["pruned"])
            for e in read_trace(res.trace_path)
            if e["event"] == "agentprune_update"
        ]

    assert len(updates(first)) == 2 and updates(first) == updates(second)
    built = next(e for e in read_trace(second.trace_path) if e["event"] == "team")
    assert TeamSpec.model_validate(built["team"]) == pruner.first_team()
    assert not [k for k, v in vars(pruner).items() if isinstance(v, list | dict | set) and v]


def test_dialogue_pruner_needs_rounds_left() -> None:
    with pytest.raises(ValueError, match="train_rounds"):
        DialoguePruner(
            make_team("complete", 3, rounds=2),
            lambda run: asyncio.sleep(0, 1.0),  # type: ignore[arg-type,return-value]
            train_rounds=2,
            ratio=0.3,
            cfg=TrainConfig(),
        )
