"""`overseer run`: one query through one team (presets or a spec file, optional plug-ins)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from overseer.cli import _io
from overseer.cli import _options as o
from overseer.cli._app import InputError, app, csv_list
from overseer.cli._options import _group
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


@dataclass(frozen=True)
class ShapeOpts:
    """The team of `overseer run`: a preset (with size and rounds) or a spec file, its caps,
    and where to save it."""

    team: str = "complete"
    agents: int = 3
    rounds: int = 2
    spec: Path | None = None
    save_spec: Path | None = None
    max_agents: int = 64
    max_rounds: int = 20

    def build(self, task: Any, seed: int) -> TeamSpec:
        """The checked team (and saved, with --save-spec); a bad one is one line, InputError."""
        if self.spec is None:  # before building anything: a huge --agents is refused at once
            _io.check_sizes(self.agents, self.rounds, self.max_agents, self.max_rounds)
        _io.precheck_spec(self.spec, self.max_agents)
        team_spec = _team(self.spec, self.team, self.agents, self.rounds, seed, task)
        _io.check_caps(team_spec, self.max_agents, self.max_rounds)
        if self.save_spec is not None:
            team_spec.save(self.save_spec)
        return team_spec


@dataclass(frozen=True)
class BusOpts:
    """What `overseer run` puts on the bus and in the agents' hands: the plug-ins come from the
    one registry of `overseer bench` (`--supervise` is `supervise:llm`, `--monitor FILE` is
    `monitor:FILE`), the tools by name."""

    supervise: bool = False
    supervisor_model: str | None = None
    filter_preset: str | None = None
    monitor: Path | None = None
    tools: str | None = None

    def plugins(self, mopts: o.ModelOpts) -> tuple[list[Any], int]:
        """The plug-in factories asked for and the top-k logprobs their agents must ask for;
        a bad flag, file or preset is one line (InputError) before the run's model loads."""
        from overseer.experiments.registry import plugin

        if not self.supervise and (self.supervisor_model or self.filter_preset):
            raise InputError("--supervisor-model/--filter-preset: need --supervise")
        made, top = [], 0
        if self.monitor is not None:
            made.append(_plugin(plugin, "--monitor", "monitor", str(self.monitor)))
        if self.supervise:
            sup = mopts.load(self.supervisor_model) if self.supervisor_model else None
            kw = {"supervisor_model": sup, "filter_preset": self.filter_preset}
            made.insert(0, _plugin(plugin, "--filter-preset", "supervise", "llm", **kw))
        top = max((t for _, _, t in made), default=0)
        return [f for f, _, _ in made], top


def _plugin(make: Any, option: str, *args: Any, **kw: Any) -> tuple[Any, str, int]:
    try:
        return make(*args, **kw)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


_SHAPE_TYPES: dict[str, Any] = {
    "team": Annotated[str, typer.Option(help=f"Preset: {', '.join(PRESETS)}.")],
    "agents": Annotated[int, typer.Option(help="Number of agents.")],
    "rounds": Annotated[int, typer.Option(help="Rounds of communication.")],
    "spec": Annotated[Path | None, typer.Option(help="TeamSpec JSON file (overrides --team).")],
    "save_spec": Annotated[Path | None, typer.Option(help="Write the team spec here.")],
    "max_agents": _io.MaxAgents,
    "max_rounds": _io.MaxRounds,
}
_BUS_TYPES: dict[str, Any] = {
    "supervise": Annotated[bool, typer.Option(help="Put the SupervisorAgent on the bus.")],
    "supervisor_model": Annotated[
        str | None, typer.Option(help="Model of the supervisor (default: the agents' model).")
    ],
    "filter_preset": Annotated[
        str | None, typer.Option(help="Filter thresholds: gaia, humaneval, mbpp, aime, ...")
    ],
    "tools": Annotated[str | None, typer.Option(help="Tools for every agent: python.")],
    "monitor": Annotated[
        Path | None,
        typer.Option(help="Trained monitor file (`overseer monitor train`): rollback on the bus."),
    ],
}
shape_options = _group("shape", ShapeOpts, _SHAPE_TYPES, (), tuple(_SHAPE_TYPES))
bus_options = _group("bus", BusOpts, _BUS_TYPES, (), tuple(_BUS_TYPES))
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
    model: Annotated[str, typer.Option(help="Local model name or openai:MODEL.")] = "smollm2-135m",
    trace_dir: Annotated[Path, typer.Option(help="Where the trace is written.")] = Path("runs"),
    seed: Annotated[int, typer.Option(help="Seed for sampling and random topologies.")] = 0,
    shape: ShapeOpts = ShapeOpts(),
    bus: BusOpts = BusOpts(),
    mopts: o.ModelOpts = o.MODEL_DEFAULTS,
    limits: o.BudgetOpts = o.NO_LIMITS,
    max_query_chars: _io.MaxQueryChars = 200_000,
    progress: Annotated[bool, typer.Option(help="A live line per agent step (stderr).")] = True,
    allow_errors: _io.AllowErrors = False,
    json_out: _io.JsonOut = False,
) -> None:
    """Run one query through a team; print the answer, tokens per actor and the trace path."""
    from overseer.bench.solvers import team_query
    from overseer.cli._trace import report_run
    from overseer.models import model_card

    question = _io.read_query(question, query_file, max_query_chars)
    if (question is None) == (task is None):
        raise InputError("expected a QUESTION argument or --task, and not both")
    the_task = _task(task, split) if task else None
    team_spec = shape.build(the_task, seed)
    if not model.startswith("openai:"):
        model_card(model)
    factories, top = bus.plugins(mopts)
    tool_map = _tools(bus.tools)
    m = mopts.load(model)
    sups = [s for f in factories for s in f(m)]
    query = team_query(the_task) if the_task else str(question)
    run = _Run(_with_tools(team_spec, tool_map), sups, tool_map, top, trace_dir, seed, progress)
    res = _execute(m, run, query, limits.budget())
    backend = f"{model} at {mopts.base_url}" if mopts.base_url else model
    report_run(res, the_task, json_out=json_out, allow_errors=allow_errors, backend=backend)


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
    """The team on the Executor, with a live line per agent step when `progress`."""
    from overseer.bench import ExecutorSettings
    from overseer.bench.solvers import TeamSetup, make_executor
    from overseer.runtime.steps import StepObserver

    line = _io.StepLine()
    sups = [StepObserver(line), *run.supervisors] if run.progress else run.supervisors
    team_setup = TeamSetup(run.team, tools=run.tools, supervisors=sups)
    settings = ExecutorSettings(
        trace_dir=run.trace_dir, budget=budget, top_logprobs=run.top_logprobs
    )
    ex = make_executor(m, team_setup, settings, seed=run.seed)
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
