"""LLM-free attribution baselines: random, most frequent mistake agent, first repeat, last
agent to speak. Each gives an agent and a step; none spends a token."""

from __future__ import annotations

import hashlib
import random
from collections import Counter

from overseer.traces._attr_types import Attribution, mistake_agent_counts
from overseer.traces._types import Trajectory


def speakers(traj: Trajectory) -> list[str]:
    """The agents that could be blamed: every speaker except the human asking the question."""
    return [a for a in traj.agents if a != "human"] or list(traj.agents)


class RandomBaseline:
    """A uniformly random agent (of the speakers) and an independent random step; seeded per
    log, so the answer for a log does not depend on which other logs are run."""

    name = "random"
    uses_model = False

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def fit(self, train: list[Trajectory]) -> None:
        """Nothing to learn."""

    async def attribute(self, traj: Trajectory, *, with_truth: bool = False) -> Attribution:
        digest = hashlib.sha256(f"{self.seed}:{traj.id}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        cands = speakers(traj)
        if not cands:  # a run that failed before any step (no interaction in its trace)
            return Attribution(traj.id, self.name, None, None, "empty log", "fallback")
        agent = rng.choice(cands)
        step = rng.randrange(len(traj.steps)) if traj.steps else None
        return Attribution(traj.id, self.name, agent, step, "random guess")


class MostFrequentBaseline:
    """The agent most often to blame in the training logs (among this log's speakers), and the
    training logs' most frequent mistake step (clipped to this log's length)."""

    name = "most-frequent"
    uses_model = False

    def __init__(self) -> None:
        self.agents: Counter[str] = Counter()
        self.step = 0

    def fit(self, train: list[Trajectory]) -> None:
        """Count the mistake agents and steps of `train`."""
        self.agents = mistake_agent_counts(train)
        steps = Counter(t.annotation.step for t in train if t.annotation is not None)
        self.step = steps.most_common(1)[0][0] if steps else 0

    async def attribute(self, traj: Trajectory, *, with_truth: bool = False) -> Attribution:
        cands = speakers(traj)
        if not cands:  # a run that failed before any step (no interaction in its trace)
            return Attribution(traj.id, self.name, None, None, "empty log", "fallback")
        agent = max(cands, key=lambda a: (self.agents.get(a, 0), -cands.index(a)))
        step = min(self.step, len(traj.steps) - 1) if traj.steps else None
        why = f"{agent} is to blame in {self.agents.get(agent, 0)} training logs"
        return Attribution(traj.id, self.name, agent, step, why)


def first_repeat(traj: Trajectory) -> int | None:
    """The first step whose (agent, text) appeared verbatim earlier in the log."""
    seen: set[tuple[str, str]] = set()
    for s in traj.steps:
        key = (s.agent, " ".join(s.text.split()).lower())
        if key[1] and key in seen:
            return s.index
        seen.add(key)
    return None


class FirstRepeatBaseline:
    """The first repeated action (a step that repeats an earlier one verbatim) and its agent;
    a log with no repeat falls back to the last step (outcome "fallback")."""

    name = "first-repeat"
    uses_model = False

    def fit(self, train: list[Trajectory]) -> None:
        """Nothing to learn."""

    async def attribute(self, traj: Trajectory, *, with_truth: bool = False) -> Attribution:
        k = first_repeat(traj)
        if k is None:
            if not traj.steps:
                return Attribution(traj.id, self.name, None, None, "empty log", "fallback")
            last = traj.steps[-1]
            return Attribution(
                traj.id, self.name, last.agent, last.index, "no repeat; last step", "fallback"
            )
        s = traj.steps[k]
        return Attribution(traj.id, self.name, s.agent, k, f"{s.agent} repeats an earlier step")


class LastAgentBaseline:
    """The last agent to speak (not an observation or the human) and its last step."""

    name = "last-agent"
    uses_model = False

    def fit(self, train: list[Trajectory]) -> None:
        """Nothing to learn."""

    async def attribute(self, traj: Trajectory, *, with_truth: bool = False) -> Attribution:
        cands = [s for s in traj.steps if s.agent != "human" and not s.is_observation]
        s = cands[-1] if cands else (traj.steps[-1] if traj.steps else None)
        if s is None:
            return Attribution(traj.id, self.name, None, None, "empty log", "fallback")
        return Attribution(traj.id, self.name, s.agent, s.index, f"{s.agent} spoke last")
