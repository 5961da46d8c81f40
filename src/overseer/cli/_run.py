"""`overseer run`: one query through one team (presets or a spec file, optional plug-ins)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from overseer.cli import _io
from overseer.cli import _options as o
from overseer.cli._app import InputError, app, csv_list
from overseer.runtime import PRESETS, TeamSpec, make_team


def _task(ref: str, split: str) -> Any:
    """`suite:N` (N-th task of the split) or `suite:ID` (a task id)."""
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


@app.command("run")
@o.model_options
@o.budget_options
def run_cmd(
    question: Annotated[
        str | None, typer.Argument(help="The query ('-': standard input; or --task).")
    ] = None,
    query_file: _io.QueryFile = None,
    team: Annotated[str, typer.Option(help=f"Preset: {', '.join(PRESETS)}.")] = "complete",
    agents: Annotated[int, typer.Option(help="Number of agents.")] = 3,
    rounds: Annotated[int, typer.Option(help="Rounds of communication.")] = 2,
    spec: Annotated[
        Path | None, typer.Option(help="TeamSpec JSON file (overrides --team).")
    ] = None,
    task: Annotated[str | None, typer.Option(help="Packaged task, e.g. mmlu:17.")] = None,
    split: Annotated[str, typer.Option(help="Split --task indexes into.")] = "test",
    model: Annotated[str, typer.Option(help="Local model name or openai:MODEL.")] = "smollm2-135m",
    trace_dir: Annotated[Path, typer.Option(help="Where the trace is written.")] = Path("runs"),
    seed: Annotated[int, typer.Option(help="Seed for sampling and random topologies.")] = 0,
    save_spec: Annotated[Path | None, typer.Option(help="Write the team spec here.")] = None,
    supervise: Annotated[bool, typer.Option(help="Put the SupervisorAgent on the bus.")] = False,
    supervisor_model: Annotated[
        str | None, typer.Option(help="Model of the supervisor (default: the agents' model).")
    ] = None,
    filter_preset: Annotated[
        str | None, typer.Option(help="Filter thresholds: gaia, humaneval, mbpp, aime, ...")
    ] = None,
    tools: Annotated[str | None, typer.Option(help="Tools for every agent: python.")] = None,
    monitor: Annotated[
        Path | None,
        typer.Option(help="Trained monitor file (`overseer monitor train`): rollback on the bus."),
    ] = None,
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
    max_agents: _io.MaxAgents = 64,
    max_rounds: _io.MaxRounds = 20,
    max_query_chars: _io.MaxQueryChars = 200_000,
    progress: Annotated[bool, typer.Option(help="A live line per agent step (stderr).")] = True,
    allow_errors: _io.AllowErrors = False,
    json_out: _io.JsonOut = False,
) -> None:
    """Run one query through a team; print the answer, tokens per actor and the trace path."""
    from overseer.bench.solvers import team_query
    from overseer.models import model_card

    question = _io.read_query(question, query_file, max_query_chars)
    if (question is None) == (task is None):
        raise InputError("expected a QUESTION argument or --task, and not both")
    the_task = _task(task, split) if task else None
    if spec is None:  # before building anything: a huge --agents is refused at once
        _io.check_sizes(agents, rounds, max_agents, max_rounds)
    _io.precheck_spec(spec, max_agents)
    team_spec = _team(spec, team, agents, rounds, seed, the_task)
    _io.check_caps(team_spec, max_agents, max_rounds)
    if save_spec is not None:
        team_spec.save(save_spec)
    if not model.startswith("openai:"):
        model_card(model)
    plugins = _monitor(monitor)
    m = mopts.load(model)
    sups = _supervisors(supervise, supervisor_model, filter_preset, mopts)
    if plugins is not None:
        sups += plugins(m)
    query = team_query(the_task) if the_task else str(question)
    setup = (team_spec, sups, _tools(tools), plugins is not None)
    res = _execute(m, setup, query, trace_dir=trace_dir, budget=limits.budget(), seed=seed,
                   progress=progress)  # fmt: skip
    from overseer.cli._trace import report_run

    backend = f"{model} at {mopts.base_url}" if mopts.base_url else model
    report_run(res, the_task, json_out=json_out, allow_errors=allow_errors, backend=backend)


def _execute(m: Any, setup: tuple, query: str, *, trace_dir: Path, budget: Any, seed: int,
             progress: bool) -> Any:  # fmt: skip
    """The team on the Executor, with a live line per agent step when `progress`."""
    from overseer.bench import ExecutorSettings
    from overseer.bench.solvers import TeamSetup, make_executor
    from overseer.experiments.registry import MONITOR_TOP_LOGPROBS
    from overseer.runtime.steps import StepObserver

    team_spec, sups, tool_map, monitored = setup
    line = _io.StepLine()
    if progress:
        sups = [StepObserver(line), *sups]
    team_setup = TeamSetup(_with_tools(team_spec, tool_map), tools=tool_map, supervisors=sups)
    top = MONITOR_TOP_LOGPROBS if monitored else 0
    settings = ExecutorSettings(trace_dir=trace_dir, budget=budget, top_logprobs=top)
    ex = make_executor(m, team_setup, settings, seed=seed)
    try:
        return asyncio.run(ex.run(team_setup.team, query))
    finally:
        line.close()


def _team(spec: Path | None, team: str, agents: int, rounds: int, seed: int, task: Any) -> TeamSpec:
    """The TeamSpec file, or the preset with roles for the task's kind."""
    if spec is not None:
        return TeamSpec.load(spec)
    pool = {"numeric": "math", "code": "code"}.get(task.kind, "reasoning") if task else "reasoning"
    try:
        return make_team(team, agents, rounds=rounds, pool=pool, seed=seed)
    except ValueError as exc:
        raise InputError(f"--team/--agents/--rounds: {_io.one_line(exc)}") from None


