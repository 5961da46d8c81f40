"""Experiment runner: configurations x tasks x seeds -> SQLite result store -> summary table."""

from overseer.bench._factory import (
    ExecutorSettings,
    TeamSetup,
    executor_solver,
    make_executor,
    run_team,
    task_run_id,
)
from overseer.bench._report import SummaryRow, summarize, summary_table
from overseer.bench._runner import RunSummary, run_experiment
from overseer.bench._solvers import (
    DIRECT,
    ConfigRegistry,
    PluginFactory,
    Solver,
    SolverConfig,
    SolverOutput,
    TeamConfig,
    default_configs,
    direct_solver,
    task_instructions,
    task_messages,
    team_query,
)
from overseer.bench._store import ResultKey, ResultRecord, ResultStore
from overseer.bench._teams import team_configs, team_solver
from overseer.bench._workloads import workload_solver, workload_team

__all__ = [
    "DIRECT",
    "ConfigRegistry",
    "ExecutorSettings",
    "PluginFactory",
    "ResultKey",
    "ResultRecord",
    "ResultStore",
    "RunSummary",
    "Solver",
    "SolverConfig",
    "SolverOutput",
    "SummaryRow",
    "TeamConfig",
    "TeamSetup",
    "default_configs",
    "direct_solver",
    "executor_solver",
    "make_executor",
    "run_experiment",
    "run_team",
    "summarize",
    "summary_table",
    "task_instructions",
    "task_messages",
    "task_run_id",
    "team_configs",
    "team_query",
    "team_solver",
    "workload_solver",
    "workload_team",
]
