"""Per-step features overseer computes without a model: position, length, speaker, repeats,
error words, the rule tier's firings, overlap with the question (and with the correct answer,
when the judge may see it). One row per step; the learned scorer ranks the rows of a log."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from overseer.supervise.rules import RuleSettings
from overseer.traces._render import approx_tokens
from overseer.traces._types import TraceStep, Trajectory
from overseer.traces.replay import StepReplay, replay

ERROR_WORDS = re.compile(
    r"\b(error|exception|traceback|failed|failure|unable|cannot|can't|not found|sorry|invalid|"
    r"incorrect|wrong|no results?|does not|doesn't|couldn't|could not|unfortunately)\b",
    re.IGNORECASE,
)
WORD = re.compile(r"[a-z0-9]+")
#: the columns of a feature row, group by group: where the step stands, who speaks, what the
#: step says, and which of the log's landmarks (the end, the first error, the answer) it is
POSITION = ("rel_pos", "abs_pos", "n_steps")
SPEAKER = (
    "first_of_agent",
    "agent_turn",
    "agent_share",
    "is_observation",
    "is_human",
    "addresses_other",
)
CONTENT = (
    "length",
    "repeat",
    "loop_fired",
    "purify_fired",
    "errors",
    "errors_next",
    "exit_fail_next",
    "has_code",
    "question_overlap",
    "numbers",
    "final_words",
)
LANDMARKS = (
    "is_last",
    "is_second_last",
    "first_error_step",
    "first_actor_step",
    "truth_here",
    "truth_before",
)
FEATURES = POSITION + SPEAKER + CONTENT + LANDMARKS


class _ApproxCount:
    name = "approx"

    def count(self, text: str) -> int:
        return approx_tokens(text)


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _exit_fail(text: str) -> bool:
    t = text.lstrip()
    return t.startswith("exitcode:") and not t.startswith("exitcode: 0")


def _speaker(step: TraceStep, turn: dict[str, int], counts: Counter[str], n: int) -> list[float]:
    """The `SPEAKER` columns: whether and how often `step.agent` spoke before, and how."""
    return [
        float(step.agent not in turn),
        math.log1p(turn.get(step.agent, 0)),
        counts[step.agent] / n,
        float(step.is_observation),
        float(step.agent == "human"),
        float(bool(step.to)),
    ]


def _content(text: str, nxt: str, replayed: StepReplay, question: set[str]) -> list[float]:
    """The `CONTENT` columns of a step saying `text`, followed by a step saying `nxt`."""
    return [
        math.log1p(len(text)),
        float(replayed.repeat),
        float("loop_breaker" in replayed.firings),
        float("purification" in replayed.firings),
        math.log1p(len(ERROR_WORDS.findall(text))),
        math.log1p(len(ERROR_WORDS.findall(nxt))),
        float(_exit_fail(nxt)),
        float("```" in text),
        len(question & _words(text)) / max(1, len(question)),
        math.log1p(len(re.findall(r"\d+", text))),
        float(bool(re.search(r"final answer|terminate", text, re.IGNORECASE))),
    ]


def step_features(traj: Trajectory, *, with_truth: bool = False) -> np.ndarray:
    """The feature rows of `traj` (one per step, columns as `FEATURES`)."""
    n = len(traj.steps)
    rep = replay(traj, _ApproxCount(), RuleSettings())
    q = _words(traj.question)
    truth = _norm(traj.ground_truth or "") if with_truth else ""
    counts = Counter(s.agent for s in traj.steps)
    turn: dict[str, int] = {}
    rows, seen_error, seen_actor, truth_seen = [], False, False, False
    for i, s in enumerate(traj.steps):
        nxt = traj.steps[i + 1].text if i + 1 < n else ""
        has_error = bool(ERROR_WORDS.search(s.text))
        actor = s.agent != "human" and not s.is_observation
        here = bool(truth) and truth in _norm(s.text)
        position = [i / max(1, n - 1), math.log1p(i), math.log1p(n)]
        landmarks = [i == n - 1, i == n - 2, has_error and not seen_error]
        landmarks += [actor and not seen_actor, here, truth_seen]
        speaker = _speaker(s, turn, counts, n)
        content = _content(s.text, nxt, rep.steps[i], q)
        rows.append([*position, *speaker, *content, *map(float, landmarks)])
        turn[s.agent] = turn.get(s.agent, 0) + 1
        seen_error, seen_actor = seen_error or has_error, seen_actor or actor
        truth_seen = truth_seen or here
    return np.asarray(rows, dtype=float).reshape(n, len(FEATURES))
