"""The one solver factory: a team on the Executor -> SolverOutput.

Every team solver (presets, workload teams, travel teams, AgentPrune's specs, `overseer run`)
builds its Executor here. Run ids come from the Executor: a caller passes a stable id (task and
seed) and the Executor suffixes it only when a trace of that id already exists.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from overseer.bench._solvers import Solver, SolverOutput, team_query
from overseer.models import Model
from overseer.runtime import Budget, Executor, Run, RunResult, Supervisor, TeamSpec, Tool
from overseer.runtime.steps import last_line
from overseer.tasks import Task, answer_schema, score


@dataclass(frozen=True)
class TeamSetup:
    """What one run needs besides the model: the team, its tools and plug-ins."""

    team: TeamSpec
    tools: Mapping[str, Tool] = field(default_factory=dict)
    models: Mapping[str, Model] = field(default_factory=dict)
    supervisors: Sequence[Supervisor] = ()
    verifier: Callable[[str, Run], Awaitable[str]] | None = None
    finish: Callable[[str], str] | None = None  # the stored answer (e.g. a tool transcript)
    run_tag: str = ""  # prefix of the stable run id
    max_steps: int | None = None  # the task's own step limit per agent turn, if it sets one


@dataclass(frozen=True)
class ExecutorSettings:
    """Executor options shared by the runs of a solver; `seed` None: the task's seed."""

    trace_dir: Path = Path("runs/bench")
    max_steps: int = 4
    max_tokens: int = 512
    top_logprobs: int = 0
    budget: Budget | None = None
    seed: int | None = None
    roster: bool = False  # the team list heads every prompt (see Executor)


def answer_extractor(task: Task | None) -> Callable[[str], str]:
    """Votes compare parsed answers (a letter, a number), not whole messages."""
    if task is None:
        return last_line
    if task.kind in ("mc", "numeric"):
        return lambda text: score(task, text).parsed or ""
    return lambda text: text.strip()


def task_run_id(task: Task, seed: int, tag: str = "") -> str:
    """The stable run id of a task and seed (file-name safe)."""
    safe = task.id.replace("/", "_")
    return f"{tag}-{safe}-s{seed}" if tag else f"{safe}-s{seed}"


def make_executor(
    model: Model,
    setup: TeamSetup,
    settings: ExecutorSettings,
    *,
    seed: int | None,
    task: Task | None = None,
) -> Executor:
    """The Executor of one run of `setup` (answers parsed for `task`, if given)."""
    return Executor(
        model,
        supervisors=list(setup.supervisors),
        tools=setup.tools,
        models=setup.models,
        trace_dir=settings.trace_dir,
        budget=settings.budget,
        verifier=setup.verifier,
        max_steps=setup.max_steps or settings.max_steps,
        max_tokens=settings.max_tokens,
        extract_answer=answer_extractor(task),
        seed=settings.seed if settings.seed is not None else seed,
        top_logprobs=settings.top_logprobs,
        answer_schema=answer_schema(task) if task is not None else None,
        roster=settings.roster,
    )


async def run_team(
    model: Model, setup: TeamSetup, task: Task, seed: int, settings: ExecutorSettings
) -> tuple[SolverOutput, RunResult]:
    """Run the team on a task; the ledger becomes the output's usage, plug-in stats its extra."""
    ex = make_executor(model, setup, settings, seed=seed, task=task)
    res = await ex.run(setup.team, team_query(task), run_id=task_run_id(task, seed, setup.run_tag))
    extra: dict[str, object] = {
        "trace": str(res.trace_path),
        "stop": res.stop_reason,
        "failures": len(res.failures),
    }
    for name, st in res.plugin_stats.items():  # stats a plug-in left in the run's result
        extra[f"stats:{name}"] = st
    out = SolverOutput(
        setup.finish(res.answer) if setup.finish else res.answer,
        res.usage_by_actor,
        error=_run_error(res),
        extra=extra,
    )
    return out, res


def _run_error(res: RunResult) -> str | None:
    """A stored result's error: a stop in error, or a run where every model call failed (its
    empty answer never came from the model, so it is not scored as wrong; an empty answer from
    empty or unparsable replies is)."""
    if res.stop_reason not in ("done", "empty_answer"):
        return res.error
    detail = res.calls_all_failed()
    return None if detail is None else f"every model call failed: {detail}"


def executor_solver(
    model: Model,
    setup: Callable[[Task, int], TeamSetup],
    settings: ExecutorSettings | None = None,
) -> Solver:
    """A runner solver: `setup(task, seed)` gives each run's team, tools and plug-ins."""
    opts = settings or ExecutorSettings()

    async def solve(task: Task, seed: int) -> SolverOutput:
        out, _ = await run_team(model, setup(task, seed), task, seed, opts)
        return out

    return solve
