"""Bench configurations of the SupervisorAgent: workload teams without and with it, the
seed's three ablations (each a team configuration, so other plug-ins compose with it), and
`supervise_plugin`, the plug-in `SOURCE+supervise:MODE` puts on any team's bus."""

from __future__ import annotations

from overseer.bench import Solver, TeamConfig
from overseer.bench._solvers import BusPlugin, PluginFactory
from overseer.bench._workloads import workload_solver
from overseer.models import Model
from overseer.runtime import Supervisor
from overseer.supervise._core import SupervisorSettings
from overseer.supervise._supervisor import SupervisorAgent, tool_verifier
from overseer.supervise.filters import preset

ABLATIONS: tuple[tuple[str, tuple[str, ...] | None, str], ...] = (
    ("baseline", None, "workload team (web tools / python tool), no supervision"),
    ("supervised", (), "workload team + SupervisorAgent"),
    ("supervised-no-correction", ("correction",), "SupervisorAgent without correction"),
    ("supervised-no-guidance", ("guidance",), "SupervisorAgent without guidance"),
    ("supervised-no-purification", ("purification",), "SupervisorAgent without purification"),
)


def _config(
    name: str, without: tuple[str, ...] | None, what: str, filter_preset: str | None
) -> TeamConfig:
    supervised = without is not None

    def make(model: Model, plugins: PluginFactory | None, top_logprobs: int) -> Solver:
        return workload_solver(
            model,
            supervisors=plugins,
            verifier=tool_verifier if supervised else None,
            name=name,
            top_logprobs=top_logprobs,
        )

    if not supervised:
        return TeamConfig.of(name, what, make)
    extra = {"filter": preset(filter_preset)} if filter_preset else {}
    settings = SupervisorSettings.ablation(without or (), **extra)

    def agent(model: Model) -> list[Supervisor]:
        return [SupervisorAgent(settings=settings)]

    return TeamConfig.of(name, what, make, (agent,), kinds=("supervise",))


def supervise_configs(filter_preset: str | None = None) -> list[TeamConfig]:
    """`baseline`, `supervised` and its ablations, with filter thresholds of a preset."""
    return [_config(n, w, what, filter_preset) for n, w, what in ABLATIONS]


#: The modes `supervise_plugin` knows, in the order error messages list them.
SUPERVISE_MODES: tuple[str, ...] = ("llm",)


def supervise_plugin(mode: str, *, filter_preset: str | None = None) -> PluginFactory:
    """The supervision plug-in of `mode` for `SOURCE+supervise:MODE`.

    `llm`: the seed's SupervisorAgent (LLM-free filter, then the LLM decision), with the tool
    verifier on teams that hold tools (else the bus's plain verifier call). An unknown mode
    is a ValueError listing the known ones.
    """
    if mode == "llm":
        extra = {"filter": preset(filter_preset)} if filter_preset else {}
        settings = SupervisorSettings.ablation((), **extra)

        def agent(model: Model) -> list[Supervisor]:
            return [SupervisorAgent(settings=settings)]

        return BusPlugin(agent, verifier=tool_verifier)
    raise ValueError(
        f"supervise: unknown mode {mode!r}; expected one of: {', '.join(SUPERVISE_MODES)}"
    )
