"""The seed's token cost model (eq. 13 and 14-17), fed with averages measured from real runs.

Per dialogue round a team pays c_q prompt tokens per agent (the query and its own profile),
c_S per spatial message an agent reads and c_T per temporal one. Measured averages:
- c_S = c_T = c_msg, the mean completion tokens of an agent call (messages are agents' answers);
- c_q = (agent prompt tokens - c_msg * messages delivered) / agent calls.

Eq. 13 as printed, ((1+p)K - (M+p)K'), does not follow from the two stage costs the seed gives
just before it; `dialogue_savings` returns the difference of those stage costs, which is
(pK + (1-M-p)K') X + (1-M) K' c_q |V| and agrees in form with eq. 17.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from overseer.models import Usage
from overseer.runtime import RunResult, TeamSpec


def deliveries(team: TeamSpec, result: RunResult) -> tuple[int, int]:
    """Messages actually read along spatial and temporal edges in a finished run."""
    spoke = {(m.sender, m.round) for m in result.messages if m.kind == "message"}
    n_s = sum((a, r) in spoke for r in range(result.rounds) for a, _ in team.spatial_edges)
    n_t = sum((a, r - 1) in spoke for r in range(1, result.rounds) for a, _ in team.temporal_edges)
    return n_s, n_t


@dataclass(frozen=True)
class RunCost:
    """The agents' part of one run: prompt/completion tokens, calls, messages delivered."""

    prompt_tokens: int
    completion_tokens: int
    calls: int
    spatial_deliveries: int
    temporal_deliveries: int

    @classmethod
    def of(cls, team: TeamSpec, result: RunResult) -> RunCost:
        agents = [k for k in result.usage_by_actor if k.startswith("agent:")]
        u = sum((result.usage_by_actor[k] for k in agents), Usage())
        n_s, n_t = deliveries(team, result)
        return cls(
            u.prompt_tokens,
            u.completion_tokens,
            sum(result.calls_by_actor.get(k, 0) for k in agents),
            n_s,
            n_t,
        )


@dataclass(frozen=True)
class MessageCosts:
    """Average tokens per spatial message (c_S), temporal message (c_T), agent query (c_q)."""

    c_s: float
    c_t: float
    c_q: float


def estimate_costs(runs: Iterable[RunCost]) -> MessageCosts:
    """c_S, c_T, c_q from measured runs (see the module docstring)."""
    runs = list(runs)
    calls = sum(r.calls for r in runs)
    if calls == 0:
        raise ValueError("runs: expected at least one agent call to estimate costs from")
    c_msg = sum(r.completion_tokens for r in runs) / calls
    delivered = sum(r.spatial_deliveries + r.temporal_deliveries for r in runs)
    c_q = max(0.0, (sum(r.prompt_tokens for r in runs) - c_msg * delivered) / calls)
    return MessageCosts(c_msg, c_msg, c_q)


@dataclass(frozen=True)
class Graph:
    """What the cost model needs of a team: |E^S|, |E^T|, |V| and rounds K."""

    spatial: int
    temporal: int
    agents: int
    rounds: int

    @classmethod
    def of(cls, team: TeamSpec) -> Graph:
        return cls(len(team.spatial_edges), len(team.temporal_edges), len(team.agents), team.rounds)


def _round(c: MessageCosts, g: Graph, keep: float = 1.0) -> float:
    return keep * (c.c_s * g.spatial + c.c_t * g.temporal) + c.c_q * g.agents


def vanilla_cost(c: MessageCosts, g: Graph, queries: int) -> float:
    """Eq. 14: Q K [c_S|E^S| + c_T|E^T| + c_q|V|]."""
    return queries * g.rounds * _round(c, g)


def query_level_cost(
    c: MessageCosts, g: Graph, *, queries: int, train_queries: int, samples: int, ratio: float
) -> tuple[float, float]:
    """Eq. 15 (training: M Q' K [...]) and eq. 16 (the other Q - Q' queries, pruned)."""
    train = samples * train_queries * g.rounds * _round(c, g)
    rest = (queries - train_queries) * g.rounds * _round(c, g, 1 - ratio)
    return train, rest


def query_level_savings(
    c: MessageCosts, g: Graph, *, queries: int, train_queries: int, samples: int, ratio: float
) -> float:
    """Eq. 17: (pQ + (1-p-M)Q') K X + (1-M) Q' K c_q |V|, X = c_S|E^S| + c_T|E^T|."""
    x = c.c_s * g.spatial + c.c_t * g.temporal
    p, q, q1, m, k = ratio, queries, train_queries, samples, g.rounds
    return (p * q + (1 - p - m) * q1) * k * x + (1 - m) * q1 * k * c.c_q * g.agents


def dialogue_cost(
    c: MessageCosts, g: Graph, *, train_rounds: int, samples: int, ratio: float
) -> tuple[float, float]:
    """Section 3.4: stage 1 M K' [...], stage 2 (K - K') [(1-p) X + c_q|V|], one query."""
    return (
        samples * train_rounds * _round(c, g),
        (g.rounds - train_rounds) * _round(c, g, 1 - ratio),
    )


def dialogue_savings(
    c: MessageCosts, g: Graph, *, train_rounds: int, samples: int, ratio: float
) -> float:
    """Vanilla minus the two stages (eq. 13 corrected, see the module docstring)."""
    s1, s2 = dialogue_cost(c, g, train_rounds=train_rounds, samples=samples, ratio=ratio)
    return g.rounds * _round(c, g) - s1 - s2
