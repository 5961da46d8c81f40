"""Per-step features overseer computes without a model: position, length, speaker, repeats,
error words, the rule tier's firings, overlap with the question (and with the correct answer,
when the judge may see it). One row per step; the learned scorer ranks the rows of a log."""

from __future__ import annotations

import math
import re

import numpy as np

from overseer.supervise.rules import RuleSettings
from overseer.traces._render import approx_tokens
from overseer.traces._types import Trajectory
from overseer.traces.replay import replay

ERROR_WORDS = re.compile(
    r"\b(error|exception|traceback|failed|failure|unable|cannot|can't|not found|sorry|invalid|"
    r"incorrect|wrong|no results?|does not|doesn't|couldn't|could not|unfortunately)\b",
    re.IGNORECASE,
)
WORD = re.compile(r"[a-z0-9]+")
FEATURES = (
    "rel_pos", "abs_pos", "n_steps", "first_of_agent", "agent_turn", "agent_share",
    "is_observation", "is_human", "addresses_other", "length", "repeat", "loop_fired",
    "purify_fired", "errors", "errors_next", "exit_fail_next", "has_code", "question_overlap",
    "numbers", "final_words", "is_last", "is_second_last", "first_error_step",
    "first_actor_step", "truth_here", "truth_before",
)  # fmt: skip


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


def step_features(traj: Trajectory, *, with_truth: bool = False) -> np.ndarray:
    """The feature rows of `traj` (one per step, columns as `FEATURES`)."""
    n = len(traj.steps)
    rep = replay(traj, _ApproxCount(), RuleSettings())
    q = _words(traj.question)
    truth = _norm(traj.ground_truth or "") if with_truth else ""
    counts: dict[str, int] = {}
    for s in traj.steps:
        counts[s.agent] = counts.get(s.agent, 0) + 1
    turn: dict[str, int] = {}
    rows, seen_error, seen_actor, truth_seen = [], False, False, False
    for i, s in enumerate(traj.steps):
        text, nxt = s.text, traj.steps[i + 1].text if i + 1 < n else ""
        errors = len(ERROR_WORDS.findall(text))
        actor = s.agent != "human" and not s.is_observation
        here = bool(truth) and truth in _norm(text)
        r = rep.steps[i]
        rows.append([
            i / max(1, n - 1), math.log1p(i), math.log1p(n), float(s.agent not in turn),
            math.log1p(turn.get(s.agent, 0)), counts[s.agent] / n, float(s.is_observation),
            float(s.agent == "human"), float(bool(s.to)), math.log1p(len(text)), float(r.repeat),
            float("loop_breaker" in r.firings), float("purification" in r.firings),
            math.log1p(errors), math.log1p(len(ERROR_WORDS.findall(nxt))), float(_exit_fail(nxt)),
            float("```" in text), len(q & _words(text)) / max(1, len(q)),
            math.log1p(len(re.findall(r"\d+", text))),
            float(bool(re.search(r"final answer|terminate", text, re.IGNORECASE))),
            float(i == n - 1), float(i == n - 2), float(errors > 0 and not seen_error),
            float(actor and not seen_actor), float(here), float(truth_seen),
        ])  # fmt: skip
        turn[s.agent] = turn.get(s.agent, 0) + 1
        seen_error = seen_error or errors > 0
        seen_actor = seen_actor or actor
        truth_seen = truth_seen or here
    return np.asarray(rows, dtype=float).reshape(n, len(FEATURES))
