"""What each AgentDojo user task needs: an answer, a change of the environment, both, or nothing.

The kinds are recorded in a table (so loading a suite runs no check) and `classify` derives
them from the tasks' own checks, which the tests compare with the table:

- "answer": the right answer (the task's GROUND_TRUTH_OUTPUT) passes on the untouched
  environment, an empty one does not;
- "action": the environment must change (the ground-truth calls), the answer is not read;
- "both": the environment must change and the answer is read;
- "trivial": an empty answer on the untouched environment already passes (AgentDojo's banking
  tasks 5, 8, 9 and 10: their checks hold on the default data or only ask for no change).

The table was derived with deepdiff 8.4.2, with which every ground truth passes; deepdiff
8.5 and later no longer compare pydantic computed fields, so the workspace check
`check_added_to_file` (a file's `size`) fails for the right run (tasks 13, 19, 29, 34).
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any, Literal

from overseer.tasks.agentdojo._shim import drive

DojoKind = Literal["answer", "action", "both", "trivial"]

#: tasks whose check needs a deepdiff that compares pydantic computed fields (deepdiff < 8.5)
DEEPDIFF_SENSITIVE = {"workspace": (13, 19, 29, 34), "travel": (), "banking": (), "slack": ()}

_ANSWER = {
    "workspace": (0, 1, 2, 3, 5, 10, 11, 14, 16, 17, 22, 23, 26, 27, 28, 30, 39),
    "travel": (2, 5, 6, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19),
    "banking": (1, 7),
    "slack": (),
}
_BOTH = {"workspace": (4, 19, 36, 37, 38), "travel": (1, 3, 4, 7, 8), "banking": (), "slack": ()}
_TRIVIAL = {"workspace": (), "travel": (), "banking": (5, 8, 9, 10), "slack": ()}


def recorded_kind(suite: str, number: int) -> DojoKind:
    """The recorded kind of user task `number` of `suite` (see the module's docstring)."""
    if number in _ANSWER[suite]:
        return "answer"
    if number in _BOTH[suite]:
        return "both"
    if number in _TRIVIAL[suite]:
        return "trivial"
    return "action"


def classify(user_task: Any, pre: Any, run: Any) -> DojoKind:
    """The kind from the task's own checks: `pre` is the default environment, `run` a fresh
    `DojoTools` on which the ground-truth calls are made when the answer alone does not pass."""

    def passes(text: str, post: Any, traces: list[Any]) -> bool:
        return bool(drive(user_task.utility(text, copy.deepcopy(pre), post, traces)))

    if passes("", copy.deepcopy(pre), []):
        return "trivial"
    if passes(user_task.GROUND_TRUTH_OUTPUT, copy.deepcopy(pre), []):
        return "answer"
    for call in user_task.ground_truth(copy.deepcopy(pre)):
        run.call(call.function, dict(call.arguments))
    return "action" if passes("", run.post_environment(), list(run.calls)) else "both"


@cache
def deepdiff_compares_computed_fields() -> bool:
    """Whether the installed deepdiff reports a changed pydantic computed field (as the
    workspace checks expect; deepdiff 8.5 and later do not)."""
    from deepdiff import DeepDiff
    from pydantic import BaseModel, computed_field

    class _Text(BaseModel):
        text: str

        @computed_field  # type: ignore[prop-decorator]
        @property
        def size(self) -> int:
            return len(self.text)

    diff = DeepDiff(_Text(text="a"), _Text(text="ab"))
    return "root.size" in diff.get("values_changed", {})
