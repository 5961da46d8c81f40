"""Supervision modes side by side on the workload teams, paired with the baseline.

Runs each configuration (baseline: no supervision; llm: the seed's SupervisorAgent; rules: the
rule tier alone; rules+llm: rules first, the LLM on what they cannot settle; learned: rules,
then the learned trigger, then the LLM) on the same tasks and seeds through a resumable result
store, and prints per workload and configuration: accuracy with its 95% interval, net tokens
per task (every actor), the supervisor's share, how many of its kept hints and verifications
the agent heeded (its next step changed), triggers by context, actions by kind, rule
firings, LLM calls the learned trigger skipped, latency, and the paired comparison with the
baseline (token ratio with its paired bootstrap 95% interval, exact McNemar p, W/L/T).

    PYTHONPATH=src python benchmarks/supervise_compare.py --model qwen2.5-coder-0.5b \
        --suites browse-sample,humaneval --configs baseline,llm,rules,rules+llm,learned \
        --limit 20 --supervisor-model qwen2.5-coder-1.5b --trigger results/trigger.json

The trigger is trained from the traces of supervised runs (collect them with
`--split train --configs rules+llm --traces runs/supervise` and `--split validation`):

    PYTHONPATH=src python benchmarks/supervise_compare.py train-trigger \
        --traces runs/supervise/train/rules+llm --val-traces runs/supervise/validation/rules+llm \
        --out results/trigger.json
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.table import Table
from scipy.stats import binomtest

from overseer.bench import ResultRecord, ResultStore, TeamConfig, run_experiment
from overseer.bench.stats import paired
from overseer.evidence.page import md_table
from overseer.experiments.supervise import SharedModel, mode_config
from overseer.models import load_model, model_card
from overseer.runtime import read_trace
from overseer.supervise.learned import (
    LABELS,
    STEERING,
    LearnedTrigger,
    effect_label,
    examples_from_traces,
    label_of,
    load_trigger,
    train_trigger,
)
from overseer.supervise.modes import MODES
from overseer.supervise.rules import RuleSettings
from overseer.tasks import load_suite

CONFIGS = ("baseline", *MODES)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--suites", default="browse-sample", help="browse-sample,humaneval,...")
    ap.add_argument("--model", default="smollm2-135m", help="the agents' model")
    ap.add_argument("--configs", default="baseline,rules+llm", help=",".join(CONFIGS))
    ap.add_argument("--supervisor-model", default=None, help="the supervisor's own model")
    ap.add_argument("--trigger", default=None, help="learned trigger file or name (learned)")
    ap.add_argument("--filter-preset", default=None, help="gaia|humaneval|mbpp|aime|drop|...")
    ap.add_argument("--limit", type=int, default=5)
    ap.add_argument("--split", default="test", help="train|validation|test|all")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--max-steps", type=int, default=8, help="tool steps per agent")
    ap.add_argument(
        "--budget-tokens", type=int, default=None, help="rule tier: tokens per agent and sub-task"
    )
    ap.add_argument(
        "--budget-steps",
        type=int,
        default=None,
        help="rule tier: tool steps per agent and sub-task",
    )
    ap.add_argument("--store", type=Path, default=Path("results/supervise.sqlite"))
    ap.add_argument("--traces", type=Path, default=Path("runs/supervise"), help="trace root")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--markdown", type=Path, default=None, help="also write the tables here")
    ap.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="llama.cpp prefix cache off: equal prompts give equal outputs in every config "
        "(slower; give it its own --store)",
    )
    return ap.parse_args(argv)


def parse_train(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="supervise_compare.py train-trigger")
    ap.add_argument("--traces", type=Path, nargs="+", required=True, help="train-split traces")
    ap.add_argument("--val-traces", type=Path, nargs="+", required=True, help="validation traces")
    ap.add_argument("--out", type=Path, default=Path("results/trigger.json"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-recall", type=float, default=0.9, help="of kept interventions")
    ap.add_argument(
        "--allow-constant",
        action="store_true",
        help="train steps of one label give a constant trigger (ask always / never)",
    )
    ap.add_argument(
        "--label",
        choices=LABELS,
        default="kept",
        help="kept: the intervention was kept; effect: kept, and a hint or verification "
        "changed the agent's next step",
    )
    return ap.parse_args(argv)


def train(args: argparse.Namespace) -> None:
    """Label the traces' flagged steps, fit, choose the threshold, save, print a summary."""
    trig = train_trigger(
        examples_from_traces(args.traces, label=args.label),
        examples_from_traces(args.val_traces, label=args.label),
        seed=args.seed,
        min_recall=args.min_recall,
        label=args.label,
        allow_constant=args.allow_constant,
    )
    path = trig.save(args.out)
    print(f"trigger {path}: threshold {trig.threshold:.3f}, {len(trig.features)} features")
    for k, v in trig.meta.items():
        print(f"  {k}: {v}")


