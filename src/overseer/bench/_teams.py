"""Teams as solvers: a topology preset run by the Executor on each task of a suite."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from overseer.bench._factory import ExecutorSettings, TeamSetup, executor_solver
from overseer.bench._solvers import PluginFactory, Solver, TeamConfig, plugin_verifier
from overseer.models import Model
from overseer.runtime import TeamSpec, make_team
from overseer.tasks import Task, open_environment

POOL_BY_KIND = {"mc": "reasoning", "numeric": "math", "code": "code", "text": "reasoning"}


def team_solver(
    model: Model,
    *,
    preset: str | None = None,
    spec: TeamSpec | None = None,
    agents: int = 3,
    rounds: int = 2,
    trace_dir: str | Path = "runs/bench",
    supervisors: PluginFactory | None = None,
    name: str = "team",
    environment: bool = False,
    max_steps: int | None = None,
    top_logprobs: int = 0,
    roster: bool = False,
    max_tokens: int = 512,
) -> Solver:
    """Each task runs through a fresh Executor; the team's ledger becomes the result's usage.
    With `environment`, every agent holds the tools of the task's own environment (travel,
    browse) and the stored answer is its `finish` of it (8 steps by default)."""
    if spec is None:
        make_team(preset or "chain", agents, rounds=rounds)  # bad sizes fail here, not per task

    def setup(task: Task, seed: int) -> TeamSetup:
        env = open_environment(task) if environment else None
        tools = dict(env.tools) if env is not None else {}
        team = spec or make_team(
            preset or "chain",
            agents,
            rounds=rounds,
            pool=POOL_BY_KIND[task.kind],
            seed=seed,
            tools=tuple(sorted(tools)),
        )
        return TeamSetup(
            team,
            tools=tools,
            supervisors=list(supervisors(model)) if supervisors else (),
            verifier=plugin_verifier(supervisors, tools),
            finish=env.finish if env is not None else None,
        )

    settings = ExecutorSettings(
        trace_dir=Path(trace_dir) / name,
        max_steps=max_steps if max_steps is not None else (8 if environment else 4),
        max_tokens=max_tokens,
        top_logprobs=top_logprobs,
        roster=roster,
    )
    return executor_solver(model, setup, settings)


def team_configs(
    agents: int = 3,
    rounds: int = 2,
    *,
    presets: Sequence[str] | None = None,
    environment: bool = False,
) -> list[TeamConfig]:
    """One configuration per topology preset, with the given team size and rounds; with
    `environment`, the agents hold the tools of each task's environment (see `team_solver`)."""
    from overseer.runtime import PRESETS

    out = []
    for preset in presets or PRESETS:

        def make(
            model: Model, plugins: PluginFactory | None, top_logprobs: int, preset: str = preset
        ) -> Solver:
            return team_solver(
                model,
                preset=preset,
                agents=agents,
                rounds=rounds,
                name=preset,
                supervisors=plugins,
                environment=environment,
                top_logprobs=top_logprobs,
            )

        what = "with the task environment's tools" if environment else f"{rounds} rounds"
        out.append(TeamConfig.of(preset, f"{preset} team, {agents} agents, {what}", make))
    return out
