"""Our own attribution method: a small learned scorer over the per-step features overseer
computes (no model call). A classifier learns, on annotated training logs, which steps are
the decisive one; on a new log the highest-scoring step is the answer. The agent is the one
a second small model blames, from each speaker's step scores, how often that agent name was
to blame in training (left out for its own log), its share of the steps and whether it only
reports results (the decisive step's speaker is not always the one annotated)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from overseer.traces._attr_types import Attribution, mistake_agent_counts
from overseer.traces._baselines import speakers
from overseer.traces._features import FEATURES, step_features
from overseer.traces._types import Trajectory

Kind = Literal["logreg", "boost"]


class LearnedScorer:
    """Step scorer trained on annotated logs: logistic regression (`logreg`, default) or
    gradient-boosted trees (`boost`); seeded. `fit` must run before `attribute`."""

    uses_model = False

    def __init__(self, kind: Kind = "logreg", *, seed: int = 0) -> None:
        if kind not in ("logreg", "boost"):
            raise ValueError(f"learned scorer kind {kind!r}: expected logreg or boost")
        self.kind, self.seed = kind, seed
        self.name = "learned" if kind == "logreg" else "learned-boost"
        self._clf: object | None = None
        self._fit_truth: bool | None = None
        self._agents: Any = None
        self._prior: Counter[str] = Counter()
        self._n_train = 0
        self._cache: dict[tuple[str, str, bool, int], np.ndarray] = {}

    def features(self, traj: Trajectory, with_truth: bool) -> np.ndarray:
        """The step features of `traj` (cached by source, id, setting and content)."""
        key = (traj.source, traj.id, with_truth, hash(tuple(s.text for s in traj.steps)))
        if key not in self._cache:
            self._cache[key] = step_features(traj, with_truth=with_truth)
        return self._cache[key]

    def _new(self) -> object:
        if self.kind == "boost":
            return HistGradientBoostingClassifier(
                max_depth=3,
                max_iter=150,
                learning_rate=0.05,
                class_weight="balanced",
                random_state=self.seed,
            )
        return make_pipeline(
            StandardScaler(),
            LogisticRegression(C=0.5, class_weight="balanced", max_iter=2000),
        )

    def fit(self, train: list[Trajectory], *, with_truth: bool = False) -> None:
        """Train on the annotated logs of `train` (logs without an annotation are skipped)."""
        xs, ys = [], []
        for t in train:
            if t.annotation is None or not t.steps:
                continue
            x = self.features(t, with_truth)
            y = np.zeros(len(t.steps))
            y[t.annotation.step] = 1
            xs.append(x)
            ys.append(y)
        if not xs:
            raise ValueError("learned scorer: expected annotated training logs, got none")
        clf = self._new()
        clf.fit(np.vstack(xs), np.concatenate(ys))  # type: ignore[attr-defined]
        self._clf, self._fit_truth = clf, with_truth
        self._fit_agents([t for t in train if t.annotation is not None and t.steps], with_truth)

    def _fit_agents(self, train: list[Trajectory], with_truth: bool) -> None:
        """The agent stage: which speaker is to blame, from the step scores and the prior."""
        self._prior, self._n_train = mistake_agent_counts(train), len(train)
        xs, ys = [], []
        for t in train:
            assert t.annotation is not None
            cands, x = self._agent_rows(
                t, self.scores(t, with_truth=with_truth), t.annotation.agent
            )
            xs.append(x)
            ys += [float(a == t.annotation.agent) for a in cands]
        y = np.asarray(ys)
        if 0 < y.sum() < len(y):
            self._agents = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
            self._agents.fit(np.vstack(xs), y)

    def _agent_rows(
        self, traj: Trajectory, p: np.ndarray, held_out: str | None = None
    ) -> tuple[list[str], np.ndarray]:
        """Per speaker: score mass and peak, how often the name was to blame in training
        (its own log left out), share of steps, observation share, first step."""
        cands, n = speakers(traj), len(traj.steps)
        top = traj.steps[int(np.argmax(p))].agent
        trained = max(1, self._n_train - (held_out is not None))
        rows = []
        for a in cands:
            idx = [s.index for s in traj.steps if s.agent == a]
            mass = [float(p[idx].sum()), float(p[idx].max())]
            prior = (self._prior.get(a, 0) - (a == held_out)) / trained
            obs = sum(traj.steps[i].is_observation for i in idx) / len(idx)
            rows.append([*mass, prior, len(idx) / n, obs, idx[0] / max(1, n - 1), float(a == top)])
        return cands, np.asarray(rows, dtype=float)

    def scores(self, traj: Trajectory, *, with_truth: bool = False) -> np.ndarray:
        """The probability, per step, that it is the decisive one."""
        if self._clf is None:
            raise RuntimeError("learned scorer: fit() it on annotated logs first")
        x = self.features(traj, with_truth)
        return np.asarray(self._clf.predict_proba(x)[:, 1])  # type: ignore[attr-defined]

    async def attribute(self, traj: Trajectory, *, with_truth: bool = False) -> Attribution:
        if not traj.steps:
            return Attribution(traj.id, self.name, None, None, "empty log", "fallback")
        p = self.scores(traj, with_truth=with_truth and bool(self._fit_truth))
        step = int(np.argmax(p))
        cands, rows = self._agent_rows(traj, p)
        # without an agent stage (training blamed no or every speaker): the score mass
        blame = self._agents.predict_proba(rows)[:, 1] if self._agents is not None else rows[:, 0]
        agent = cands[int(np.argmax(blame))]
        top = ", ".join(f"{n}={v:+.2f}" for n, v in self._explain(traj, step))
        reason = f"step {step} scores {p[step]:.2f}; {agent} is blamed {blame.max():.2f}" + (
            f" ({top})" if top else ""
        )
        return Attribution(traj.id, self.name, agent, step, reason)

    def _explain(self, traj: Trajectory, step: int) -> list[tuple[str, float]]:
        """The three features that push the step's score most (logistic regression only)."""
        if self.kind != "logreg" or self._clf is None:
            return []
        scaler, lr = self._clf.steps[0][1], self._clf.steps[1][1]  # type: ignore[attr-defined]
        x = self.features(traj, bool(self._fit_truth))[step : step + 1]
        x = scaler.transform(x)[0]
        contrib = x * lr.coef_[0]
        order = np.argsort(-np.abs(contrib))[:3]
        return [(FEATURES[i], float(contrib[i])) for i in order]
