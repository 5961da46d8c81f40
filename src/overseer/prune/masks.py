"""Learnable edge masks over a team's spatial and temporal edges, DAG sampling, log-probabilities.

Each candidate edge e has a logit theta_e; its keep-probability is sigmoid(theta_e) (the seed's
S[i, j], eq. 10), initialised to 0.5 (logit 0, appendix G.2).

Candidates (`candidates=`):
- "existing" (default): the spec's own spatial and temporal edges, i.e. A ⊙ S of eq. 7; every
  other entry of the probability matrix is 0.
- "all": every ordered pair i != j of agents for spatial edges and every pair (self included) for
  temporal edges, with the spec's edges as the anchor A (the seed's code learns the complete
  graph's candidates this way). One-shot pruning still keeps only existing edges (eq. 12).

Cycle policy (the seed's Algorithm 2, made explicit): the spatial candidates are visited in a
uniformly random order; an edge whose addition would close a directed cycle among the edges kept
so far is *skipped* (not sampled, kept out); every other edge is kept with its probability. The
sampled graph is therefore always a DAG. `log_prob` is the log-probability of the decisions
actually sampled given that visit order: skipped edges contribute nothing. The order does not
depend on the logits, so this is the correct score function for REINFORCE. Temporal edges (round
t-1 -> t) cannot form cycles and are sampled independently.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np

from overseer.runtime import TeamSpec


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), elementwise: scipy's `expit` formula (equal on every value checked),
    in numpy so that pruning needs no scipy; exp overflows to inf for x < -709, giving 0."""
    with np.errstate(over="ignore"):
        out: np.ndarray = 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=float)))
    return out


Candidates = Literal["existing", "all"]
Edge = tuple[str, str]


@dataclass(frozen=True)
class GraphSample:
    """One sampled structure: kept spatial/temporal candidates, which spatial ones were decided
    (not skipped for a cycle), and the visit order of the spatial candidates."""

    spatial: np.ndarray  # bool, one per spatial candidate
    decided: np.ndarray  # bool, one per spatial candidate; False = skipped (would close a cycle)
    temporal: np.ndarray  # bool, one per temporal candidate
    order: tuple[int, ...]  # visit order of the spatial candidates

    def key(self) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
        """The structure itself (what the team runs with), for counting outcomes."""
        return tuple(bool(x) for x in self.spatial), tuple(bool(x) for x in self.temporal)


def _reaches(adj: dict[int, set[int]], src: int, dst: int) -> bool:
    """Whether dst is reachable from src along kept edges (iterative DFS)."""
    stack, seen = [src], {src}
    while stack:
        u = stack.pop()
        if u == dst:
            return True
        for v in adj[u]:
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return False


