"""The parts solvers are made of, for the layers that wire plug-ins into runs: a team's setup
and its Executor, plug-in factories (and the verifier they bring), the query a team is asked,
stable run ids, the workload teams, the preset team configurations and the direct baseline.

`overseer.bench` exports the configurations themselves (`SolverConfig`, `TeamConfig`,
`ConfigRegistry`) and `run_team`; the experiments build on these parts.
"""

from overseer.bench._factory import TeamSetup, make_executor, task_run_id
from overseer.bench._solvers import (
    DIRECT,
    BusPlugin,
    PluginFactory,
    plugin_verifier,
    team_query,
)
from overseer.bench._teams import team_configs
from overseer.bench._workloads import workload_solver

__all__ = [
    "DIRECT",
    "BusPlugin",
    "PluginFactory",
    "TeamSetup",
    "make_executor",
    "plugin_verifier",
    "task_run_id",
    "team_configs",
    "team_query",
    "workload_solver",
]
