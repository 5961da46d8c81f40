"""AgentDojo's user tasks (workspace, travel, banking, slack) from inspect-evals 0.26.0.

A `DojoTask` holds the user task's prompt; `tools()` opens a fresh run (a deep copy of the
suite's default environment, injection placeholders filled with their default texts, as
inspect-evals' benign setup does) and `score(answer, tools)` is the task's own utility check
with pre = the default environment and post = the run's environment after its calls.

`kind` says what a task needs ("answer", "action", "both" or "trivial"; see `_kinds`), so a
benchmark can pick answer-only or state-changing tasks.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from overseer.tasks.agentdojo._kinds import (
    DEEPDIFF_SENSITIVE,
    DojoKind,
    classify,
    deepdiff_compares_computed_fields,
    recorded_kind,
)
from overseer.tasks.agentdojo._shim import DojoDataError, ToolCall, drive, load_suite
from overseer.tasks.agentdojo._tools import DojoTools

SUITES = ("workspace", "travel", "banking", "slack")
#: user tasks per suite in inspect-evals 0.26.0 (the loader fails loudly on any other count)
EXPECTED_TASKS = {"workspace": 40, "travel": 20, "banking": 16, "slack": 20}


@cache
def _default_environment(suite: str) -> Any:
    """The suite's default environment; never handed out, only deep-copied."""
    return load_suite(suite).load_and_inject_default_environment({})


@dataclass(frozen=True)
class DojoTask:
    """One AgentDojo user task: id `agentdojo/<suite>/<n>`, its prompt and its checks."""

    id: str
    suite: str
    number: int
    prompt: str
    #: the part of the answer the suite's ground-truth run returns ("" for many tasks)
    ground_truth_output: str
    difficulty: str
    kind: DojoKind
    _user_task: Any = field(repr=False, compare=False)

    def tools(self) -> DojoTools:
        """A fresh run: the suite's tools on a deep copy of its default environment."""
        env = self._user_task.init_environment(copy.deepcopy(_default_environment(self.suite)))
        return DojoTools(self.suite, env, tuple(load_suite(self.suite).tools))

    def score(self, answer: str | None, tools: DojoTools) -> bool:
        """The task's utility check on `answer` and the run's environment after its calls.

        A check that raises on an environment the agent left in an odd state counts as failed.
        """
        pre = copy.deepcopy(_default_environment(self.suite))
        post = tools.post_environment()
        try:
            return bool(drive(self._user_task.utility(answer or "", pre, post, list(tools.calls))))
        except Exception:  # the agent's environment broke the check: not a success
            return False

    @property
    def reads_answer(self) -> bool:
        """Whether the task's check reads the final answer (kinds "answer" and "both")."""
        return self.kind in ("answer", "both")

    def classify(self) -> DojoKind:
        """The kind derived now from the task's own checks (slow on workspace: its checks diff
        the whole environment); the tests compare it with the recorded `kind`."""
        return classify(self._user_task, _default_environment(self.suite), self.tools())

    def ground_truth(self) -> list[tuple[str, dict[str, Any]]]:
        """The task's ground-truth calls as (tool name, arguments), on the default environment."""
        pre = copy.deepcopy(_default_environment(self.suite))
        calls: list[ToolCall] = self._user_task.ground_truth(pre)
        return [(c.function, dict(c.arguments)) for c in calls]


@cache
def _suite_tasks(suite: str) -> tuple[DojoTask, ...]:
    """Every user task of `suite` in task-number order, the count checked."""
    if suite not in SUITES:
        raise DojoDataError(f"AgentDojo suite: expected one of {', '.join(SUITES)}, got {suite!r}")
    user_tasks = load_suite(suite).user_tasks
    if len(user_tasks) != EXPECTED_TASKS[suite]:
        raise DojoDataError(
            f"AgentDojo {suite} suite: expected {EXPECTED_TASKS[suite]} user tasks, "
            f"found {len(user_tasks)}"
        )
    if DEEPDIFF_SENSITIVE[suite] and not deepdiff_compares_computed_fields():
        warnings.warn(
            f"AgentDojo {suite} suite: the installed deepdiff does not compare pydantic computed "
            f"fields, so user tasks {list(DEEPDIFF_SENSITIVE[suite])} fail even when solved; "
            "install deepdiff<8.5",
            stacklevel=3,
        )
    return tuple(
        DojoTask(
            id=f"agentdojo/{suite}/user_task_{n}",
            suite=suite,
            number=n,
            prompt=ut.PROMPT,
            ground_truth_output=ut.GROUND_TRUTH_OUTPUT,
            difficulty=ut.DIFFICULTY.name.lower(),
            kind=recorded_kind(suite, n),
            _user_task=ut,
        )
        for n, ut in sorted(user_tasks.items())
    )


def load_dojo(suite: str, n: int | None = None) -> tuple[DojoTask, ...]:
    """The user tasks of `suite` in a stable order (by task number); the first `n` if given."""
    tasks = _suite_tasks(suite)
    if n is None:
        return tasks
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"load_dojo: expected n a positive integer or None, got {n!r}")
    return tasks[:n]
