"""Helpers for the adapt tests: a fake embedder with chosen similarities, a routing model."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from overseer.adapt import SOP, SOPAgent
from overseer.adapt.instantiate import OP_PROMPT
from overseer.adapt.retrieve import NEED_PROMPT
from overseer.adapt.watcher import WATCH_PROMPT
from overseer.models import ScriptedModel


class TableEmbedder:
    """Texts -> vectors from a table; unknown texts get a fixed far-away vector."""

    name = "table"

    def __init__(self, table: Mapping[str, Sequence[float]], dim: int = 4) -> None:
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        far = np.zeros(self.dim, dtype=np.float32)
        far[-1] = 1.0
        return np.stack([self.table.get(t, far) for t in texts])


def sop(*names: str, tools: Mapping[str, list[str]] | None = None, rounds: int = 1) -> SOP:
    """A chain SOP over the given agent names."""
    tools = tools or {}
    return SOP(
        team=list(names),
        agents=[
            SOPAgent(
                name=n,
                responsibility=f"{n} duty",
                instructions=f"{n} steps",
                tools=tools.get(n, []),
            )
            for n in names
        ],
        edges=[(a, b) for a, b in itertools.pairwise(names)],
        description=" -> ".join(names),
        rounds=rounds,
    )


Handler = Callable[[list[dict[str, Any]]], Any]


def router(
    *,
    need: Handler | None = None,
    op: Handler | None = None,
    agent: Handler | None = None,
    watch: Handler | None = None,
    other: Handler | None = None,
    by_actor: dict[str, Handler] | None = None,
) -> ScriptedModel:
    """A scripted model that answers by which prompt it is given; the actors of `by_actor`
    (an agent's name, "decision", ...) answer from their own handler instead."""

    def reply(messages: list[dict[str, Any]]) -> Any:
        system = messages[0]["content"]
        if system == NEED_PROMPT and need:
            return need(messages)
        if system == OP_PROMPT and op:
            return op(messages)
        if system == WATCH_PROMPT and watch:
            return watch(messages)
        if system.startswith("You are one agent") and agent:
            return agent(messages)
        if other:
            return other(messages)
        raise AssertionError(f"unexpected prompt: {system[:80]}")

    return ScriptedModel(reply, by_actor=by_actor)


def answer(text: str) -> dict[str, str]:
    return {"thought": "t", "action": "answer", "answer": text}


@pytest.fixture
def need_json() -> dict[str, Any]:
    return {"objective": "solve it", "capabilities": ["x"], "tools": [], "roles": ["Solver"]}
