"""The explicit registry of plug-in configurations and suites: the one place (besides the CLI)
that knows every plug-in, so the plug-ins stay independent of each other.

`bench_configs` builds the registry `overseer bench --configs` resolves names in: the direct
baseline, one team per preset, the SupervisorAgent's workload configurations, MASFly and its
variants, suite-specific teams, and `NAME+monitor:FILE` (team NAME with the trained
rogue-agent monitor of FILE on its bus). `suite_report` gives a suite's extra table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from overseer.bench import ConfigRegistry, default_configs
from overseer.bench._solvers import PluginFactory
from overseer.bench._teams import team_configs
from overseer.models import Model
from overseer.runtime import PRESETS, Supervisor

#: Top-k logprobs the agents ask for when the monitor is on the bus (the monitor's features).
MONITOR_TOP_LOGPROBS = 10

SuiteReport = Callable[[Any, Iterable[Any], Sequence[str]], None]


def monitor_plugin(path: str | Path, *, cap: int = 1) -> PluginFactory:
    """An UncertaintyMonitor (trained monitors of FILE, rollback) for each run; the file is
    read now, so a bad FILE fails before any run (ValueError naming it). A team agent's role
    has no monitor of its own: it is judged by the file's first role (the accuser's for a
    WhoDunitEnv file), the role that decides the game."""
    from overseer.monitor import MonitorSet, UncertaintyMonitor

    ms = MonitorSet.load(path)
    if not ms.monitors:
        raise ValueError(f"monitor file {path}: holds no trained monitor")
    first = next(iter(ms.monitors))

    def plugins(model: Model) -> list[Supervisor]:
        return [UncertaintyMonitor(ms, cap=cap, fallback_role=first)]

    return plugins


def _monitor_maker(arg: str) -> tuple[PluginFactory, str, int]:
    if not arg:
        raise ValueError("monitor: expected a monitor file, as in NAME+monitor:FILE")
    return monitor_plugin(arg), f"rogue-agent monitor {arg}", MONITOR_TOP_LOGPROBS


def _travel_teams(reg: ConfigRegistry, agents: int, rounds: int) -> None:
    """On travel the preset teams hold the environment's tools (replacing the tool-less ones)."""
    presets = [p for p in PRESETS if p != "debate" or rounds >= 2]
    for c in team_configs(agents, rounds, presets=presets, environment=True):
        reg.replace(c)


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
) -> ConfigRegistry:
    """Every configuration `overseer bench` can name, for teams of `agents` and `rounds` (MASFly
    reads its repository from `adapt_store`, default results/adapt.sqlite)."""
    from overseer.adapt.bench import masfly_configs
    from overseer.supervise.configs import supervise_configs

    reg = default_configs(agents=agents, rounds=rounds)
    masfly = masfly_configs(adapt_store) if adapt_store is not None else masfly_configs()
    for c in [*supervise_configs(), *masfly]:
        reg.add(c)
    if suite in SUITE_CONFIGS:
        SUITE_CONFIGS[suite](reg, agents, rounds)
    reg.add_plugin("monitor", _monitor_maker)
    return reg


def suite_report(suite: str) -> SuiteReport | None:
    """The extra table a suite prints after the summary (travel: success, delivery, micro)."""
    if suite == "travel":
        from overseer.adapt.bench import travel_report

        return travel_report
    return None
