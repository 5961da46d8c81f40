"""What `overseer adapt show|run` prints: the SOP cases and experiences of a store; how a
team was built for one query, the Watcher's reviews, the answer and tokens by actor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


def print_store(console: Console, store: Path, repo: Any, pool: Any) -> None:
    """The SOP cases of `repo` and the experiences of `pool`, one table each."""
    from rich.table import Table

    t = Table(title=f"SOP cases in {store}")
    for col in ("id", "domain", "source", "team", "query"):
        t.add_column(col)
    for c in repo.cases():
        t.add_row(str(c.id), c.domain, c.source, " -> ".join(c.sop.team), c.query[:70])
    console.print(t)
    e = Table(title="experiences")
    for col in ("id", "domain", "source", "failure cause", "agents"):
        e.add_column(col)
    for x in pool.all():
        agents = ", ".join(sorted({a.agent for a in x.lessons}))
        e.add_row(str(x.id), x.domain, x.source, x.failure_cause[:70], agents)
    console.print(e)


def print_solved(console: Console, out: Any) -> None:
    """A MASFly run: the need, the retrieved cases, the OP, the Watcher's reviews, the answer,
    tokens by actor and the trace."""
    from rich.table import Table

    plan = out.plan
    if plan.need is not None:
        console.print(f"need ({plan.need.source}): {plan.need.need.model_dump_json()}")
    for h in plan.hits:
        console.print(
            f"retrieved case #{h.case.id} score {h.score:.3f} (query {h.query_sim:.3f}, "
            f"need {h.need_sim:.3f}): {' -> '.join(h.case.sop.team)}"
        )
    console.print(
        f"OP ({plan.inst.source}, {len(plan.inst.errors)} errors): "
        f"{json.dumps(out.team.names)} edges {list(out.team.spatial_edges)}"
    )
    for r in out.reviews:
        console.print(f"watcher [{r['trigger']}]: {json.dumps(r['decision'])}")
    console.print(f"answer: {out.answer}")
    t = Table(title="tokens by actor")
    for col in ("actor", "prompt", "completion"):
        t.add_column(col)
    for k, u in sorted(out.usage_by_actor.items()):
        t.add_row(k, str(u.prompt_tokens), str(u.completion_tokens))
    console.print(t)
    console.print(f"trace: {out.result.trace_path}")
