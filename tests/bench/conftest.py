"""A result store with breadth for the report tests: a scripted bench run (direct, a team, the
team with a plug-in that guides and rolls back, a configuration that errors), stored monitor
games with resets, a saved monitor set and an AgentPrune training record."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from overseer.bench import ResultRecord, ResultStore, SolverConfig, SolverOutput, run_experiment
from overseer.bench._store import ResultKey
from overseer.bench._teams import team_configs
from overseer.models import Model, ScriptedModel, Usage
from overseer.monitor.train import train_monitors
from overseer.prune.masks import EdgeMasks
from overseer.runtime import BaseSupervisor, Interaction, Run, Verdict, make_team
from overseer.tasks import Task

TASKS = [
    Task(
        "toy",
        f"toy/{i}",
        f"Which is prime ({i})?\n\nA. 4\nB. 6\nC. 7\nD. 9",
        "C",
        "mc",
        ("4", "6", "7", "9"),
    )
    for i in range(3)
]


def agent_reply(messages: list) -> object:
    """Agent a1 says A (wrong), the others and the decision say C; task toy/2 is answered B."""
    text = messages[-1]["content"]
    if "final decision-maker" in messages[-1]["content"] or "Your name: " not in str(messages):
        return "Answer: B" if "(2)" in text else "Answer: C"
    name = messages[1]["content"].split("Your name: ")[1].split(".")[0]
    letter = "A" if name == "a1" else "C"
    return {"thought": "check", "action": "answer", "answer": f"It is {letter}. Answer: {letter}"}


class Guard(BaseSupervisor):
    """Guides a1's first step and rolls back once at the end of round 1."""

    name = "guard"

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        if interaction.agent == "a1" and interaction.round == 1:
            return Verdict.guide("Check 4 again: it is 2 x 2.", by=self.name, reason="wrong hint")
        return Verdict.approve(self.name)

    async def on_round_end(self, run: Run) -> Verdict | None:
        if run.round == 1:
            return Verdict.rollback(by=self.name, reason="round 1 drifted")
        return None


def failing() -> SolverConfig:
    def build(model: Model):
        async def solve(task: Task, seed: int) -> SolverOutput:
            if task.id == "toy/1":
                raise RuntimeError("solver broke")
            return SolverOutput("Answer: C", {"agent:solo": Usage(10, 2)})

        return solve

    return SolverConfig("flaky", "fails on toy/1", build)


def game_records() -> list[ResultRecord]:
    """Stored games as `overseer monitor eval` keeps them: success and resets per game."""
    out = []
    for cfg, resets, wins in (
        ("none", 0, 3),
        ("monitor-cap1@abc", 1, 5),
        ("random-cap1@abc", 1, 2),
    ):
        for i in range(6):
            out.append(
                ResultRecord(
                    key=ResultKey(cfg, "scripted", "whodunit-asym", f"g{i}", 0),
                    answer="",
                    parsed=None,
                    correct=i < wins,
                    score=float(i < wins),
                    usage_by_actor={"agent:accuser": Usage(100, 20), "monitor:m": Usage(0, 0)},
                    latency_s=0.1,
                    extra={"resets": resets if i % 2 else 0, "turns": 4},
                )
            )
    return out


def monitor_file(where: Path) -> Path:
    rng = np.random.default_rng(0)

    def rows(n: int, prefix: str) -> list[dict]:
        out = []
        for g in range(n):
            ok = bool(g % 2)
            for t in range(3):
                ent = float(rng.normal(0.8 if ok else 1.2, 0.4))
                out.append(
                    {
                        "game": f"{prefix}{g}",
                        "role": "accuser",
                        "turn": t,
                        "entropy": ent,
                        "varentropy": ent / 2,
                        "kurtosis": 1.0,
                        "success": ok,
                    }
                )
        return out

    ms = train_monitors(
        rows(30, "t"), rows(20, "v"), env="whodunit-asym", model="scripted", degrees=(1, 2)
    )
    return ms.save(where / "monitor.json")


def prune_record(where: Path) -> Path:
    masks = EdgeMasks.from_team(make_team("complete", 3, rounds=2))
    masks.spatial_logits[:] = np.linspace(-2, 2, len(masks.spatial))
    path = where / "pruned.train.json"
    path.write_text(json.dumps({"key": {}, "masks": masks.to_dict()}))
    return path


@dataclass(frozen=True)
class ReportData:
    root: Path  # the directory the bench ran in (traces are relative to it)
    store: Path
    monitor: Path
    prune: Path


def build_scripted(root: Path) -> ReportData:
    """Fill root/results/results.sqlite by a scripted bench run, from inside `root`."""
    from overseer.bench._solvers import DIRECT

    team = team_configs(3, 2, presets=["complete"])[0]
    guarded = team.with_plugin("complete+guard", lambda m: [Guard()], what="guard")
    store = root / "results" / "results.sqlite"
    cwd = Path.cwd()
    os.chdir(root)
    try:
        with ResultStore(store) as rs:
            asyncio.run(
                run_experiment(
                    configs=[DIRECT, team, guarded, failing()],
                    tasks=TASKS,
                    seeds=[0],
                    model_name="scripted",
                    load_model=lambda: ScriptedModel(agent_reply),
                    store=rs,
                    progress=False,
                )
            )
            for rec in game_records():
                rs.add(rec)
    finally:
        os.chdir(cwd)
    return ReportData(root, store, monitor_file(root), prune_record(root))


@pytest.fixture(scope="module")
def scripted_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReportData]:
    yield build_scripted(tmp_path_factory.mktemp("scripted"))
