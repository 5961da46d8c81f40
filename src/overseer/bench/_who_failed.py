"""The report's "Who failed" section: for each failed team run with a trace, the agent and step
the learned attribution scorer (overseer.traces, trained on Who&When, no model call) blames."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from overseer.bench._sections import Cell, Section
from overseer.bench._store import ResultKey

FailedRun = tuple[ResultKey, Sequence[Mapping[str, Any]]]  # the result's key, its trace events


def who_failed_section(failed: Sequence[FailedRun]) -> Section | None:
    """One row per failed run whose trace has agent steps; None when there is none."""
    from overseer.traces import from_overseer_trace, load_whowhen
    from overseer.traces.learned import LearnedScorer

    trajs = [
        (k, from_overseer_trace(ev, log_id=f"{k.config}/{k.task_id}/{k.seed}")) for k, ev in failed
    ]
    trajs = [(k, t) for k, t in trajs if len(t.agents) > 1]  # a team: someone to blame
    if not trajs:
        return None
    scorer = LearnedScorer("logreg", seed=0)
    scorer.fit(load_whowhen("all"))
    s = Section(
        "Who failed",
        "For each wrong or errored team run: the agent and step the learned attribution "
        "scorer blames (trained on the 184 Who&When logs; see docs/evidence/attribution.md "
        "for its accuracy there). A lead for reading the trace, not a verdict.",
    )
    s.header = ["config", "task", "seed", "agent", "step", "steps", "why"]
    for k, t in trajs:
        a = asyncio.run(scorer.attribute(t))
        cells = (k.config, k.task_id, str(k.seed), a.agent or "-", str(a.step), str(len(t.steps)))
        s.rows.append([*(Cell(c) for c in cells), Cell(a.reason[:160])])
    return s
