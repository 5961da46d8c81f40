"""Executor and bus overhead per agent step, with an instant scripted model.

Usage: python benchmarks/runtime_overhead.py [--runs 50] [--agents 5] [--rounds 2]

"bare model" is the cost of the scripted model call alone; the rest of each step is the
executor (prompt building, JSON parsing, channel, ledger, trace written and flushed) and,
in the last rows, a chain of supervisors that approve everything.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from rich.console import Console
from rich.table import Table

from overseer.models import ScriptedModel
from overseer.runtime import BaseSupervisor, Executor, make_team

STEP = {"thought": "ok", "action": "answer", "answer": "42"}


def reply(messages: list) -> object:
    return "42" if "final decision-maker" in messages[0]["content"] else STEP


class Approver(BaseSupervisor):
    def __init__(self, i: int) -> None:
        self.name = f"approver{i}"


async def per_step_us(runs: int, agents: int, rounds: int, supervisors: int) -> tuple[float, int]:
    model = ScriptedModel(reply)
    team = make_team("complete", agents, rounds=rounds)
    steps = 0
    with tempfile.TemporaryDirectory() as d:
        ex = Executor(model, trace_dir=d, supervisors=[Approver(i) for i in range(supervisors)])
        t0 = time.perf_counter()
        for _ in range(runs):
            res = await ex.run(team, "What is 6*7?")
            steps += sum(res.calls_by_actor.values())
        elapsed = time.perf_counter() - t0
    return elapsed / steps * 1e6, steps


def bare_model_us(n: int) -> float:
    model = ScriptedModel(reply)
    msgs = [{"role": "user", "content": "What is 6*7? " * 20}]
    t0 = time.perf_counter()
    for _ in range(n):
        model.complete(msgs)
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--agents", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    t = Table(
        title=f"overhead per agent step (complete team, {args.agents} agents, "
        f"{args.rounds} rounds, {args.runs} runs)"
    )
    for col in ("setting", "steps", "us per step"):
        t.add_column(col, justify="left" if col == "setting" else "right")
    t.add_row("bare scripted model call", "-", f"{bare_model_us(2000):.0f}")
    for k in (0, 1, 4):
        us, steps = asyncio.run(per_step_us(args.runs, args.agents, args.rounds, k))
        t.add_row(f"executor + bus, {k} supervisors", str(steps), f"{us:.0f}")
    Console(width=120).print(t)


if __name__ == "__main__":
    main()
