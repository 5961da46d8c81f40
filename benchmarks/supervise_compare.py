"""Workload teams with and without the SupervisorAgent (and its ablations), side by side.

Runs the chosen configurations on each suite through the result store (reruns resume), then
prints per configuration: accuracy, tokens per task (total, and the supervisor's and the
verifier's share), tokens vs the baseline, latency, and what the supervisor did: filter
triggers by context and decisions by action, summed over tasks.

    PYTHONPATH=src python benchmarks/supervise_compare.py --suites browse-sample --limit 2
    PYTHONPATH=src python benchmarks/supervise_compare.py --model qwen2.5-coder-0.5b \
        --suites browse-sample,humaneval --limit 10 --configs baseline,supervised
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from overseer.bench import ResultRecord, ResultStore, run_experiment
from overseer.models import Model, load_model, model_card
from overseer.supervise.configs import supervise_configs
from overseer.tasks import load_suite


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--suites", default="browse-sample", help="browse-sample,humaneval,mbpp...")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument(
        "--configs",
        default="baseline,supervised",
        help="baseline,supervised,supervised-no-correction,-no-guidance,-no-purification",
    )
    ap.add_argument("--filter-preset", default=None, help="gaia|humaneval|mbpp|aime|drop|...")
    ap.add_argument("--limit", type=int, default=5)
    ap.add_argument("--split", default="test")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--store", type=Path, default=Path("results/supervise.sqlite"))
    ap.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="llama.cpp prefix cache off: equal prompts give equal outputs in every config, so "
        "differences come from supervision alone (slower; give it its own --store)",
    )
    return ap.parse_args()


def stats_of(rec: ResultRecord) -> dict[str, object]:
    for key, value in rec.extra.items():
        if key.startswith("stats:") and isinstance(value, dict):
            return value
    return {}


def share(recs: list[ResultRecord], kind: str) -> int:
    return sum(
        u.total_tokens for r in recs for a, u in r.usage_by_actor.items() if a.startswith(kind)
    )


def report(console: Console, suite: str, recs: list[ResultRecord], names: list[str]) -> None:
    by = {n: [r for r in recs if r.key.config == n] for n in names}
    base = by.get("baseline") or by[names[0]]
    base_tok = statistics.fmean(r.usage.total_tokens for r in base) if base else 0.0
    t = Table(title=f"{suite}: SupervisorAgent (model {recs[0].key.model}, n={len(base)})")
    for col in (
        "config",
        "acc",
        "tok/task",
        "vs base",
        "supervisor",
        "verifier",
        "latency s",
        "triggers",
        "actions",
    ):
        t.add_column(col, justify="left" if col in ("config", "triggers", "actions") else "right")
    for name in names:
        rs = by[name]
        if not rs:
            continue
        tok = statistics.fmean(r.usage.total_tokens for r in rs)
        total = sum(r.usage.total_tokens for r in rs) or 1
        trig: Counter[str] = Counter()
        acts: Counter[str] = Counter()
        for r in rs:
            s = stats_of(r)
            trig.update(s.get("triggers", {}))  # type: ignore[arg-type]
            acts.update(s.get("actions", {}))  # type: ignore[arg-type]
        t.add_row(
            name,
            f"{sum(r.correct for r in rs)}/{len(rs)}",
            f"{tok:,.0f}",
            f"{tok / base_tok:.2f}x" if base_tok else "-",
            f"{share(rs, 'supervisor') / total:.0%}",
            f"{share(rs, 'verifier') / total:.0%}",
            f"{statistics.fmean(r.latency_s for r in rs):.1f}",
            " ".join(f"{k}={v}" for k, v in sorted(trig.items())) or "-",
            " ".join(f"{k}={v}" for k, v in sorted(acts.items())) or "-",
        )
    console.print(t)


def main() -> None:
    args = parse()
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    known = {c.name: c for c in supervise_configs(args.filter_preset)}
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"--configs: unknown {unknown}; expected some of {sorted(known)}")
    model_card(args.model)
    cached: list[Model] = []

    def loader() -> Model:
        if not cached:
            cached.append(load_model(args.model, prompt_cache=not args.no_prompt_cache))
        return cached[0]

    console = Console(width=200)
    args.store.parent.mkdir(parents=True, exist_ok=True)
    with ResultStore(args.store) as store:
        for suite in [s.strip() for s in args.suites.split(",") if s.strip()]:
            tasks = load_suite(suite, split=args.split, seed=args.seed, limit=args.limit)
            asyncio.run(
                run_experiment(
                    configs=[known[n] for n in names],
                    tasks=tasks,
                    seeds=[args.seed],
                    model_name=args.model,
                    load_model=loader,
                    store=store,
                )
            )
            ids = {t.id for t in tasks}
            recs = [
                r
                for r in store.records(suite=suite, model=args.model, configs=names)
                if r.key.task_id in ids and r.key.seed == args.seed
            ]
            report(console, suite, recs, names)
    for m in cached:
        close = getattr(m, "close", None)
        if close:
            close()


if __name__ == "__main__":
    main()
