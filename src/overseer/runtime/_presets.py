"""Topology presets with the AgentPrune seed's semantics, and role profile pools.

chain: a1 -> a2 -> ... -> an, the last agent answers.
star: every other agent reports to a1, the administrator, who answers.
tree: a binary tree by heap index (parent of i is (i-1)//2); reports go up; the root answers.
complete: a1..an as a mesh DAG (i -> j for i < j) plus an LLM summarizer.
layered: MLP-like layers, all-to-all between consecutive layers, one agent in the last layer.
random: each i -> j (i < j) with probability p (0.5), seeded; plus an LLM summarizer.
debate: no spatial edges; every agent reads every agent's previous answer (all-to-all temporal).
"""

from __future__ import annotations

import itertools
import random as _random
from typing import Literal

from overseer.runtime._spec import AgentSpec, DecisionRule, Edge, TeamSpec

Preset = Literal["chain", "star", "tree", "complete", "layered", "random", "debate"]
PRESETS: tuple[str, ...] = ("chain", "star", "tree", "complete", "layered", "random", "debate")
Temporal = Literal["none", "self", "all"]

ROLE_POOLS: dict[str, tuple[tuple[str, str], ...]] = {
    "reasoning": (
        ("Knowledgeable Expert", "Recall the facts the question depends on and state them."),
        ("Critic", "Look for the weakest step in the team's reasoning and fix it."),
        ("Careful Reader", "Check what exactly is asked and which options can be ruled out."),
        ("Logician", "Reason step by step from the facts to one conclusion."),
        ("Devil's Advocate", "Argue for the strongest alternative answer, then judge fairly."),
        ("Historian", "Bring in background and context that bear on the question."),
    ),
    "math": (
        ("Math Solver", "Solve the problem step by step and state the final number."),
        ("Mathematical Analyst", "Set up the quantities and equations before computing."),
        ("Programming Expert", "Check the arithmetic as a small program would, exactly."),
        ("Inspector", "Recompute each step of teammates' work and point out mistakes."),
        ("Estimator", "Check whether the answer has a plausible size and unit."),
    ),
    "code": (
        ("Project Manager", "Clarify the function's contract: inputs, outputs, edge cases."),
        ("Algorithm Designer", "Choose the algorithm and describe it in a few lines."),
        ("Programming Expert", "Write the complete, correct Python function."),
        ("Test Analyst", "Think of edge cases and check the code against them."),
        ("Bug Fixer", "Find and fix bugs in teammates' code; return the whole function."),
    ),
}


def _roles(pool: str, n: int) -> list[tuple[str, str]]:
    if pool not in ROLE_POOLS:
        raise ValueError(f"role pool {pool!r}: expected one of {sorted(ROLE_POOLS)}")
    roles = ROLE_POOLS[pool]
    return [roles[i % len(roles)] for i in range(n)]


def _layers(n: int) -> list[list[int]]:
    """Split n agents into layers of about equal size, the last layer holding one agent."""
    if n == 1:
        return [[0]]
    body = n - 1
    k = 1 if body <= 2 else 2
    sizes = [body // k + (1 if i < body % k else 0) for i in range(k)]
    out, start = [], 0
    for s in sizes:
        out.append(list(range(start, start + s)))
        start += s
    out.append([n - 1])
    return out


def spatial_edges(preset: str, n: int, *, p: float = 0.5, seed: int = 0) -> list[tuple[int, int]]:
    """The spatial edges of a preset over agent indices 0..n-1."""
    if preset == "chain":
        return [(i, i + 1) for i in range(n - 1)]
    if preset == "star":
        return [(i, 0) for i in range(1, n)]
    if preset == "tree":
        return [(i, (i - 1) // 2) for i in range(1, n)]
    if preset == "complete":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    if preset == "layered":
        layers = _layers(n)
        return [(a, b) for l1, l2 in itertools.pairwise(layers) for a in l1 for b in l2]
    if preset == "random":
        rng = _random.Random(seed)
        return [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p]
    if preset == "debate":
        return []
    raise ValueError(f"team preset {preset!r}: expected one of {', '.join(PRESETS)}")


_DECISION: dict[str, DecisionRule] = {
    "chain": "last",
    "star": "last",
    "tree": "last",
    "layered": "last",
    "complete": "llm",
    "random": "llm",
    "debate": "llm",
}


def make_team(
    preset: str,
    n_agents: int,
    *,
    rounds: int = 1,
    pool: str = "reasoning",
    temporal: Temporal | None = None,
    decision: DecisionRule | None = None,
    p: float = 0.5,
    seed: int = 0,
    tools: tuple[str, ...] = (),
) -> TeamSpec:
    """A TeamSpec for a preset. Temporal edges default to `all` for debate, else `self`."""
    if n_agents < 1:
        raise ValueError(f"agents: expected >= 1, got {n_agents}")
    if preset == "debate" and rounds < 2:
        raise ValueError("debate: expected rounds >= 2 (agents read the previous round)")
    temporal = temporal or ("all" if preset == "debate" else "self")
    names = [f"a{i + 1}" for i in range(n_agents)]
    roles = _roles(pool, n_agents)
    agents = []
    for i, (name, (role, how)) in enumerate(zip(names, roles, strict=True)):
        text = how
        if (preset in ("star", "tree") and i == 0) or (
            preset in ("chain", "layered") and i == n_agents - 1
        ):
            text += " You give the team's final answer after weighing the others' reports."
        agents.append(AgentSpec(name=name, role=role, instructions=text, tools=tools))
    sp: list[Edge] = [
        (names[a], names[b]) for a, b in spatial_edges(preset, n_agents, p=p, seed=seed)
    ]
    if rounds == 1 or temporal == "none":
        tp: list[Edge] = []
    elif temporal == "self":
        tp = [(n, n) for n in names]
    else:
        tp = [(a, b) for a in names for b in names]
    return TeamSpec(
        name=f"{preset}-{n_agents}",
        agents=tuple(agents),
        spatial_edges=tuple(sp),
        temporal_edges=tuple(tp),
        decision=decision or _DECISION[preset],
        rounds=rounds,
    )
