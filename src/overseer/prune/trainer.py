"""The AgentPrune objective (seed eq. 8-11) and its optimiser, in one place.

Maximise over the mask logits theta:

    J = E_{G ~ p_theta}[u(G)]                                  utility (accuracy, tests passed)
        - rank_weight   * sum_X ||S^X||_*                       low-rank term (eq. 11)
        - anchor_weight * sum_X max(0, ||A^X - S^X||_F - delta_X)  anchor: stay near the original

with S^X the keep-probability matrix (sigmoid of the logits on the candidates, 0 elsewhere) and
A^X the original topology, X in {spatial, temporal}. The utility gradient is REINFORCE (eq. 9):
(1/M) sum_k (u_k - b) grad log p(G_k), with b an optional moving-average baseline. The nuclear
norm's subgradient is U V^T of the thin SVD (over the non-zero singular values); the anchor's is
(S - A) / ||A - S||_F beyond delta. Both go through d sigmoid = p (1 - p). Adam (numpy) ascends J.

Two schedules:
- query-level (appendix D): Q' training queries, M sampled structures each, one update per
  query (`train_query_level`);
- dialogue-level (Algorithm 3): K' rounds of one query, one update per round, then one-shot
  pruning for the remaining rounds (`DialoguePruner`, a plug-in on the Executor's round end).
Temporal masks are not trained in a one-round team (there is nothing to carry across rounds).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field

import numpy as np

from overseer.models import Usage
from overseer.prune.masks import EdgeMasks, GraphSample
from overseer.prune.prune import prune_team
from overseer.runtime import BaseSupervisor, Run, TeamSpec, Verdict


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of mask training; `delta_rms` sets delta_X = delta_rms * sqrt(|cand_X|)."""

    lr: float = 0.1
    samples: int = 1
    baseline: bool = True
    baseline_decay: float = 0.8
    rank_weight: float = 0.05
    anchor_weight: float = 0.5
    delta_rms: float = 0.5
    epochs: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.lr <= 0 or self.samples < 1 or self.epochs < 1:
            raise ValueError("train config: expected lr > 0, samples >= 1, epochs >= 1")
        if not 0 <= self.baseline_decay < 1:
            raise ValueError(f"baseline_decay: expected 0 <= x < 1, got {self.baseline_decay}")
        if self.rank_weight < 0 or self.anchor_weight < 0 or self.delta_rms < 0:
            raise ValueError("rank_weight, anchor_weight, delta_rms: expected >= 0")


# -- regularisers -------------------------------------------------------------------------------
def nuclear_norm(m: np.ndarray) -> tuple[float, np.ndarray]:
    """||M||_* and a subgradient U V^T (over singular values above a small tolerance)."""
    if m.size == 0:
        return 0.0, np.zeros_like(m)
    u, s, vt = np.linalg.svd(m)
    keep = s > 1e-10 * max(1.0, float(s.max(initial=0.0)))
    return float(s.sum()), u[:, keep] @ vt[keep, :]


def anchor_excess(p: np.ndarray, a: np.ndarray, delta: float) -> tuple[float, np.ndarray]:
    """max(0, ||A - S||_F - delta) and its gradient w.r.t. the probabilities S."""
    d = float(np.linalg.norm(a - p))
    if d <= delta or d == 0.0:
        return max(0.0, d - delta), np.zeros_like(p)
    return d - delta, (p - a) / d


