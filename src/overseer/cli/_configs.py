"""Every configuration `overseer bench --configs` can name: baselines, teams and plug-ins.

The command line is the one place that knows every plug-in, so plug-ins stay independent.
"""

from __future__ import annotations

from overseer.bench import ConfigRegistry, SolverConfig, default_configs
from overseer.bench._workloads import workload_solver
from overseer.models import Model
from overseer.runtime import Supervisor


def supervise_configs(filter_preset: str | None = None) -> list[SolverConfig]:
    """Workload teams without and with the SupervisorAgent, and the seed's three ablations."""
    from overseer.supervise import SupervisorAgent, SupervisorSettings, preset, tool_verifier

    filt = preset(filter_preset) if filter_preset else None

    def settings(without: tuple[str, ...]) -> SupervisorSettings:
        return SupervisorSettings.ablation(without, **({"filter": filt} if filt else {}))

    def make(name: str, without: tuple[str, ...] | None, what: str) -> SolverConfig:
        def build(model: Model) -> object:
            sups = None
            if without is not None:
                s = settings(without)

                def sups(m: Model) -> list[Supervisor]:
                    return [SupervisorAgent(settings=s)]

            return workload_solver(
                model,
                supervisors=sups,
                verifier=(lambda tools: tool_verifier(tools)) if without is not None else None,
                name=name,
            )

        return SolverConfig(name, what, build)  # type: ignore[arg-type]

    return [
        make("baseline", None, "workload team (web tools / python tool), no supervision"),
        make("supervised", (), "workload team + SupervisorAgent"),
        make("supervised-no-correction", ("correction",), "SupervisorAgent without correction"),
        make("supervised-no-guidance", ("guidance",), "SupervisorAgent without guidance"),
        make(
            "supervised-no-purification", ("purification",), "SupervisorAgent without purification"
        ),
    ]


def all_configs(*, agents: int = 3, rounds: int = 2) -> ConfigRegistry:
    """The registry the CLI resolves names in."""
    reg = default_configs(agents=agents, rounds=rounds)
    for c in supervise_configs():
        reg.add(c)
    return reg