class EdgeMasks:
    """Logits over a team's candidate spatial and temporal edges; samples DAGs; scores samples."""

    def __init__(
        self,
        names: list[str],
        spatial: list[Edge],
        temporal: list[Edge],
        anchor_spatial: list[Edge],
        anchor_temporal: list[Edge],
        *,
        spatial_logits: np.ndarray | None = None,
        temporal_logits: np.ndarray | None = None,
    ) -> None:
        self.names = list(names)
        self.index = {n: i for i, n in enumerate(self.names)}
        for e in [*spatial, *temporal, *anchor_spatial, *anchor_temporal]:
            for end in e:
                if end not in self.index:
                    raise ValueError(f"edge {e}: unknown agent {end!r}; agents: {self.names}")
        if any(a == b for a, b in spatial):
            raise ValueError("spatial candidates: self-loops cannot be spatial edges")
        self.spatial = list(spatial)
        self.temporal = list(temporal)
        self.anchor_spatial = set(anchor_spatial)
        self.anchor_temporal = set(anchor_temporal)
        self.spatial_logits = (
            np.zeros(len(spatial)) if spatial_logits is None else np.asarray(spatial_logits, float)
        )
        self.temporal_logits = (
            np.zeros(len(temporal))
            if temporal_logits is None
            else np.asarray(temporal_logits, float)
        )
        if self.spatial_logits.shape != (len(spatial),):
            raise ValueError(f"spatial_logits: expected shape ({len(spatial)},)")
        if self.temporal_logits.shape != (len(temporal),):
            raise ValueError(f"temporal_logits: expected shape ({len(temporal)},)")

    @classmethod
    def from_team(
        cls, team: TeamSpec, *, candidates: Candidates = "existing", train_temporal: bool = True
    ) -> EdgeMasks:
        """Masks at probability 0.5 over a team's candidates. With one round (or
        `train_temporal=False`) there are no temporal candidates: nothing crosses rounds."""
        names = team.names
        if candidates == "existing":
            sp = list(team.spatial_edges)
            tp = list(team.temporal_edges)
        elif candidates == "all":
            sp = [(a, b) for a, b in itertools.permutations(names, 2)]
            tp = [(a, b) for a in names for b in names]
        else:
            raise ValueError(f"candidates: expected 'existing' or 'all', got {candidates!r}")
        if team.rounds == 1 or not train_temporal:
            tp = []
        return cls(names, sp, tp, list(team.spatial_edges), list(team.temporal_edges))

    # -- probabilities and matrices ------------------------------------------------------------
    @property
    def spatial_probs(self) -> np.ndarray:
        return sigmoid(self.spatial_logits)

    @property
    def temporal_probs(self) -> np.ndarray:
        return sigmoid(self.temporal_logits)

    def _matrix(self, edges: list[Edge], values: np.ndarray) -> np.ndarray:
        m = np.zeros((len(self.names), len(self.names)))
        for (a, b), v in zip(edges, values, strict=True):
            m[self.index[a], self.index[b]] = v
        return m

    def spatial_matrix(self) -> np.ndarray:
        """The seed's S^S as an n x n matrix (0 where there is no candidate)."""
        return self._matrix(self.spatial, self.spatial_probs)

    def temporal_matrix(self) -> np.ndarray:
        return self._matrix(self.temporal, self.temporal_probs)

    def anchor_spatial_vector(self) -> np.ndarray:
        """A^S restricted to the spatial candidates (1 for the spec's own edges)."""
        return np.array([float(e in self.anchor_spatial) for e in self.spatial])

    def anchor_temporal_vector(self) -> np.ndarray:
        return np.array([float(e in self.anchor_temporal) for e in self.temporal])

    # -- sampling ------------------------------------------------------------------------------
    def sample(
        self, rng: np.random.Generator, *, order: tuple[int, ...] | None = None
    ) -> GraphSample:
        """One structure: spatial edges by Algorithm 2's policy (a DAG), temporal independently."""
        n_s = len(self.spatial)
        visit = tuple(int(i) for i in rng.permutation(n_s)) if order is None else tuple(order)
        if sorted(visit) != list(range(n_s)):
            raise ValueError(f"order: expected a permutation of range({n_s})")
        p = self.spatial_probs
        kept = np.zeros(n_s, dtype=bool)
        decided = np.zeros(n_s, dtype=bool)
        adj: dict[int, set[int]] = {i: set() for i in range(len(self.names))}
        u = rng.random(n_s)
        for step, k in enumerate(visit):
            a, b = (self.index[x] for x in self.spatial[k])
            if _reaches(adj, b, a):  # a -> b would close a cycle: skip, no decision
                continue
            decided[k] = True
            if u[step] < p[k]:
                kept[k] = True
                adj[a].add(b)
        temporal = rng.random(len(self.temporal)) < self.temporal_probs
        return GraphSample(kept, decided, temporal, visit)

    def log_prob(self, s: GraphSample) -> float:
        """log p(sample | visit order): Bernoulli terms of decided spatial and temporal edges."""
        return float(
            _bernoulli_logp(self.spatial_logits, s.spatial)[s.decided].sum()
            + _bernoulli_logp(self.temporal_logits, s.temporal).sum()
        )

    def grad_log_prob(self, s: GraphSample) -> tuple[np.ndarray, np.ndarray]:
        """d log p / d logits in closed form: (x - p) on decided edges, 0 on skipped ones."""
        gs = np.where(s.decided, s.spatial.astype(float) - self.spatial_probs, 0.0)
        gt = s.temporal.astype(float) - self.temporal_probs
        return gs, gt

    # -- teams ---------------------------------------------------------------------------------
    def apply(self, team: TeamSpec, s: GraphSample) -> TeamSpec:
        """The team with the sampled structure. Without temporal candidates, the team's own
        temporal edges are kept as they are."""
        sp = tuple(e for e, k in zip(self.spatial, s.spatial, strict=True) if k)
        if self.temporal:
            tp = tuple(e for e, k in zip(self.temporal, s.temporal, strict=True) if k)
        else:
            tp = team.temporal_edges
        return TeamSpec.model_validate(
            {**team.model_dump(), "spatial_edges": sp, "temporal_edges": tp}
        )

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: edges with their learned probabilities."""
        return {
            "agents": self.names,
            "spatial": [
                {"edge": list(e), "p": float(p), "anchor": e in self.anchor_spatial}
                for e, p in zip(self.spatial, self.spatial_probs, strict=True)
            ],
            "temporal": [
                {"edge": list(e), "p": float(p), "anchor": e in self.anchor_temporal}
                for e, p in zip(self.temporal, self.temporal_probs, strict=True)
            ],
        }


def _bernoulli_logp(logits: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log sigmoid(l) where x, log(1 - sigmoid(l)) where not; stable for large |l|."""
    return -np.logaddexp(0.0, np.where(x, -logits, logits))