def _positions(masks: EdgeMasks, edges: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    idx = np.array([[masks.index[a], masks.index[b]] for a, b in edges], dtype=int).reshape(-1, 2)
    return idx[:, 0], idx[:, 1]


def regularizer_grads(
    masks: EdgeMasks, cfg: TrainConfig
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Gradients w.r.t. the spatial and temporal logits of the two penalty terms (to subtract)."""
    out: list[np.ndarray] = []
    info: dict[str, float] = {}
    parts = (
        ("spatial", masks.spatial, masks.spatial_probs, masks.anchor_spatial_vector()),
        ("temporal", masks.temporal, masks.temporal_probs, masks.anchor_temporal_vector()),
    )
    for name, edges, p, a in parts:
        if not edges:
            out.append(np.zeros(0))
            info[f"{name}_nuclear"] = info[f"{name}_anchor_dist"] = 0.0
            continue
        rows, cols = _positions(masks, edges)
        mat = np.zeros((len(masks.names), len(masks.names)))
        mat[rows, cols] = p
        nuc, sub = nuclear_norm(mat)
        exc, g_anchor = anchor_excess(p, a, cfg.delta_rms * np.sqrt(len(edges)))
        g_p = cfg.rank_weight * sub[rows, cols] + cfg.anchor_weight * g_anchor
        out.append(g_p * p * (1 - p))
        info[f"{name}_nuclear"] = nuc
        info[f"{name}_anchor_dist"] = float(np.linalg.norm(a - p))
        info[f"{name}_anchor_excess"] = exc
    return out[0], out[1], info


# -- optimiser ----------------------------------------------------------------------------------
class Adam:
    """Adam (Kingma & Ba) for a list of numpy arrays; `ascend` moves along the gradient."""

    def __init__(
        self, shapes: Sequence[tuple[int, ...]], lr: float, b1: float = 0.9, b2: float = 0.999
    ) -> None:
        self.lr, self.b1, self.b2, self.eps, self.t = lr, b1, b2, 1e-8, 0
        self.m = [np.zeros(s) for s in shapes]
        self.v = [np.zeros(s) for s in shapes]

    def ascend(self, params: list[np.ndarray], grads: list[np.ndarray]) -> None:
        self.t += 1
        for k, (x, g) in enumerate(zip(params, grads, strict=True)):
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * g * g
            mh = self.m[k] / (1 - self.b1**self.t)
            vh = self.v[k] / (1 - self.b2**self.t)
            x += self.lr * mh / (np.sqrt(vh) + self.eps)


# -- one update ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepInfo:
    """What one update saw and did."""

    step: int
    utility: float
    baseline: float
    spatial_nuclear: float
    temporal_nuclear: float
    spatial_anchor_dist: float
    temporal_anchor_dist: float


class PolicyGradient:
    """REINFORCE with a moving-average baseline plus the low-rank and anchor terms, by Adam."""

    def __init__(self, masks: EdgeMasks, cfg: TrainConfig) -> None:
        self.masks = masks
        self.cfg = cfg
        self.adam = Adam([masks.spatial_logits.shape, masks.temporal_logits.shape], cfg.lr)
        self.baseline = 0.0
        self.history: list[StepInfo] = []

    def gradient(
        self, samples: Sequence[GraphSample], utilities: Sequence[float], *, temporal: bool = True
    ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """The ascent direction of J at the current logits for these samples."""
        if len(samples) != len(utilities) or not samples:
            raise ValueError("samples and utilities: expected equal, non-zero lengths")
        b = self.baseline if self.cfg.baseline else 0.0
        gs = np.zeros_like(self.masks.spatial_logits)
        gt = np.zeros_like(self.masks.temporal_logits)
        for s, u in zip(samples, utilities, strict=True):
            ds, dt = self.masks.grad_log_prob(s)
            gs += (u - b) * ds / len(samples)
            gt += (u - b) * dt / len(samples)
        rs, rt, info = regularizer_grads(self.masks, self.cfg)
        if not temporal:
            gt = np.zeros_like(gt)
            rt = np.zeros_like(rt)
        return gs - rs, gt - rt, info

    def step(
        self, samples: Sequence[GraphSample], utilities: Sequence[float], *, temporal: bool = True
    ) -> StepInfo:
        """One Adam step on J; then the baseline moves toward the batch's mean utility."""
        gs, gt, info = self.gradient(samples, utilities, temporal=temporal)
        self.adam.ascend([self.masks.spatial_logits, self.masks.temporal_logits], [gs, gt])
        mean_u = float(np.mean(utilities))
        used = self.baseline
        d = self.cfg.baseline_decay
        self.baseline = mean_u if not self.history else d * self.baseline + (1 - d) * mean_u
        rec = StepInfo(
            step=len(self.history),
            utility=mean_u,
            baseline=used,
            spatial_nuclear=info["spatial_nuclear"],
            temporal_nuclear=info["temporal_nuclear"],
            spatial_anchor_dist=info["spatial_anchor_dist"],
            temporal_anchor_dist=info["temporal_anchor_dist"],
        )
        self.history.append(rec)
        return rec


# -- query-level training -----------------------------------------------------------------------
@dataclass(frozen=True)
class Rollout:
    """One team run during training: its utility and the tokens its agents spent."""

    utility: float
    usage: Usage = field(default_factory=Usage)
    error: str | None = None


RolloutFn = Callable[[TeamSpec, int, int], Awaitable[Rollout]]
"""rollout(sampled team, query index, sample index) -> Rollout."""


@dataclass
class TrainReport:
    """The training history and its cost (every agent call of every training run)."""

    history: list[StepInfo] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    runs: int = 0
    errors: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "history": [asdict(h) for h in self.history],
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "cached_prompt_tokens": self.usage.cached_prompt_tokens,
            },
            "runs": self.runs,
            "errors": self.errors,
        }


