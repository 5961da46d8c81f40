"""Makespan of one team run with a fixed-latency model: our executor vs one node at a time.

Usage: python benchmarks/runtime_makespan.py [--latency 0.1] [--agents 8]

The critical path is the longest chain of model calls the team's graph forces (agents along
the longest spatial path, per round, plus the decision call when the decision is an LLM).
A ratio of 1.0 means the executor adds nothing to what the graph itself forces.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from rich.console import Console
from rich.table import Table

from overseer.models import ScriptedModel
from overseer.runtime import Executor, TeamSpec, make_team


def critical_path_calls(team: TeamSpec) -> int:
    """Model calls on the longest path: longest spatial chain per round, plus the decision."""
    depth: dict[str, int] = {}
    for name in team.order():
        depth[name] = 1 + max((depth[p] for p in team.spatial_preds(name)), default=0)
    return team.rounds * max(depth.values()) + (1 if team.decision == "llm" else 0)


def reply(messages: list) -> object:
    if "final decision-maker" in messages[-1]["content"]:
        return "42"
    return {"thought": "ok", "action": "answer", "answer": "42"}


async def makespan(team: TeamSpec, latency: float, concurrency: int) -> float:
    model = ScriptedModel(reply, latency_s=latency)
    with tempfile.TemporaryDirectory() as d:
        ex = Executor(model, trace_dir=d, concurrency=concurrency)
        t0 = time.perf_counter()
        res = await ex.run(team, "What is 6*7?")
        elapsed = time.perf_counter() - t0
    assert res.stop_reason == "done", res.error
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.1, help="seconds per model call")
    ap.add_argument("--agents", type=int, default=8)
    args = ap.parse_args()
    n, lat = args.agents, args.latency
    teams = {
        "layered": make_team("layered", n, rounds=1),
        "star": make_team("star", n, rounds=1),
        "debate": make_team("debate", n, rounds=2),
    }
    t = Table(title=f"makespan, {n} agents, fixed model latency {lat * 1000:.0f} ms per call")
    for col in (
        "team",
        "rounds",
        "calls",
        "critical path s",
        "ours s",
        "ours / critical",
        "one-at-a-time s",
        "one-at-a-time / critical",
    ):
        t.add_column(col, justify="left" if col == "team" else "right")
    for name, team in teams.items():
        calls = team.rounds * len(team.agents) + (1 if team.decision == "llm" else 0)
        crit = critical_path_calls(team) * lat
        ours = asyncio.run(makespan(team, lat, concurrency=n))
        serial = asyncio.run(makespan(team, lat, concurrency=1))
        t.add_row(
            name,
            str(team.rounds),
            str(calls),
            f"{crit:.2f}",
            f"{ours:.2f}",
            f"{ours / crit:.3f}",
            f"{serial:.2f}",
            f"{serial / crit:.2f}",
        )
    Console(width=140).print(t)


if __name__ == "__main__":
    main()
