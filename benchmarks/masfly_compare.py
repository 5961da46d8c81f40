"""MASFly vs fixed teams, ablations and the prompt attack, through the runner (resumable).

Prints the runner's table per suite (and the travel table: success, delivery, micro, tokens).
Repository first: `overseer adapt init --suite <suite> --limit N --model M` (training split).

    python benchmarks/masfly_compare.py --model qwen2.5-coder-0.5b --suite travel --limit 6 \
        --configs chain,masfly
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from rich.console import Console

from overseer.bench import ResultStore, run_experiment, summarize, summary_table
from overseer.experiments.registry import bench_configs, suite_report
from overseer.models import load_model
from overseer.tasks import load_suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--suite", default="humaneval")
    ap.add_argument("--configs", default="chain,masfly")
    ap.add_argument("--limit", type=int, default=5)
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--store", type=Path, default=Path("results/masfly.sqlite"))
    ap.add_argument("--adapt-store", type=Path, default=Path("results/adapt.sqlite"))
    a = ap.parse_args()
    names = [s for s in a.configs.split(",") if s]
    reg = bench_configs(agents=a.agents, rounds=a.rounds, suite=a.suite, adapt_store=a.adapt_store)
    tasks = load_suite(a.suite, split="test", limit=a.limit)
    seeds = [int(s) for s in a.seeds.split(",")]
    console = Console(width=None if sys.stdout.isatty() else 160, markup=False)
    report = suite_report(a.suite)
    with ResultStore(a.store) as rs:
        asyncio.run(
            run_experiment(
                configs=reg.resolve(names),
                tasks=tasks,
                seeds=seeds,
                model_name=a.model,
                load_model=lambda: load_model(a.model),
                store=rs,
            )
        )
        recs = rs.records(suite=a.suite, model=a.model, configs=names)
        console.print(
            summary_table(summarize(recs, baseline=names[0], order=names), baseline=names[0])
        )
        if report is not None:
            report(console, rs.records(suite=a.suite, model=a.model, configs=names), names)


if __name__ == "__main__":
    main()