def _with_tools(team: TeamSpec, tools: dict[str, Any]) -> TeamSpec:
    """Every agent of the team also holds the named tools."""
    if not tools:
        return team
    both = set(tools)
    agents = tuple(
        a.model_copy(update={"tools": tuple(sorted(set(a.tools) | both))}) for a in team.agents
    )
    return team.model_copy(update={"agents": agents})


def _monitor(path: Path | None) -> Any:
    """The trained rogue-agent monitor of --monitor (a plug-in factory), or None."""
    if path is None:
        return None
    from overseer.experiments.registry import monitor_plugin

    try:
        return monitor_plugin(path)
    except ValueError as exc:
        raise InputError(f"--monitor: {exc}") from None


def _supervisors(
    on: bool, model: str | None, filter_preset: str | None, mopts: o.ModelOpts
) -> list[Any]:
    """The SupervisorAgent the flags ask for (none without --supervise)."""
    if not on:
        if model or filter_preset:
            raise InputError("--supervisor-model/--filter-preset: need --supervise")
        return []
    from overseer.supervise import SupervisorAgent, SupervisorSettings, preset

    try:
        settings = SupervisorSettings(filter=preset(filter_preset)) if filter_preset else None
    except ValueError as exc:
        raise InputError(f"--filter-preset: {exc}") from None
    sup_model = mopts.load(model) if model else None
    return [SupervisorAgent(sup_model, settings)]


def _tools(names: str | None) -> dict[str, Any]:
    """Tools named on the command line (only the sandboxed Python tool for now)."""
    from overseer.runtime import PythonTool

    if names is None:
        return {}
    known = {"python": PythonTool}
    out = {}
    for n in csv_list(names, "--tools"):
        if n not in known:
            raise InputError(f"--tools: unknown tool {n!r}; expected one of: {', '.join(known)}")
        out[n] = known[n]()
    return out
