"""Experiment runner: configurations x tasks x seeds -> SQLite result store -> summary table.

Exported is what a user needs to run an experiment (`run_experiment`, `RunSummary`), store and
report it (`ResultStore`, `ResultRecord`, `summarize`, `summary_table`; an unusable store is an
`overseer.errors.PathError`), describe a configuration
(`Solver`, `SolverConfig`, `SolverOutput`, `TeamConfig`, `ConfigRegistry`,
`direct_solver`, `team_solver`) and run a team on the Executor (`run_team`, `ExecutorSettings`).
Where episodes run (asyncio or Ray) is `overseer.bench.backends`; the parts solvers are made of
are in `overseer.bench.solvers`, the parts of reports in `overseer.bench.reports`. The one
registry naming every configuration is `overseer.experiments.registry`.
"""

from overseer.bench._factory import ExecutorSettings, run_team
from overseer.bench._report import summarize, summary_table
from overseer.bench._runner import RunSummary, run_experiment
from overseer.bench._solvers import (
    ConfigRegistry,
    Solver,
    SolverConfig,
    SolverOutput,
    TeamConfig,
    direct_solver,
)
from overseer.bench._store import ResultRecord, ResultStore
from overseer.bench._teams import team_solver

__all__ = [
    "ConfigRegistry",
    "ExecutorSettings",
    "ResultRecord",
    "ResultStore",
    "RunSummary",
    "Solver",
    "SolverConfig",
    "SolverOutput",
    "TeamConfig",
    "direct_solver",
    "run_experiment",
    "run_team",
    "summarize",
    "summary_table",
    "team_solver",
]
