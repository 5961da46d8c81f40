"""Packaged benchmark suites: loaders with verified counts, seeded splits, and scorers.

Exported is what a user needs to load a suite (`load_suite`, `SUITE_NAMES`, `split_tasks`,
`DEFAULT_FRACTIONS`, `UnknownSuiteError`, `TaskDataError`), hold a task (`Task`, `TaskKind`,
`Score`), score an answer (`score`, `ascore`), ask for a closed answer (`answer_schema`,
`closed_instructions`) and open the environment of a task that brings its
own tools (`TaskEnvironment`, `open_environment`). Loaders, extractors and per-kind scorers stay
in the private modules.
"""

from overseer.tasks._answer import answer_schema, closed_instructions
from overseer.tasks._env import TaskEnvironment, open_environment
from overseer.tasks._loaders import TaskDataError
from overseer.tasks._score import ascore, score
from overseer.tasks._split import (
    DEFAULT_FRACTIONS,
    SUITE_NAMES,
    UnknownSuiteError,
    load_suite,
    split_tasks,
)
from overseer.tasks._types import Score, Task, TaskKind

__all__ = [
    "DEFAULT_FRACTIONS",
    "SUITE_NAMES",
    "Score",
    "Task",
    "TaskDataError",
    "TaskEnvironment",
    "TaskKind",
    "UnknownSuiteError",
    "answer_schema",
    "ascore",
    "closed_instructions",
    "load_suite",
    "open_environment",
    "score",
    "split_tasks",
]
