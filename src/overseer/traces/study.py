"""How far the learned scorer's figures carry, LLM-free: its accuracy over many fold seeds (not
one), trivial one-line rules on the same logs with exact McNemar tests, and transfer across
systems (one Who&When split to the other) and across task sources (GAIA, AssistantBench)
within a split. What `benchmarks/attribution_tables.py --study` prints for the attribution page.
`judge_on_frozen` is how the next change to the scorer is judged: once, on a split frozen
before it (`--judge-frozen`).

Every figure is a pair of per-log outcomes (agent right, step right), so any two methods on the
same logs can be paired."""

from __future__ import annotations

import asyncio
import random
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from overseer.stats import mcnemar_exact
from overseer.traces._attr_types import Attribution
from overseer.traces._baselines import speakers
from overseer.traces._types import Trajectory
from overseer.traces.evaluate import cv_train
from overseer.traces.learned import LearnedScorer

#: per log id: (agent right, step right)
Outcomes = dict[str, tuple[bool, bool]]
#: a trivial rule: the log and the logs it may count over -> (agent, step)
Rule = Callable[[Trajectory, Sequence[Trajectory]], tuple[str | None, int | None]]

#: the seed of the frozen split: logs a next change to the scorer is judged on, once
FROZEN_SEED = 20261127
#: the share of each split frozen
FROZEN_SHARE = 0.3


class Scorer(Protocol):
    """What a scorer judged on the frozen split offers: fitted on logs, then asked per log."""

    def fit(self, train: list[Trajectory], *, with_truth: bool = False) -> None: ...

    async def attribute(self, traj: Trajectory, *, with_truth: bool = False) -> Attribution: ...


def _first_speaker(t: Trajectory, prior: Sequence[Trajectory]) -> tuple[str | None, int | None]:
    return (t.steps[0].agent, 0) if t.steps else (None, None)


def _last_speaker(t: Trajectory, prior: Sequence[Trajectory]) -> tuple[str | None, int | None]:
    """The speaker of the last step, observation steps included (a web page read is
    WebSurfer's step), and that step."""
    return (t.steps[-1].agent, t.steps[-1].index) if t.steps else (None, None)


def _most_frequent(t: Trajectory, prior: Sequence[Trajectory]) -> tuple[str | None, int | None]:
    """The agent most often to blame in `prior` (among this log's speakers) and `prior`'s most
    frequent decisive step (clipped to the log)."""
    agents = Counter(p.annotation.agent for p in prior if p.annotation is not None)
    steps = Counter(p.annotation.step for p in prior if p.annotation is not None)
    cands = speakers(t)
    agent = max(cands, key=lambda a: (agents.get(a, 0), -cands.index(a))) if cands else None
    step = min(steps.most_common(1)[0][0], len(t.steps) - 1) if steps and t.steps else None
    return agent, step


def _step_one(t: Trajectory, prior: Sequence[Trajectory]) -> tuple[str | None, int | None]:
    """Always step 1 (the first reply to the question), and its speaker."""
    k = min(1, len(t.steps) - 1)
    return (t.steps[k].agent, k) if t.steps else (None, None)


#: the trivial rules, by the name the page gives them
RULES: dict[str, Rule] = {
    "speaker of step 0": _first_speaker,
    "last speaker (observations included)": _last_speaker,
    "the split's most frequent agent and step": _most_frequent,
    "always step 1": _step_one,
}


def _ok(t: Trajectory, agent: str | None, step: int | None) -> tuple[bool, bool]:
    a = t.annotation
    if a is None:
        raise ValueError(f"log {t.id}: no annotation to score against")
    return agent is not None and agent == a.agent, step is not None and step == a.step


def rule_outcomes(rule: Rule, logs: Sequence[Trajectory], prior: Sequence[Trajectory]) -> Outcomes:
    """Each log's outcome under `rule`; `prior` is what a counting rule counts over (for the
    split's most frequent agent and step: the whole split, labels of the log itself included,
    which can only flatter the rule)."""
    return {t.id: _ok(t, *rule(t, prior)) for t in logs}


