"""The options of `overseer run`, parsed into values: the task, the team (ShapeOpts), what goes
on the bus and in the agents' hands (BusOpts). A bad value is one line (InputError)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from overseer.cli import _io
from overseer.cli import _options as o
from overseer.cli._app import InputError, csv_list
from overseer.cli._names import PRESETS
from overseer.cli._options import option_group

if TYPE_CHECKING:
    from overseer.runtime import TeamSpec


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


def _team(spec: Path | None, team: str, agents: int, rounds: int, seed: int, task: Any) -> TeamSpec:
    """The TeamSpec file, or the preset with roles for the task's kind."""
    from overseer.runtime import TeamSpec, make_team

    if spec is not None:
        try:
            return TeamSpec.load(spec)
        except _io.READ_ERRORS as exc:
            raise _io.unreadable(f"--spec {spec}", exc) from None
    pool = {"numeric": "math", "code": "code"}.get(task.kind, "reasoning") if task else "reasoning"
    try:
        return make_team(team, agents, rounds=rounds, pool=pool, seed=seed)
    except ValueError as exc:
        raise InputError(f"--team/--agents/--rounds: {_io.one_line(exc)}") from None


@dataclass(frozen=True)
class Plugins:
    """What `BusOpts.plugins` puts on the bus: the factories, what each is (for the printed
    result), and the top-k logprobs their agents must ask for."""

    factories: list[Any]
    names: list[str]
    top_logprobs: int


@dataclass(frozen=True)
class BusOpts:
    """What `overseer run` puts on the bus and in the agents' hands: the plug-ins that the names
    of `overseer bench` give (`--rules` is `supervise:rules`, `--supervise` is `supervise:llm`,
    both together `supervise:rules+llm`; `--monitor FILE` is `monitor:FILE`), built from the
    product's packages, not the bench's registry (a product command never loads the lab;
    tests/cli/test_run_plugins.py checks both give the same plug-ins)."""

    supervise: bool = False
    rules: bool = False
    supervisor_model: str | None = None
    filter_preset: str | None = None
    monitor: Path | None = None
    tools: str | None = None

    @property
    def mode(self) -> str | None:
        """The SupervisorAgent's mode these flags ask for (None: no SupervisorAgent)."""
        if self.rules:
            return "rules+llm" if self.supervise else "rules"
        return "llm" if self.supervise else None

    def plugins(self, mopts: o.ModelOpts) -> Plugins:
        """The plug-ins asked for; a bad flag, file or preset is one line (InputError) before
        the run's model loads."""
        if not self.supervise and self.supervisor_model:
            raise InputError("--supervisor-model: the LLM supervisor's model; needs --supervise")
        if self.mode is None and self.filter_preset:
            raise InputError("--filter-preset: needs --supervise or --rules")
        from overseer.cli._run_plugins import monitor_plugin, supervise_plugin

        made = []
        if self.mode is not None:
            sup = mopts.load(self.supervisor_model) if self.supervisor_model else None
            fp = self.filter_preset
            made.append(_plugin(supervise_plugin, "--filter-preset", self.mode, sup, fp))
        if self.monitor is not None:
            made.append(_plugin(monitor_plugin, "--monitor", self.monitor))
        top = max((t for _, _, t in made), default=0)
        return Plugins([f for f, _, _ in made], [w for _, w, _ in made], top)


def _plugin(make: Any, option: str, *args: Any) -> tuple[Any, str, int]:
    try:
        return make(*args)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


def with_tools(team: TeamSpec, tools: dict[str, Any]) -> TeamSpec:
    """Every agent of the team also holds the named tools."""
    if not tools:
        return team
    both = set(tools)
    agents = tuple(
        a.model_copy(update={"tools": tuple(sorted(set(a.tools) | both))}) for a in team.agents
    )
    return team.model_copy(update={"agents": agents})


def tools_of(names: str | None) -> dict[str, Any]:
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
    "supervise": Annotated[
        bool, typer.Option(help="Put the SupervisorAgent's LLM supervisor on the bus.")
    ],
    "rules": Annotated[
        bool,
        typer.Option(
            help="Put the rule tier on the bus (loop breaker, masking, purification, budgets; "
            "no LLM). With --supervise: rules first, the LLM on the rest."
        ),
    ],
    "supervisor_model": Annotated[
        str | None, typer.Option(help="Model of the supervisor (default: the agents' model).")
    ],
    "filter_preset": Annotated[
        str | None, typer.Option(help="Filter thresholds: gaia, humaneval, mbpp, aime, ...")
    ],
    "monitor": Annotated[
        Path | None,
        typer.Option(help="Trained monitor file (`overseer monitor train`): rollback on the bus."),
    ],
    "tools": Annotated[str | None, typer.Option(help="Tools for every agent: python.")],
}
shape_options = option_group("shape", ShapeOpts, _SHAPE_TYPES, (), tuple(_SHAPE_TYPES))
bus_options = option_group("bus", BusOpts, _BUS_TYPES, (), tuple(_BUS_TYPES))
DEFAULT_SHAPE, NO_PLUGINS = ShapeOpts(), BusOpts()
