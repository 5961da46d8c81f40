"""One-shot magnitude pruning (seed eq. 12) of a team's edges by their learned keep-probability.

Spatial and temporal edges are pruned separately and only among the spec's own edges: of |E|
edges, round(p * |E|) (halves rounded up) with the lowest probability are dropped, the rest
kept. Ties are broken by the edge's position in the spec (the later edge is dropped first), so
the result is deterministic. Edges the masks did not learn (e.g. temporal edges of a one-round
team) are all kept. A subset of a DAG is a DAG, so the pruned spec is always valid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from overseer.prune.masks import EdgeMasks
from overseer.runtime import TeamSpec

Edge = tuple[str, str]


def n_pruned(n_edges: int, ratio: float) -> int:
    """How many of n_edges a pruning ratio p removes: round(p * n), halves up."""
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"pruning ratio: expected 0 <= p <= 1, got {ratio}")
    return min(n_edges, math.floor(ratio * n_edges + 0.5 + 1e-9))


def _keep(edges: Sequence[Edge], learned: dict[Edge, float], ratio: float) -> tuple[Edge, ...]:
    if not edges or not all(e in learned for e in edges):
        return tuple(edges)
    drop = n_pruned(len(edges), ratio)
    ranked = sorted(range(len(edges)), key=lambda i: (learned[edges[i]], -i))
    dropped = set(ranked[:drop])
    return tuple(e for i, e in enumerate(edges) if i not in dropped)


def prune_team(team: TeamSpec, masks: EdgeMasks, ratio: float) -> TeamSpec:
    """The team with its lowest-probability p-fraction of spatial and of temporal edges cut."""
    if masks.names != team.names:
        raise ValueError(f"masks are for agents {masks.names}, the team has {team.names}")
    sp = dict(zip(masks.spatial, masks.spatial_probs.tolist(), strict=True))
    tp = dict(zip(masks.temporal, masks.temporal_probs.tolist(), strict=True))
    return TeamSpec.model_validate(
        {
            **team.model_dump(),
            "name": f"{team.name}-pruned{round(ratio * 100)}",
            "spatial_edges": _keep(team.spatial_edges, sp, ratio),
            "temporal_edges": _keep(team.temporal_edges, tp, ratio),
        }
    )