def scorer_outcomes(scorer: Scorer, logs: Sequence[Trajectory]) -> Outcomes:
    """Each log's outcome under a fitted scorer (no ground truth shown)."""
    out = {}
    for t in logs:
        a = asyncio.run(scorer.attribute(t, with_truth=False))
        out[t.id] = _ok(t, a.agent, a.step)
    return out


def cv_outcomes(
    scorer: LearnedScorer, logs: Sequence[Trajectory], seed: int, k: int = 5
) -> Outcomes:
    """The learned scorer cross-validated by log in `k` folds dealt with `seed`: every log is
    scored by a model fitted on the other folds. `scorer` keeps its feature cache across calls,
    so many seeds cost one feature extraction."""
    train = cv_train(logs, k, seed)
    out: Outcomes = {}
    fitted: int | None = None
    for t in logs:
        tr = train(t)
        if id(tr) != fitted:
            scorer.fit(tr)
            fitted = id(tr)
        out.update(scorer_outcomes(scorer, [t]))
    return out


@dataclass(frozen=True)
class Spread:
    """A level's accuracy (agent or step) over fold seeds: mean, lowest, highest, and each."""

    mean: float
    low: float
    high: float
    each: tuple[float, ...]


def spread(per_seed: Mapping[int, Outcomes], level: int) -> Spread:
    """Accuracy at `level` (0 agent, 1 step) of each seed's outcomes, summarised."""
    acc = tuple(sum(o[level] for o in out.values()) / len(out) for out in per_seed.values())
    return Spread(statistics.fmean(acc), min(acc), max(acc), acc)


@dataclass(frozen=True)
class Pairing:
    """Method a against method b on their common logs at one level: a-only and b-only right."""

    n: int
    a: int
    b: int
    wins: int
    losses: int
    p: float


def pair(a: Outcomes, b: Outcomes, level: int) -> Pairing:
    """Exact McNemar test of `a` against `b` at `level` (0 agent, 1 step) on common logs."""
    common = sorted(set(a) & set(b))
    wins = sum(a[i][level] and not b[i][level] for i in common)
    losses = sum(b[i][level] and not a[i][level] for i in common)
    ka, kb = sum(a[i][level] for i in common), sum(b[i][level] for i in common)
    return Pairing(len(common), ka, kb, wins, losses, mcnemar_exact(wins, losses))


def frozen_ids(logs: Sequence[Trajectory], share: float = FROZEN_SHARE) -> list[str]:
    """The ids of the frozen logs of a split: a seeded share drawn once (FROZEN_SEED); a next
    change to the scorer is developed on the other logs and judged once on these."""
    n = round(share * len(logs))
    ids = sorted(t.id for t in logs)
    return sorted(random.Random(FROZEN_SEED).sample(ids, n), key=lambda i: int(i.split("-")[1]))


@dataclass(frozen=True)
class FrozenRow:
    """One line of the frozen-split judgement: the candidate against `against` on the frozen
    logs, at the agent and at the step."""

    against: str
    agent: Pairing
    step: Pairing


def judge_on_frozen(
    logs: Sequence[Trajectory], current: Scorer, candidate: Scorer
) -> tuple[list[str], list[FrozenRow]]:
    """The frozen-split protocol, run once: both scorers fitted on the development logs (every
    log not frozen), both scored on the frozen logs, the candidate paired with the current
    scorer and with each trivial rule (counting over the development logs) by exact McNemar
    tests. Returns the frozen ids and the rows (the current scorer first)."""
    ids = frozen_ids(logs)
    frozen = set(ids)
    dev = [t for t in logs if t.id not in frozen]
    test = [t for t in logs if t.id in frozen]
    current.fit(dev)
    candidate.fit(dev)
    mine = scorer_outcomes(candidate, test)
    others = {"current scorer": scorer_outcomes(current, test)}
    others |= {name: rule_outcomes(rule, test, dev) for name, rule in RULES.items()}
    rows = [FrozenRow(k, pair(mine, o, 0), pair(mine, o, 1)) for k, o in others.items()]
    return ids, rows


__all__ = [
    "FROZEN_SEED",
    "RULES",
    "FrozenRow",
    "Outcomes",
    "Pairing",
    "Scorer",
    "Spread",
    "cv_outcomes",
    "frozen_ids",
    "judge_on_frozen",
    "pair",
    "rule_outcomes",
    "scorer_outcomes",
    "spread",
]
