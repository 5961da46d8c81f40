"""`overseer run`: one query through one team (presets or a spec file, optional plug-ins)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from overseer.cli import _io
from overseer.cli import _options as o
from overseer.cli._app import InputError, Interrupted, app
from overseer.cli._hints import MODEL_HELP, model_name
from overseer.cli._lab import need_lab
from overseer.cli._run_options import (
    DEFAULT_SHAPE,
    NO_PLUGINS,
    BusOpts,
    ShapeOpts,
    bus_options,
    shape_options,
    tools_of,
    with_tools,
)

if TYPE_CHECKING:
    from overseer.runtime import TeamSpec

Question = Annotated[str | None, typer.Argument(help="The query ('-': standard input; or --task).")]


@app.command("run")
@shape_options
@bus_options
@o.model_options
@o.budget_options
def run_cmd(
    question: Question = None,
    query_file: _io.QueryFile = None,
    task: Annotated[str | None, typer.Option(help="Packaged task, e.g. mmlu:17.")] = None,
    split: Annotated[str, typer.Option(help="Split --task indexes into.")] = "test",
    model: Annotated[str | None, typer.Option(help=MODEL_HELP)] = None,
    trace_dir: Annotated[Path, typer.Option(help="Where the trace is written.")] = Path("runs"),
    seed: Annotated[int, typer.Option(help="Seed for sampling and random topologies.")] = 0,
    shape: ShapeOpts = DEFAULT_SHAPE,
    bus: BusOpts = NO_PLUGINS,
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
    max_query_chars: _io.MaxQueryChars = 200_000,
    progress: Annotated[bool, typer.Option(help="A live line per agent step (stderr).")] = True,
    allow_errors: _io.AllowErrors = False,
    json_out: _io.JsonOut = False,
) -> None:
    """Run one query through a team; print the answer, what oversaw the run and what acted,
    tokens per actor and the trace path."""
    from overseer.cli._run_result import report_run

    question = _io.read_query(question, query_file, max_query_chars)
    if (question is None) == (task is None):
        raise InputError("expected a QUESTION argument or --task, and not both")
    the_task = task_of(task, split) if task else None
    team_spec = shape.build(the_task, seed)
    model = model_name(model)
    plugins = bus.plugins(mopts)
    tool_map = tools_of(bus.tools)
    m = mopts.load(model)
    sups = [s for f in plugins.factories for s in f(m)]
    query = _task_query(the_task) if the_task else str(question)
    team = with_tools(team_spec, tool_map)
    run = _Run(team, sups, tool_map, plugins.top_logprobs, trace_dir, seed, progress)
    res = _execute(m, run, query, limits.budget())
    backend = f"{model} at {mopts.base_url}" if mopts.base_url else model
    report_run(
        res,
        the_task,
        json_out=json_out,
        allow_errors=allow_errors,
        backend=backend,
        overseers=plugins.names,
    )


def _task_query(task: Any) -> str:
    """What the team is asked for a packaged task (the lab: `--task` needs the bench extra)."""
    from overseer.bench.solvers import team_query

    return team_query(task)


def task_of(ref: str, split: str) -> Any:
    """`suite:N` (N-th task of the split) or `suite:ID` (a task id); the packaged tasks are the
    lab's, so without the `bench` extra this is one line naming it."""
    need_lab("overseer run --task")
    from overseer.tasks import load_suite

    suite, sep, which = ref.partition(":")
    if not sep or not which:
        raise InputError(f"--task: expected SUITE:INDEX or SUITE:TASK_ID, got {ref!r}")
    try:
        tasks = load_suite(suite, split=split)  # type: ignore[arg-type]
    except ValueError as exc:
        raise InputError(f"--task: {exc}") from None
    if which.isdigit():
        i = int(which)
        if i >= len(tasks):
            raise InputError(f"--task: {suite} {split} has {len(tasks)} tasks, index {i} is out")
        return tasks[i]
    for t in tasks:
        if t.id == which:
            return t
    raise InputError(f"--task: no task with id {which!r} in {suite} {split}")


@dataclass(frozen=True)
class _Run:
    """One `overseer run` on the Executor: the team, its plug-ins and tools, where and how."""

    team: TeamSpec
    supervisors: list[Any]
    tools: dict[str, Any]
    top_logprobs: int
    trace_dir: Path
    seed: int
    progress: bool


def _execute(m: Any, run: _Run, query: str, budget: Any) -> Any:
    """The team on the Executor (the runtime's defaults: no lab on a product command's path),
    with a live line per agent step when `progress`; Ctrl-C says where the trace written so far
    is."""
    import asyncio

    from overseer.runtime import Executor
    from overseer.runtime.steps import StepObserver

    line = _io.StepLine()
    sups = [StepObserver(line), *run.supervisors] if run.progress else run.supervisors
    ex = Executor(
        m,
        supervisors=sups,
        tools=run.tools,
        trace_dir=run.trace_dir,
        budget=budget,
        seed=run.seed,
        top_logprobs=run.top_logprobs,
    )
    try:
        return asyncio.run(ex.run(run.team, query))
    except KeyboardInterrupt:
        raise Interrupted(note=f"no answer; the trace so far is in {run.trace_dir}") from None
    finally:
        line.close()
