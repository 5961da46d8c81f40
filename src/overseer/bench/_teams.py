"""Teams as solvers: a topology preset run by the Executor on each task of a suite."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from overseer.bench._solvers import Solver, SolverConfig, SolverOutput, task_instructions
from overseer.models import Model
from overseer.runtime import Executor, Supervisor, TeamSpec, make_team
from overseer.tasks import Task, score

POOL_BY_KIND = {"mc": "reasoning", "numeric": "math", "code": "code", "text": "reasoning"}


def team_query(task: Task) -> str:
    """What the team is asked: the task's answer-format instructions, then the task."""
    return f"{task_instructions(task)}\n\n{task.prompt}"


def _extractor(task: Task) -> Callable[[str], str]:
    """Votes compare parsed answers (a letter, a number), not whole messages."""
    if task.kind in ("mc", "numeric"):
        return lambda text: score(task, text).parsed or ""
    return lambda text: text.strip()


def team_solver(
    model: Model,
    *,
    preset: str | None = None,
    spec: TeamSpec | None = None,
    agents: int = 3,
    rounds: int = 2,
    trace_dir: str | Path = "runs/bench",
    supervisors: Callable[[Model], Sequence[Supervisor]] | None = None,
    name: str = "team",
) -> Solver:
    """Each task runs through a fresh Executor; the team's ledger becomes the result's usage."""
    if spec is None:
        make_team(preset or "chain", agents, rounds=rounds)  # bad sizes fail here, not per task

    async def solve(task: Task, seed: int) -> SolverOutput:
        team = spec or make_team(
            preset or "chain", agents, rounds=rounds, pool=POOL_BY_KIND[task.kind], seed=seed
        )
        ex = Executor(
            model,
            supervisors=supervisors(model) if supervisors else (),
            trace_dir=Path(trace_dir) / name,
            extract_answer=_extractor(task),
            seed=seed,
        )
        safe = task.id.replace("/", "_")
        res = await ex.run(team, team_query(task), run_id=f"{safe}-s{seed}-{uuid.uuid4().hex[:6]}")
        return SolverOutput(
            res.answer,
            res.usage_by_actor,
            error=res.error if res.stop_reason != "done" else None,
            extra={
                "trace": str(res.trace_path),
                "stop": res.stop_reason,
                "failures": len(res.failures),
            },
        )

    return solve


def team_configs(agents: int = 3, rounds: int = 2) -> list[SolverConfig]:
    """One configuration per topology preset, with the given team size and rounds."""
    from overseer.runtime import PRESETS

    out = []
    for preset in PRESETS:

        def build(model: Model, preset: str = preset) -> Solver:
            return team_solver(model, preset=preset, agents=agents, rounds=rounds, name=preset)

        out.append(SolverConfig(preset, f"{preset} team, {agents} agents, {rounds} rounds", build))
    return out
