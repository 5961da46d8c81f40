"""The prune claim on the MMLU sample: masks trained per attack, the team pruned once, the
full and the pruned team (whole responses on every edge) on held-out queries, and one call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    base = build_team("complete", size["agents"], rounds=size["rounds"], kind="mc",
                      seed=ctx.seed).sharing_thoughts()  # fmt: skip
    spec_files(ctx)[0].write_text(json.dumps(base.model_dump(mode="json"), indent=1))
    return base


def _settings(ctx: Context) -> RunSettings:
    from overseer.experiments.prune_runs import RunSettings

    return RunSettings(max_tokens=ctx.size["max_tokens"], seed=ctx.seed,
                       trace_dir=ctx.out_dir / "runs" / "prune")  # fmt: skip


def pruned_team(ctx: Context, base: TeamSpec, attack: str) -> tuple[TeamSpec, dict[str, Any]]:
    """Masks trained on the `train` queries under `attack` and the team pruned once (reused
    from the claim's artefact when already trained): the pruned spec and its training record."""
    from overseer.experiments.prune import PruneJob, train_or_load
    from overseer.prune import TrainConfig

    train = suite_tasks(SUITE, "train", ctx.size["train"], ctx.seed)
    job = PruneJob(base, SUITE, train, RATIO, TrainConfig(seed=ctx.seed), ctx.model,
                   ctx.size["max_tokens"], attack)  # fmt: skip
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


def prune_parts(ctx: Context) -> list[Part]:
    """One part per attack: full vs pruned team, and the direct call on the same queries."""
    from overseer.experiments.prune import evaluate_pruned

    test = suite_tasks(SUITE, "test", ctx.size["test"], ctx.seed)
    base, rs = _base(ctx), _settings(ctx)
    direct = run_configs(ctx, [DIRECT], test)
    parts = []
    for attack in ATTACKS:
        pruned, training = pruned_team(ctx, base, attack)
        summary, recs = asyncio.run(
            evaluate_pruned(base, pruned, test, attack=attack, rs=rs, model_name=ctx.model,
                            load_model=ctx.loader, store=ctx.store, progress=ctx.progress)
        )  # fmt: skip
        ctx.ran += summary.ran
        full, cut = recs["full"][0].key.config, recs["pruned"][0].key.config
        labels = {"direct": "one direct call (no attack)", full: "full team",
                  cut: f"pruned team ({len(pruned.spatial_edges)}/{len(base.spatial_edges)} "
                  f"spatial, {len(pruned.temporal_edges)}/{len(base.temporal_edges)} temporal "
                  "edges)"}  # fmt: skip
        rows = [*direct, *recs["full"], *recs["pruned"]]
        usage = training["report"]["usage"]
        note = (
            f"attack `{attack}`; masks trained on Q' = {ctx.size['train']} queries at a cost of "
            f"{usage['prompt_tokens']:,} prompt and {usage['completion_tokens']:,} "
            f"completion tokens (not in the per-query figures); p = {RATIO}"
        )
        parts.append(Part(f"attack: {attack}", rows, ["direct", full, cut], full, labels,
                          "accuracy", note))  # fmt: skip
    return parts