def stored_name(name: str, supervisor: str | None, rules: RuleSettings | None = None) -> str:
    """The store's config name: supervised configs name their supervisor model when it is set,
    rule-tier modes their budgets (e.g. `rules[tokens=2000]`)."""
    if name == "baseline":
        return name
    budget = ",".join(
        f"{k}={v}"
        for k, v in (
            ("tokens", rules and rules.budget_tokens),
            ("steps", rules and rules.budget_steps),
        )
        if v is not None
    )
    if budget and name != "llm":
        name = f"{name}[{budget}]"
    return f"{name}@{supervisor}" if supervisor else name


def configuration(
    name: str, args: argparse.Namespace, sup: SharedModel | None, trigger: LearnedTrigger | None
) -> TeamConfig:
    """The workload team of `name` (a mode, or baseline), its traces under --traces/SPLIT."""
    rules = RuleSettings(budget_tokens=args.budget_tokens, budget_steps=args.budget_steps)
    return mode_config(
        name,
        name=stored_name(name, sup.name if sup else None, rules),
        rules=rules,
        supervisor_model=sup,
        trigger=trigger if name == "learned" else None,
        filter_preset=args.filter_preset,
        trace_dir=args.traces / args.split,
        max_steps=args.max_steps,
    )


def stats_of(rec: ResultRecord) -> dict[str, object]:
    value = rec.extra.get("stats:supervisor")
    return value if isinstance(value, dict) else {}


def counts(recs: Sequence[ResultRecord], key: str) -> str:
    c: Counter[str] = Counter()
    for r in recs:
        part = stats_of(r).get(key)
        if isinstance(part, dict):
            c.update(part)
    return " ".join(f"{k}={v}" for k, v in sorted(c.items())) or "-"


def share(recs: Sequence[ResultRecord], kind: str) -> float:
    total = sum(r.usage.total_tokens for r in recs) or 1
    part = sum(
        u.total_tokens for r in recs for a, u in r.usage_by_actor.items() if a.startswith(kind)
    )
    return part / total


def heeded(recs: Sequence[ResultRecord]) -> str:
    """Of the kept hints and verifications in the runs' traces, how many the agent heeded
    (its next step was not the flagged one again): `effect` labels over `kept` labels."""
    kept = changed = 0
    for r in recs:
        path = Path(str(r.extra.get("trace", "")))
        if not path.is_file():
            continue
        events = list(read_trace(path))
        for i, ev in enumerate(events):
            if label_of(ev) and ev.get("action") in STEERING:
                kept += 1
                changed += effect_label(events, i) or 0
    return f"{changed}/{kept}" if kept else "-"


def accuracy(recs: Sequence[ResultRecord]) -> str:
    ok = [r for r in recs if r.error is None]
    if not ok:
        return "-"
    k = sum(r.correct for r in ok)
    ci = binomtest(k, len(ok)).proportion_ci(method="wilson")
    errs = f" ({len(recs) - len(ok)} err)" if len(ok) < len(recs) else ""
    return f"{k}/{len(ok)} [{ci.low:.2f},{ci.high:.2f}]{errs}"


def vs_base(recs: Sequence[ResultRecord], base: str, name: str) -> list[str]:
    if name == base:
        return ["-", "-", "-"]
    p = paired(recs, base, name)
    if p.n == 0:
        return ["-", "-", "-"]
    ratio = f"{p.token_ratio:.2f}x [{p.ratio_lo:.2f},{p.ratio_hi:.2f}]"
    return [ratio, f"{p.mcnemar_p:.2f}", f"{p.wins}/{p.losses}/{p.ties}"]


COLUMNS = (
    "config", "n", "acc [95%]", "tok/task", "supervisor", "verifier", "latency s",
    "vs base [95%]", "McNemar p", "W/L/T", "heeded", "triggers", "actions", "rules", "skipped",
)  # fmt: skip


