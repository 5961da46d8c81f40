"""Packaged benchmark suites: loaders with verified counts, seeded splits, and scorers."""

from overseer.tasks._browse import (
    BrowseEnvironment,
    BrowserSession,
    Page,
    browser_tools,
    build_corpus,
)
from overseer.tasks._env import TaskEnvironment, open_environment
from overseer.tasks._loaders import (
    LOADERS,
    MMLU_SAMPLE_PER_SUBJECT,
    TaskDataError,
    data_file,
    load_wordproblems,
    mc_prompt,
)
from overseer.tasks._score import (
    ascore,
    ascore_code,
    code_program,
    extract_code,
    extract_letter,
    extract_number,
    score,
    score_code,
    score_mc,
    score_numeric,
)
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
    "LOADERS",
    "MMLU_SAMPLE_PER_SUBJECT",
    "SUITE_NAMES",
    "BrowseEnvironment",
    "BrowserSession",
    "Page",
    "Score",
    "Task",
    "TaskDataError",
    "TaskEnvironment",
    "TaskKind",
    "UnknownSuiteError",
    "ascore",
    "ascore_code",
    "browser_tools",
    "build_corpus",
    "code_program",
    "data_file",
    "extract_code",
    "extract_letter",
    "extract_number",
    "load_suite",
    "load_wordproblems",
    "mc_prompt",
    "open_environment",
    "score",
    "score_code",
    "score_mc",
    "score_numeric",
    "split_tasks",
]
