"""Topology presets vs AgentPrune-C/-L/-R on task suites, clean and under the two agent attacks.

For each suite and attack: every preset runs on the held-out test tasks; every AgentPrune
variant trains its masks on the train tasks (query-level, with the attacker present), is pruned
once with ratio p, and its pruned team runs on the same test tasks. Prints accuracy, prompt and
completion tokens per task and their ratio to the complete graph under the same attack, plus
the training tokens. Results go to a SQLite store and pruned specs to --out-dir: reruns resume.

    PYTHONPATH=src python benchmarks/prune_compare.py --suites mmlu-sample --train 2 --test 3
    PYTHONPATH=src python benchmarks/prune_compare.py --model qwen2.5-coder-0.5b ...
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from overseer.bench import ResultStore, SolverConfig, run_experiment
from overseer.experiments.prune_runs import (
    VARIANTS,
    RunSettings,
    build_team,
    learn_and_prune,
    load_trained,
    save_trained,
    spec_digest,
    spec_solver,
)
from overseer.models import Model, load_model
from overseer.prune import ATTACKS, TrainConfig
from overseer.runtime import TeamSpec
from overseer.tasks import load_suite


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--suites", default="mmlu-sample", help="mmlu-sample,gsm8k-sample,humaneval")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--presets", default="chain,star,tree,complete,layered,random")
    ap.add_argument("--variants", default="agentprune-c,agentprune-l,agentprune-r")
    ap.add_argument("--attacks", default="none", help="none,prompt,replace")
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--train", type=int, default=2, help="training queries Q'")
    ap.add_argument("--test", type=int, default=3, help="held-out test queries")
    ap.add_argument("--ratio", type=float, default=0.5, help="pruning ratio p")
    ap.add_argument("--samples", type=int, default=1, help="sampled structures M per query")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument(
        "--share-thoughts", action="store_true", help="whole responses travel on edges (the seed)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--store", type=Path, default=Path("results/prune_compare.sqlite"))
    ap.add_argument("--out-dir", type=Path, default=Path("results/prune_specs"))
    a = ap.parse_args()
    split = lambda s: [x.strip() for x in s.split(",") if x.strip()]  # noqa: E731
    a.suites, a.presets, a.variants, a.attacks = (
        split(a.suites), split(a.presets), split(a.variants), split(a.attacks)
    )  # fmt: skip
    bad = [v for v in a.variants if v not in VARIANTS] + [x for x in a.attacks if x not in ATTACKS]
    if bad:
        ap.error(f"unknown variants/attacks {bad}; expected {list(VARIANTS)} and {list(ATTACKS)}")
    if "complete" not in a.presets:
        a.presets.append("complete")  # the reference of every ratio
    return a


def main() -> int:
    a = parse()
    console = Console(width=None if sys.stdout.isatty() else 170)
    loaded: list[Model] = []

    def get_model() -> Model:
        if not loaded:
            loaded.append(load_model(a.model))
        return loaded[0]

    rs = RunSettings(max_tokens=a.max_tokens, trace_dir=Path("runs/prune_compare"), seed=a.seed)
    cfg = TrainConfig(samples=a.samples, seed=a.seed)
    title = (
        f"presets vs AgentPrune ({a.model}, {a.agents} agents, {a.rounds} rounds, p={a.ratio}, "
        f"Q'={a.train}); ratios vs complete under the same attack"
    )
    table = Table(title=title)
    cols = ("suite", "attack", "config", "edges S/T", "n", "acc", "prompt/task", "compl/task",
            "prompt vs C", "compl vs C", "train prompt", "train compl")  # fmt: skip
    for col in cols:
        table.add_column(col, justify="left" if col in ("suite", "attack", "config") else "right")
    with ResultStore(a.store) as store:
        for suite in a.suites:
            train_tasks = load_suite(suite, split="train", seed=a.seed, limit=a.train)
            test_tasks = load_suite(suite, split="test", seed=a.seed, limit=a.test)
            kind = test_tasks[0].kind
            for attack in a.attacks:
                teams: dict[str, TeamSpec] = {}
                training: dict[str, dict] = {}
                for p in a.presets:
                    teams[p] = build_team(
                        p, a.agents, rounds=a.rounds, kind=kind, temporal="self", seed=a.seed
                    ).sharing_thoughts(a.share_thoughts)
                for v in a.variants:
                    base = build_team(
                        v, a.agents, rounds=a.rounds, kind=kind, seed=a.seed
                    ).sharing_thoughts(a.share_thoughts)
                    out = a.out_dir / f"{suite}-{v}-{attack}-{spec_digest(base)}.json"
                    key = {"team": base.model_dump(mode="json"), "suite": suite,
                           "train": [t.id for t in train_tasks], "ratio": a.ratio,
                           "cfg": asdict(cfg), "attack": attack, "model": a.model,
                           "max_tokens": a.max_tokens}  # fmt: skip
                    prev = load_trained(out, key)
                    if prev is None:
                        console.print(f"training {v} on {suite} (attack {attack})")
                        res = asyncio.run(
                            learn_and_prune(
                                base, get_model(), train_tasks, ratio=a.ratio, cfg=cfg,
                                attack=attack, rs=rs,
                            )
                        )  # fmt: skip
                        prev = (res.spec, save_trained(out, key, res))
                    teams[v], training[v] = prev
                names = {k: f"{k}:{spec_digest(t)}:{attack}" for k, t in teams.items()}
                configs = [
                    SolverConfig(
                        names[k], k, lambda m, t=t, x=attack: spec_solver(m, t, attack=x, rs=rs)
                    )
                    for k, t in teams.items()
                ]
                s = asyncio.run(
                    run_experiment(configs=configs, tasks=test_tasks, seeds=[a.seed],
                                   model_name=a.model, load_model=get_model, store=store,
                                   progress=False)
                )  # fmt: skip
                console.print(
                    f"{suite}/{attack}: {s.already_done} stored, {s.ran} ran, {s.errors} errors"
                )
                ids = {t.id for t in test_tasks}
                stats = {}
                for k in teams:
                    recs = [r for r in store.records(model=a.model, configs=[names[k]])
                            if r.key.task_id in ids and r.key.seed == a.seed]  # fmt: skip
                    n = max(len(recs), 1)
                    stats[k] = (
                        len(recs),
                        sum(r.correct for r in recs) / n,
                        sum(r.usage.prompt_tokens for r in recs) / n,
                        sum(r.usage.completion_tokens for r in recs) / n,
                    )
                ref = stats["complete"]
                for k, (n, acc, pr, co) in stats.items():
                    rep = training.get(k, {}).get("report", {}).get("usage", {})
                    t = teams[k]
                    table.add_row(
                        suite, attack, k, f"{len(t.spatial_edges)}/{len(t.temporal_edges)}",
                        str(n), f"{acc:.3f}", f"{pr:.0f}", f"{co:.0f}",
                        f"{pr / ref[2]:.2f}x" if ref[2] else "-",
                        f"{co / ref[3]:.2f}x" if ref[3] else "-",
                        str(rep.get("prompt_tokens", "-")), str(rep.get("completion_tokens", "-")),
                    )  # fmt: skip
    console.print(table)
    for m in loaded:
        m.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