def rows(recs: list[ResultRecord], names: list[str]) -> list[list[str]]:
    """One row of COLUMNS per configuration that has results, the first name the baseline."""
    out = []
    for name in names:
        rs = [r for r in recs if r.key.config == name]
        if not rs:
            continue
        out.append(
            [
                name,
                str(len(rs)),
                accuracy(rs),
                f"{statistics.fmean(r.usage.total_tokens for r in rs):,.0f}",
                f"{share(rs, 'supervisor:'):.1%}",
                f"{share(rs, 'verifier:'):.1%}",
                f"{statistics.fmean(r.latency_s for r in rs):.1f}",
                *vs_base(recs, names[0], name),
                heeded(rs),
                counts(rs, "triggers"),
                counts(rs, "actions"),
                counts(rs, "rules"),
                counts(rs, "skipped"),
            ]
        )
    return out


def title(suite: str, recs: list[ResultRecord], names: list[str]) -> str:
    return f"{suite}: supervision modes (agents {recs[0].key.model}; baseline {names[0]})"


def report(console: Console, suite: str, recs: list[ResultRecord], names: list[str]) -> None:
    t = Table(title=title(suite, recs, names))
    for col in COLUMNS:
        t.add_column(col, justify="left" if col in COLUMNS[:1] + COLUMNS[-4:] else "right")
    for row in rows(recs, names):
        t.add_row(*row)
    console.print(t)


def markdown(suite: str, recs: list[ResultRecord], names: list[str]) -> str:
    """The same table as Markdown, with n and the summed episode time, for a docs page."""
    table = "\n".join(md_table(COLUMNS, rows(recs, names)))
    minutes = sum(r.latency_s for r in recs) / 60
    return (
        f"### {title(suite, recs, names)}\n\n{table}\n\n"
        f"{len(recs)} episodes, {minutes:.1f} min of episode time.\n\n"
    )


def check(args: argparse.Namespace, names: list[str]) -> LearnedTrigger | None:
    """Refuse bad input before any work (one line each); the trigger, loaded once."""
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise ValueError(f"--configs: unknown {unknown}; expected some of {list(CONFIGS)}")
    if args.limit < 1:
        raise ValueError(f"--limit: expected >= 1, got {args.limit}")
    model_card(args.model)
    if args.supervisor_model:
        model_card(args.supervisor_model)
    if "learned" in names:
        return load_trigger(args.trigger or "results/trigger.json")
    return None


def main(argv: Sequence[str]) -> None:
    if argv[:1] == ["train-trigger"]:
        train(parse_train(argv[1:]))
        return
    args = parse(argv)
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    seeds = [int(s) for s in args.seeds.split(",")]
    trigger = check(args, names)
    cache = not args.no_prompt_cache
    agents = SharedModel(args.model, partial(load_model, args.model, prompt_cache=cache))
    sup = (
        SharedModel(
            args.supervisor_model, partial(load_model, args.supervisor_model, prompt_cache=cache)
        )
        if args.supervisor_model
        else None
    )
    configs = [configuration(n, args, sup, trigger) for n in names]
    stored = [c.name for c in configs]
    console = Console(width=240)
    pages = [f"`python benchmarks/supervise_compare.py {' '.join(argv)}`\n\n"]
    try:
        with ResultStore(args.store) as store:
            for suite in [s.strip() for s in args.suites.split(",") if s.strip()]:
                tasks = load_suite(suite, split=args.split, seed=seeds[0], limit=args.limit)
                asyncio.run(
                    run_experiment(
                        configs=configs,
                        tasks=tasks,
                        seeds=seeds,
                        model_name=args.model,
                        load_model=lambda: agents,
                        store=store,
                        concurrency=args.concurrency,
                    )
                )
                ids = {t.id for t in tasks}
                recs = [
                    r
                    for r in store.records(suite=suite, model=args.model, configs=stored)
                    if r.key.task_id in ids and r.key.seed in seeds
                ]
                report(console, suite, recs, stored)
                if args.markdown and recs:
                    pages.append(markdown(suite, recs, stored))
                    args.markdown.parent.mkdir(parents=True, exist_ok=True)
                    args.markdown.write_text("".join(pages))
    finally:
        agents.close()
        if sup is not None:
            sup.close()


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except ValueError as exc:
        sys.exit(f"error: {exc}")
