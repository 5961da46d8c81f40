"""Cached share of prompt tokens in a real team run: shared context first pays off.

Usage: python benchmarks/prefix_cache.py [--model smollm2-135m] [--agents 5] [--rounds 2]
       [--queries 2] [--roster] [--max-tokens 160] [--calls]
       python benchmarks/prefix_cache.py --suite mmlu --n 24 --model qwen2.5-coder-0.5b

Agents' prompts start with what they share (rules, with `--roster` the team list, task,
teammates' messages); llama.cpp reuses the KV cache of an identical prefix, so every agent
after the first pays prompt compute only for its own part. A table per run shows, per actor,
prompt tokens and the part served from the cache. The first run starts on a cold server; the
second (another question, as a benchmark's next task) finds the rules (and the team list)
cached.

`--suite mmlu --n 24` runs real tasks instead (the train split: no held-out task is used):
the same complete team with and without the team list heading every prompt (`--roster`, a
tool-less agent's own part is then its name and role), to see that the layout keeps the
answers (paired, exact McNemar) and what it saves in prompt compute. Results are stored in
`--store` (resumable).

`--calls` adds a table per call (from the run's trace): what each prompt did not find in the
cache. With one cache slot and each agent's own part (name, role, instructions) after the
shared context, every call after the first pays at least for its own part and for the
teammate message that came in since the previous call: the ceiling the layout sets.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile

from rich.console import Console
from rich.table import Table

from overseer.models import load_model
from overseer.runtime import Executor, RunResult, make_team, read_trace

QUESTIONS = (
    "A bakery sells muffins in boxes of 6 and cookies in boxes of 8. A school orders 9 boxes "
    "of muffins and 7 boxes of cookies, then gives away 15 items. How many items are left? "
    "Finish with 'The answer is N'.",
    "A library has 4 shelves of 35 books and 3 shelves of 28 books. It lends out 47 books and "
    "buys 12 new ones. How many books does it have now? Finish with 'The answer is N'.",
)
QUESTION = QUESTIONS[0]


def run_table(res: RunResult, title: str) -> Table:
    """Per actor: calls, prompt tokens, the cached part and its share; then the run's net."""
    t = Table(title=title)
    for col in ("actor", "calls", "prompt", "cached", "cached share"):
        t.add_column(col, justify="left" if col == "actor" else "right")
    for actor, u in sorted(res.usage_by_actor.items()):
        share = u.cached_prompt_tokens / u.prompt_tokens if u.prompt_tokens else 0.0
        t.add_row(
            actor,
            str(res.calls_by_actor[actor]),
            str(u.prompt_tokens),
            str(u.cached_prompt_tokens),
            f"{share:.0%}",
        )
    tot = res.total
    t.add_row(
        "net",
        str(sum(res.calls_by_actor.values())),
        str(tot.prompt_tokens),
        str(tot.cached_prompt_tokens),
        f"{tot.cached_prompt_tokens / max(tot.prompt_tokens, 1):.0%}",
        style="bold",
    )
    return t


def calls_table(res: RunResult, title: str) -> Table:
    """Per model call, in order: actor, prompt tokens, cached, and the part paid in full."""
    t = Table(title=title)
    for col in ("#", "actor", "prompt", "cached", "not cached"):
        t.add_column(col, justify="left" if col == "actor" else "right")
    calls = [e for e in read_trace(res.trace_path) if e["event"] == "model_call"]
    for i, e in enumerate(calls, 1):
        prompt = e["gen_ai.usage.input_tokens"]
        cached = e.get("gen_ai.usage.cache_read_input_tokens", 0)
        t.add_row(str(i), e["gen_ai.agent.name"], str(prompt), str(cached), str(prompt - cached))
    return t


def suite_check(args: argparse.Namespace) -> None:
    """Both layouts on `args.n` train-split tasks of `args.suite`: accuracy, tokens, cache."""
    from overseer.bench import (
        ResultStore,
        SolverConfig,
        run_experiment,
        summarize,
        summary_table,
        team_solver,
    )
    from overseer.bench.stats import paired
    from overseer.tasks import load_suite, split_tasks

    tasks = split_tasks(load_suite(args.suite), seed=0)["train"][: args.n]
    configs = [
        SolverConfig(
            name,
            f"complete team, {args.agents} agents, {args.rounds} rounds, layout {name}",
            lambda m, name=name: team_solver(
                m,
                preset="complete",
                agents=args.agents,
                rounds=args.rounds,
                roster=name == "roster",
                max_tokens=args.max_tokens,
                name=f"prefix-{name}",
            ),
        )
        for name in ("own-part", "roster")
    ]
    store = ResultStore(args.store)
    asyncio.run(
        run_experiment(
            configs=configs,
            tasks=tasks,
            seeds=[0],
            model_name=args.model,
            load_model=lambda: load_model(args.model),
            store=store,
            progress=False,
        )
    )
    recs = list(store.records(suite=args.suite, model=args.model))
    console = Console(width=140)
    console.print(summary_table(summarize(recs, baseline="own-part"), baseline="own-part"))
    p = paired(recs, "own-part", "roster")
    console.print(
        f"roster vs own-part on {p.n} tasks: {p.acc_config:.1%} vs {p.acc_baseline:.1%} "
        f"({p.wins}/{p.losses}/{p.ties}, exact McNemar p = {p.mcnemar_p:.3g}); total tokens "
        f"{p.token_ratio:.2f}x ({p.ratio_lo:.2f}-{p.ratio_hi:.2f})"
    )
    for name in ("own-part", "roster"):
        mine = [r.usage for r in recs if r.key.config == name]
        prompt = sum(u.prompt_tokens for u in mine)
        cached = sum(u.cached_prompt_tokens for u in mine)
        console.print(
            f"{name}: prompt {prompt:,}, cached {cached:,} ({cached / max(prompt, 1):.1%}), "
            f"computed {prompt - cached:,} tokens over {len(mine)} tasks"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--agents", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=2, choices=(1, 2), help="runs, one by one")
    ap.add_argument("--calls", action="store_true", help="also a table per model call")
    ap.add_argument("--roster", action="store_true", help="head every prompt with the team list")
    ap.add_argument(
        "--max-tokens", type=int, default=160, help="per reply (512, the agents' own, for qwen)"
    )
    ap.add_argument("--suite", help="run real tasks of this suite instead (e.g. mmlu)")
    ap.add_argument("--n", type=int, default=24, help="with --suite: train-split tasks")
    ap.add_argument("--store", default="results/prefix_cache.sqlite", help="with --suite")
    args = ap.parse_args()
    if args.suite:
        suite_check(args)
        return
    model = load_model(args.model)
    team = make_team("complete", args.agents, rounds=args.rounds, pool="math")
    with tempfile.TemporaryDirectory() as d:
        ex = Executor(
            model, trace_dir=d, max_tokens=args.max_tokens, max_steps=2, roster=args.roster
        )
        for i, question in enumerate(QUESTIONS[: args.queries]):
            res = asyncio.run(ex.run(team, question))
            state = "cold server" if i == 0 else "the server's cache holds the previous run"
            title = (
                f"prefix cache in run {i + 1}, a {args.agents}-agent, {args.rounds}-round "
                f"complete team on {args.model} ({state}; stop: {res.stop_reason})"
            )
            Console(width=120).print(run_table(res, title))
            if args.calls:
                Console(width=120).print(calls_table(res, f"run {i + 1}, call by call"))


if __name__ == "__main__":
    main()
