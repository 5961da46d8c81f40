"""The one registry of configurations and plug-ins: the one place that knows every plug-in, so
the plug-ins stay independent of each other (`overseer.bench.ConfigRegistry` is only the
mechanism: names, composition, resolution).

`bench_configs` builds the registry `overseer bench --configs` resolves names in: the direct
baseline, one team per preset, the SupervisorAgent's workload configurations, MASFly and its
variants, suite-specific teams, the team source `pruned:SPEC`, and the bus plug-ins names
compose onto a source (`overseer.bench._compose` has the grammar): `supervise:MODE`,
`monitor:FILE` (the trained rogue-agent monitor of FILE) and `watcher` (MASFly's Watcher,
watching each run against the OP of its own team). `plugin(KIND, ARG)` gives one of those
plug-ins alone (what `overseer run --supervise/--monitor` puts on its bus). `suite_report`
gives a suite's extra table.

AgentPrune's round-end `DialoguePruner` is not a plug-in here: it needs the team before the
run and replaces it every round, so pruning composes as its result, the `pruned:SPEC` source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from overseer.bench import ConfigRegistry, Solver, TeamConfig, team_solver
from overseer.bench.solvers import DIRECT, PluginFactory, team_configs
from overseer.models import Model
from overseer.monitor import MONITOR_TOP_LOGPROBS, monitor_plugin
from overseer.runtime import (
    PRESETS,
    BaseSupervisor,
    Interaction,
    Run,
    RunResult,
    Supervisor,
    TeamSpec,
    Verdict,
)

SuiteReport = Callable[[Any, Iterable[Any], Sequence[str]], None]


def _monitor_maker(arg: str) -> tuple[PluginFactory, str, int]:
    if not arg:
        raise ValueError("monitor: expected a monitor file, as in NAME+monitor:FILE")
    return monitor_plugin(arg), f"rogue-agent monitor {arg}", MONITOR_TOP_LOGPROBS


def _supervise_maker(
    arg: str, supervisor_model: Model | None = None, filter_preset: str | None = None
) -> tuple[PluginFactory, str, int]:
    from overseer.experiments.supervise import supervise_plugin
    from overseer.supervise.modes import SUPERVISE_MODES

    if not arg:
        raise ValueError(
            "supervise: expected a mode, as in NAME+supervise:MODE; known: "
            + ", ".join(SUPERVISE_MODES)
        )
    made = supervise_plugin(arg, supervisor_model=supervisor_model, filter_preset=filter_preset)
    return made, f"supervision ({arg})", 0


class _TeamWatcher(BaseSupervisor):
    """MASFly's Watcher on any team: each run is watched against the OP of its own team
    (`team_to_sop`), with no experiences; its calls are booked as kind "watcher"."""

    name = "watcher"

    def __init__(self, seed: int | None = 0) -> None:
        from overseer.adapt.watcher import Watcher

        self.watcher = Watcher(seed=seed)
        self.kinds = self.watcher.kinds
        self.actions = self.watcher.actions

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        from overseer.adapt.sop import team_to_sop

        if not self.watcher.watching(run):
            self.watcher.watch(run, team_to_sop(run.team))
        return await self.watcher.on_interaction(interaction, run)

    async def on_run_end(self, run: Run, result: RunResult) -> None:
        await self.watcher.on_run_end(run, result)


def _watcher_maker(arg: str) -> tuple[PluginFactory, str, int]:
    if arg:
        raise ValueError(f"watcher: takes no argument, got {arg!r} (write NAME+watcher)")

    def plugins(model: Model) -> list[Supervisor]:
        return [_TeamWatcher()]

    return plugins, "MASFly's Watcher (OP of the team)", 0


def pruned_source(arg: str) -> TeamConfig:
    """The team source `pruned:SPEC`: the TeamSpec file SPEC (as `overseer prune` writes it)
    on every task; a missing or invalid file fails now, naming it."""
    if not arg:
        raise ValueError("pruned: expected a team spec file, as in pruned:SPEC")
    spec = TeamSpec.load(arg)

    def make(model: Model, plugins: PluginFactory | None, top_logprobs: int) -> Solver:
        return team_solver(
            model, spec=spec, name="pruned", supervisors=plugins, top_logprobs=top_logprobs
        )

    what = f"pruned team {spec.name} from {arg} ({len(spec.spatial_edges)} spatial edges)"
    return TeamConfig.of(f"pruned:{arg}", what, make)


def _travel_teams(reg: ConfigRegistry, agents: int, rounds: int) -> None:
    """On travel the preset teams hold the environment's tools (replacing the tool-less ones)."""
    presets = [p for p in PRESETS if p != "debate" or rounds >= 2]
    for c in team_configs(agents, rounds, presets=presets, environment=True):
        reg.replace(c)


PluginMaker = Callable[[str], tuple[PluginFactory, str, int]]


def _plugin_makers(
    supervisor_model: Model | None = None, filter_preset: str | None = None
) -> dict[str, PluginMaker]:
    """The bus plug-ins by kind: ARG -> (factory, what it is, top-k logprobs agents ask for)."""
    supervise = partial(
        _supervise_maker, supervisor_model=supervisor_model, filter_preset=filter_preset
    )
    return {"supervise": supervise, "monitor": _monitor_maker, "watcher": _watcher_maker}


def plugin(
    kind: str,
    arg: str = "",
    *,
    supervisor_model: Model | None = None,
    filter_preset: str | None = None,
) -> tuple[PluginFactory, str, int]:
    """The bus plug-in `KIND:ARG` of configuration names, alone: (factory, what it is, top-k
    logprobs its agents must ask for). A bad kind or ARG raises ValueError naming it."""
    makers = _plugin_makers(supervisor_model, filter_preset)
    if kind not in makers:
        raise ValueError(f"plug-in {kind!r} is unknown; expected one of: {', '.join(makers)}")
    return makers[kind](arg)


#: Suites whose configurations differ: suite -> function adjusting the registry.
SUITE_CONFIGS: dict[str, Callable[[ConfigRegistry, int, int], None]] = {
    "travel": _travel_teams,
}


def bench_configs(
    *,
    agents: int = 3,
    rounds: int = 2,
    suite: str | None = None,
    adapt_store: str | Path | None = None,
    supervisor_model: Model | None = None,
) -> ConfigRegistry:
    """Every configuration `overseer bench` can name, for teams of `agents` and `rounds` (MASFly
    reads its repository from `adapt_store`, default results/adapt.sqlite; the supervision
    configurations use `supervisor_model`, when given, as the supervisor's own model)."""
    from overseer.experiments.adapt import masfly_configs
    from overseer.experiments.supervise import supervise_configs

    reg = ConfigRegistry([DIRECT, *team_configs(agents, rounds)])
    masfly = masfly_configs(adapt_store) if adapt_store is not None else masfly_configs()
    for c in [*supervise_configs(supervisor_model=supervisor_model), *masfly]:
        reg.add(c)
    if suite in SUITE_CONFIGS:
        SUITE_CONFIGS[suite](reg, agents, rounds)
    reg.add_source("pruned", pruned_source)
    for kind, maker in _plugin_makers(supervisor_model).items():
        reg.add_plugin(kind, maker)
    return reg


def suite_report(suite: str) -> SuiteReport | None:
    """The extra table a suite prints after the summary (travel: success, delivery, micro)."""
    if suite == "travel":
        from overseer.experiments.adapt import travel_report

        return travel_report
    return None