async def train_query_level(
    masks: EdgeMasks,
    team: TeamSpec,
    rollout: RolloutFn,
    n_queries: int,
    cfg: TrainConfig,
    *,
    on_step: Callable[[StepInfo], None] | None = None,
) -> TrainReport:
    """Q' queries (x epochs), M sampled structures each, one policy-gradient step per query."""
    if n_queries < 1:
        raise ValueError(f"n_queries: expected >= 1, got {n_queries}")
    rng = np.random.default_rng(cfg.seed)
    pg = PolicyGradient(masks, cfg)
    report = TrainReport(history=pg.history)
    for _ in range(cfg.epochs):
        for q in range(n_queries):
            samples = [masks.sample(rng) for _ in range(cfg.samples)]
            utilities = []
            for k, s in enumerate(samples):
                out = await rollout(masks.apply(team, s), q, k)
                report.usage += out.usage
                report.runs += 1
                report.errors += out.error is not None
                utilities.append(out.utility)
            info = pg.step(samples, utilities)
            if on_step is not None:
                on_step(info)
    return report


# -- dialogue-level training --------------------------------------------------------------------
RoundUtility = Callable[[Run], Awaitable[float]]


@dataclass
class _Dialogue:
    """The state of one run's dialogue-level training: masks, optimiser, sampler, structure."""

    masks: EdgeMasks
    pg: PolicyGradient
    rng: np.random.Generator
    current: GraphSample


@dataclass(eq=False)
class DialoguePruner(BaseSupervisor):
    """Algorithm 3 on the Executor: K' rounds of one query on sampled structures, an update at
    each round's end, then the one-shot pruned team for the remaining rounds.

    Start the run with `first_team()` (or pass the pruner itself as the team builder); at each
    round end the pruner returns `Verdict.replace_team` with the next structure. Temporal masks
    are updated from round 1 on (round 0 has no previous round to read). Each run trains its
    own masks from the same seed (state kept on the run, `run.state`), so one instance
    may serve many runs; the updates are in the trace (`agentprune_update`).
    """

    name = "agentprune"
    kinds = frozenset()

    team: TeamSpec
    round_utility: RoundUtility
    _: KW_ONLY
    train_rounds: int
    ratio: float
    cfg: TrainConfig
    candidates: str = "existing"

    def __post_init__(self) -> None:
        if not 1 <= self.train_rounds < self.team.rounds:
            raise ValueError(
                f"train_rounds: expected 1 <= K' < rounds ({self.team.rounds}), "
                f"got {self.train_rounds}"
            )
        self._fresh()  # fail on bad candidates now, not at the first round end

    def _fresh(self) -> _Dialogue:
        masks = EdgeMasks.from_team(self.team, candidates=self.candidates)  # type: ignore[arg-type]
        rng = np.random.default_rng(self.cfg.seed)
        return _Dialogue(masks, PolicyGradient(masks, self.cfg), rng, masks.sample(rng))

    def _state(self, run: Run) -> _Dialogue:
        return run.state(self, self._fresh)

    def first_team(self) -> TeamSpec:
        """The sampled structure a run's first round uses (the same for every run)."""
        d = self._fresh()
        return d.masks.apply(self.team, d.current)

    async def __call__(self, run: Run) -> TeamSpec:
        """As a team builder: the run's first sampled structure."""
        d = self._state(run)
        return d.masks.apply(self.team, d.current)

    async def on_round_end(self, run: Run) -> Verdict | None:
        r = run.round
        if r >= self.train_rounds:
            return None
        d = self._state(run)
        u = await self.round_utility(run)
        d.pg.step([d.current], [u], temporal=r > 0)
        pruned = r + 1 >= self.train_rounds
        if not pruned:
            d.current = d.masks.sample(d.rng)
            team = d.masks.apply(self.team, d.current)
        else:
            team = prune_team(self.team, d.masks, self.ratio)
        run.trace.event(
            "agentprune_update",
            round=r,
            utility=u,
            spatial=[list(e) for e in team.spatial_edges],
            temporal=[list(e) for e in team.temporal_edges],
            pruned=pruned,
        )
        why = "one-shot pruned team" if pruned else "next sampled structure"
        return Verdict.replace_team(team, by=self.name, reason=f"round {r}: {why}")
