"""The prune claim on the MMLU sample: masks trained per attack, the team pruned once, the
full and the pruned team (whole responses on every edge) on held-out queries, and one call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from overseer.bench._solvers import DIRECT
from overseer.evidence.runs import Context, Part, run_configs, suite_tasks

SUITE = "mmlu-sample"
ATTACKS = ("none", "prompt", "replace")
RATIO = 0.5


def spec_files(ctx: Context) -> tuple[Path, Path]:
    """The full and the pruned (attack none) team specs the compose claim runs."""
    return ctx.artefact("full.json"), ctx.artefact("pruned-none.json")


def prune_parts(ctx: Context) -> list[Part]:
    """One part per attack: full vs pruned team, and the direct call on the same queries."""
    from overseer.prune import RunSettings, TrainConfig, build_team
    from overseer.prune.experiments import PruneJob, evaluate_pruned, train_or_load

    size = ctx.size
    train = suite_tasks(SUITE, "train", size["train"], ctx.seed)
    test = suite_tasks(SUITE, "test", size["test"], ctx.seed)
    base = build_team("complete", size["agents"], rounds=size["rounds"], kind="mc",
                      seed=ctx.seed).sharing_thoughts()  # fmt: skip
    spec_files(ctx)[0].write_text(json.dumps(base.model_dump(mode="json"), indent=1))
    rs = RunSettings(max_tokens=size["max_tokens"], seed=ctx.seed,
                     trace_dir=ctx.out_dir / "runs" / "prune")  # fmt: skip
    cfg = TrainConfig(seed=ctx.seed)
    direct = run_configs(ctx, [DIRECT], test)
    parts = []
    for attack in ATTACKS:
        job = PruneJob(base, SUITE, train, RATIO, cfg, ctx.model, size["max_tokens"], attack)
        out = ctx.artefact(f"pruned-{attack}.json")
        pruned, training, reused = asyncio.run(train_or_load(job, out, ctx.loader, rs))
        ctx.ran += 0 if reused else int(training["report"]["runs"])
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
            f"attack `{attack}`; masks trained on Q' = {len(train)} queries at a cost of "
            f"{usage['prompt_tokens']:,} prompt and {usage['completion_tokens']:,} "
            f"completion tokens (not in the per-query figures); p = {RATIO}"
        )
        parts.append(Part(f"attack: {attack}", rows, ["direct", full, cut], full, labels,
                          "accuracy", note))  # fmt: skip
    return parts
