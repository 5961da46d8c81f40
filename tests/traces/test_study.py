"""overseer.traces.study: the trivial rules read the log as written, cross-validation never
scores a log with a model fitted on it, McNemar pairs on common logs, the frozen split is fixed;
and the attribution code does not import the benchmark runner (statistics live below both)."""

from __future__ import annotations

import subprocess
import sys

from overseer.traces import Annotation, TraceStep, Trajectory, load_whowhen
from overseer.traces.evaluate import Attribution
from overseer.traces.learned import LearnedScorer
from overseer.traces.study import (
    RULES,
    cv_outcomes,
    frozen_ids,
    judge_on_frozen,
    pair,
    rule_outcomes,
    spread,
)


def _log(i: int, agents: list[str], obs_last: bool, k: int, who: str) -> Trajectory:
    steps = [
        TraceStep(
            j, a, "user", f"step {j} of log {i}", is_observation=obs_last and j == len(agents) - 1
        )
        for j, a in enumerate(agents)
    ]
    return Trajectory(f"t-{i}", "test", "q?", tuple(steps), annotation=Annotation(who, k))


def test_the_trivial_rules_answer_from_the_log_as_written() -> None:
    # the last step is an observation (a page read by WebSurfer): the last speaker counts it
    t = _log(1, ["human", "Orchestrator", "WebSurfer", "WebSurfer"], True, 3, "WebSurfer")
    other = _log(2, ["human", "Orchestrator", "WebSurfer"], False, 1, "Orchestrator")
    got = {name: rule_outcomes(rule, [t, other], [t, other]) for name, rule in RULES.items()}
    assert got["speaker of step 0"] == {"t-1": (False, False), "t-2": (False, False)}
    assert got["last speaker (observations included)"]["t-1"] == (True, True)
    assert got["always step 1"]["t-2"] == (True, True)
    # most frequent over the two logs: step 3 and step 1 once each (the first counted wins),
    # WebSurfer and Orchestrator once each (the log's first speaker of them wins)
    assert got["the split's most frequent agent and step"]["t-1"] == (False, True)


def test_pairing_counts_discordant_logs_only_on_common_ones() -> None:
    a = {"x": (True, True), "y": (True, False), "z": (False, False), "only-a": (True, True)}
    b = {"x": (True, False), "y": (False, False), "z": (True, False)}
    agent, step = pair(a, b, 0), pair(a, b, 1)
    assert (agent.n, agent.wins, agent.losses, agent.a, agent.b) == (3, 1, 1, 2, 2)
    assert agent.p == 1.0
    assert (step.wins, step.losses) == (1, 0)


def test_cross_validation_never_scores_a_log_with_a_model_fitted_on_it() -> None:
    logs = load_whowhen("hand")[:20]
    seen: list[tuple[set[str], str]] = []

    class Spy(LearnedScorer):
        def fit(self, train: list[Trajectory], *, with_truth: bool = False) -> None:
            self.trained = {t.id for t in train}
            super().fit(train, with_truth=with_truth)

        async def attribute(self, traj: Trajectory, *, with_truth: bool = False):  # type: ignore[no-untyped-def]
            seen.append((self.trained, traj.id))
            return await super().attribute(traj, with_truth=with_truth)

    out = cv_outcomes(Spy(), logs, seed=3, k=5)
    assert set(out) == {t.id for t in logs}
    assert all(log not in trained and len(trained) == 16 for trained, log in seen)
    s = spread({3: out}, 1)
    assert s.low == s.high == s.mean == sum(o[1] for o in out.values()) / 20


def test_the_frozen_split_is_fixed_and_a_share_of_the_split() -> None:
    logs = load_whowhen("hand")
    ids = frozen_ids(logs)
    assert ids == frozen_ids(list(reversed(logs)))
    assert len(ids) == round(0.3 * 58) and set(ids) <= {t.id for t in logs}


def test_attribution_does_not_import_the_benchmark_runner() -> None:
    code = (
        "import sys, overseer.traces.evaluate, overseer.traces.study\n"
        "print(sorted(m for m in sys.modules if m.startswith('overseer.bench')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _Stub:
    """A scorer that remembers what it was fitted on and always names one agent and step."""

    def __init__(self, agent: str, step: int) -> None:
        self.agent, self.step, self.fitted, self.asked = agent, step, [], []

    def fit(self, train: list[Trajectory], *, with_truth: bool = False) -> None:
        self.fitted = [t.id for t in train]

    async def attribute(self, traj: Trajectory, *, with_truth: bool = False) -> Attribution:
        self.asked.append(traj.id)
        return Attribution(traj.id, "stub", self.agent, self.step, "stub")


def test_the_frozen_judgement_fits_on_the_rest_and_scores_the_frozen_logs_once() -> None:
    logs = [_log(i, ["human", "A", "B"], False, 1 + i % 2, "A") for i in range(20)]
    current, candidate = _Stub("B", 1), _Stub("A", 1)
    ids, rows = judge_on_frozen(logs, current, candidate)
    assert ids == frozen_ids(logs) and len(ids) == 6
    for s in (current, candidate):
        assert set(s.fitted) == {t.id for t in logs} - set(ids) and sorted(s.asked) == sorted(ids)
    assert [r.against for r in rows] == ["current scorer", *RULES]
    right_step = sum(1 for t in logs if t.id in ids and t.annotation.step == 1)
    vs_current = rows[0]
    assert (vs_current.agent.wins, vs_current.agent.losses) == (6, 0)
    assert (vs_current.step.a, vs_current.step.b) == (right_step, right_step)
