"""The prune claim on the MMLU sample: masks trained per attack, the team pruned once, the
full and the pruned team (whole responses on every edge) on held-out queries, and one call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from overseer.bench import ResultRecord
from overseer.bench.solvers import DIRECT
from overseer.evidence.runs import Context, Part, run_configs, suite_tasks

SUITE = "mmlu-sample"
ATTACKS = ("none", "prompt", "replace")
RATIO = 0.5

if TYPE_CHECKING:
    from overseer.experiments.prune_runs import RunSettings
    from overseer.runtime import TeamSpec


def spec_files(ctx: Context) -> tuple[Path, Path]:
    """The full and the pruned (attack none) team specs the compose claim runs."""
    return ctx.artefact("full.json"), ctx.artefact("pruned-none.json")


def _base(ctx: Context) -> TeamSpec:
    """The complete team with whole responses on every edge, saved as the full spec."""
    from overseer.experiments.prune_runs import build_team

    size = ctx.size
    base = build_team(
        "complete", size["agents"], rounds=size["rounds"], kind="mc", seed=ctx.seed
    ).sharing_thoughts()
    spec_files(ctx)[0].write_text(json.dumps(base.model_dump(mode="json"), indent=1))
    return base


def _settings(ctx: Context) -> RunSettings:
    from overseer.experiments.prune_runs import RunSettings

    return RunSettings(
        max_tokens=ctx.size["max_tokens"], seed=ctx.seed, trace_dir=ctx.out_dir / "runs" / "prune"
    )


def pruned_team(ctx: Context, base: TeamSpec, attack: str) -> tuple[TeamSpec, dict[str, Any]]:
    """Masks trained on the `train` queries under `attack` and the team pruned once (reused
    from the claim's artefact when already trained): the pruned spec and its training record."""
    from overseer.experiments.prune import PruneJob, train_or_load
    from overseer.prune import TrainConfig

    train = suite_tasks(SUITE, "train", ctx.size["train"], ctx.seed)
    cfg = TrainConfig(seed=ctx.seed)
    job = PruneJob(base, SUITE, train, RATIO, cfg, ctx.model, ctx.size["max_tokens"], attack)
    out = ctx.artefact(f"pruned-{attack}.json")
    pruned, training, reused = asyncio.run(train_or_load(job, out, ctx.loader, _settings(ctx)))
    ctx.ran += 0 if reused else int(training["report"]["runs"])
    return pruned, training


def compose_inputs(ctx: Context) -> tuple[Path, Path]:
    """The full and pruned (attack none) spec files, trained now if this size has none yet."""
    full, pruned = spec_files(ctx)
    if not (full.is_file() and pruned.is_file()):
        pruned_team(ctx, _base(ctx), "none")
    return full, pruned


def random_pruned(base: TeamSpec, pruned: TeamSpec, seed: int) -> TeamSpec:
    """AgentPrune's control: the team with random edges cut, as many spatial and temporal
    edges kept as the learned pruning kept (seeded)."""
    from overseer.runtime import TeamSpec

    rng = np.random.default_rng(seed)

    def pick(edges: Sequence[Any], k: int) -> list[Any]:
        return [edges[i] for i in sorted(rng.choice(len(edges), size=k, replace=False))]

    sp = pick(base.spatial_edges, len(pruned.spatial_edges))
    tp = pick(base.temporal_edges, len(pruned.temporal_edges))
    return TeamSpec.model_validate(
        {
            **base.model_dump(),
            "name": f"{base.name}-random-pruned",
            "spatial_edges": sp,
            "temporal_edges": tp,
        }
    )


def _sizes(team: TeamSpec) -> tuple[int, int]:
    """How many spatial and temporal edges `team` has."""
    return len(team.spatial_edges), len(team.temporal_edges)


def _edges(team: TeamSpec, base: TeamSpec) -> str:
    (spatial, temporal), (of_spatial, of_temporal) = _sizes(team), _sizes(base)
    return f"{spatial}/{of_spatial} spatial, {temporal}/{of_temporal} temporal edges"


def pruned_acts(team: TeamSpec, base: TeamSpec) -> Callable[[ResultRecord], bool | None]:
    """A pruned team acts on every task when pruning removed an edge."""
    removed = _sizes(team) != _sizes(base)
    return lambda rec: removed


def _evaluate(ctx: Context, base: TeamSpec, team: TeamSpec, test: list, attack: str) -> tuple:
    from overseer.experiments.prune import evaluate_pruned

    summary, recs = asyncio.run(
        evaluate_pruned(
            base,
            team,
            test,
            attack=attack,
            rs=_settings(ctx),
            model_name=ctx.model,
            load_model=ctx.loader,
            store=ctx.store,
            progress=ctx.progress,
        )
    )
    ctx.ran += summary.ran
    return recs["full"], recs["pruned"]


def prune_parts(ctx: Context) -> list[Part]:
    """One part per attack: full vs pruned team, the direct call on the same queries; with no
    attack the random-pruning control at equal edge count, under an attack the full team
    without it (does the attack hurt at all?)."""
    test = suite_tasks(SUITE, "test", ctx.size["test"], ctx.seed)
    base = _base(ctx)
    direct = run_configs(ctx, [DIRECT], test)
    parts: list[Part] = []
    clean: list[ResultRecord] = []
    for attack in ATTACKS:
        pruned, training = pruned_team(ctx, base, attack)
        fulls, cuts = _evaluate(ctx, base, pruned, test, attack)
        full, cut = fulls[0].key.config, cuts[0].key.config
        labels = {
            "direct": "one direct call (no attack)",
            full: "full team",
            cut: f"pruned team ({_edges(pruned, base)})",
        }
        rows, names = [*direct, *fulls, *cuts], ["direct", full, cut]
        acted = {cut: pruned_acts(pruned, base)}
        if attack == "none":
            clean = fulls
            rand = random_pruned(base, pruned, ctx.seed)
            _, rcuts = _evaluate(ctx, base, rand, test, attack)
            rows, names = rows + rcuts, [*names, rcuts[0].key.config]
            labels[names[-1]] = f"random pruning, equal edge count ({_edges(rand, base)})"
            acted[names[-1]] = pruned_acts(rand, base)
        elif clean:
            rows, names = rows + clean, [*names, clean[0].key.config]
            labels[names[-1]] = "full team, no attack"
        usage = training["report"]["usage"]
        note = (
            f"attack `{attack}`; {ctx.size['agents']} agents, {ctx.size['rounds']} rounds; masks "
            f"trained on Q' = {ctx.size['train']} queries at a cost of "
            f"{usage['prompt_tokens']:,} prompt and {usage['completion_tokens']:,} "
            f"completion tokens (not in the per-query figures); p = {RATIO}"
        )
        parts.append(Part(f"attack: {attack}", rows, names, full, labels, "accuracy", note, acted))
    return parts
