"""Experiment runner: configurations x tasks x seeds -> SQLite result store -> summary table."""

from overseer.bench._report import SummaryRow, summarize, summary_table
from overseer.bench._runner import RunSummary, run_experiment
from overseer.bench._solvers import (
    DIRECT,
    ConfigRegistry,
    Solver,
    SolverConfig,
    SolverOutput,
    default_configs,
    direct_solver,
    task_instructions,
    task_messages,
)
from overseer.bench._store import ResultKey, ResultRecord, ResultStore
from overseer.bench._teams import team_configs, team_query, team_solver

__all__ = [
    "DIRECT",
    "ConfigRegistry",
    "ResultKey",
    "ResultRecord",
    "ResultStore",
    "RunSummary",
    "Solver",
    "SolverConfig",
    "SolverOutput",
    "SummaryRow",
    "default_configs",
    "direct_solver",
    "run_experiment",
    "summarize",
    "summary_table",
    "task_instructions",
    "task_messages",
    "team_configs",
    "team_query",
    "team_solver",
]
