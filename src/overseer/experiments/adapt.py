"""MASFly and its ablations as runner configurations, and the travel comparison table."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from overseer.adapt.embed import Embedder, TextEmbedder
from overseer.adapt.experience import ExperiencePool
from overseer.adapt.masfly import BusExtras, MASFly, MASFlyConfig
from overseer.adapt.repository import Repository
from overseer.adapt.starter import starter_cases
from overseer.adapt.watcher import intervened
from overseer.bench import Solver, SolverConfig, SolverOutput, TeamConfig
from overseer.bench.solvers import PluginFactory, plugin_verifier, task_run_id, team_query
from overseer.models import Model
from overseer.runtime import PythonTool, Tool
from overseer.tasks import Task, open_environment

DEFAULT_STORE = Path("results") / "adapt.sqlite"

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "masfly": ("MASFly: hybrid SOP retrieval, OP instantiation, Watcher with pool", {}),
    "masfly-querysim": ("MASFly retrieving by query similarity only", {"mode": "query"}),
    "masfly-needsim": ("MASFly retrieving by need similarity only", {"mode": "need"}),
    "masfly-norag": ("MASFly without SOP retrieval (the LLM designs the OP)", {"rag": False}),
    "masfly-noinst": ("MASFly without instantiation (one fixed SOP)", {"instantiate": False}),
    "masfly-nowatch": ("MASFly without the Watcher", {"watcher": False}),
    "masfly-nopep": ("MASFly with the Watcher but no experience pool", {"pool": False}),
    "masfly-attack": ("MASFly under the empty-function prompt attack", {"attack": True}),
    "masfly-attack-nowatch": (
        "MASFly under the prompt attack, without the Watcher",
        {"attack": True, "watcher": False},
    ),
}


def task_tools(task: Task) -> tuple[Mapping[str, Tool], Callable[[str], str]]:
    """The tools a team gets for a task and how its answer is stored: the task's own
    environment (travel, browse), else the Python tool for code tasks."""
    env = open_environment(task)
    if env is not None:
        return env.tools, env.finish
    return ({"python": PythonTool()} if task.kind == "code" else {}), _as_is


def _as_is(answer: str) -> str:
    return answer


def open_stores(path: str | Path, embedder: TextEmbedder) -> tuple[Repository, ExperiencePool]:
    """The repository and the pool, sharing one SQLite file; an empty repository gets the
    starter cases so that MASFly has something to retrieve."""
    repo = Repository(path, embedder)
    if len(repo) == 0:
        for c in starter_cases():
            repo.add(c)
    return repo, ExperiencePool(path, embedder)


def masfly_solver(
    model: Model,
    *,
    store: str | Path = DEFAULT_STORE,
    config: MASFlyConfig | None = None,
    name: str = "masfly",
    trace_dir: str | Path = "runs/bench",
    embedder: TextEmbedder | None = None,
    plugins: PluginFactory | None = None,
    top_logprobs: int = 0,
) -> Solver:
    """A solver that sees only the task's prompt (never its answer or tests); `plugins` go on
    each run's bus after the Watcher (composed configurations like `masfly+monitor:FILE`)."""
    repo, pool = open_stores(store, embedder or Embedder())
    fly = MASFly(model, repo, pool, config=config, trace_dir=Path(trace_dir) / name)

    async def solve(task: Task, seed: int) -> SolverOutput:
        tools, finish = task_tools(task)
        extra = BusExtras(
            list(plugins(model)) if plugins else (),
            plugin_verifier(plugins, tools),
            top_logprobs,
        )
        out = await fly.solve(
            team_query(task),
            tools=tools,
            domain=task.kind if task.suite != "travel" else "travel",
            seed=seed,
            run_id=task_run_id(task, seed),
            extra=extra,
        )
        res = out.result
        return SolverOutput(
            finish(out.answer),
            out.usage_by_actor,
            error=res.error if res.stop_reason != "done" else None,
            extra={
                "trace": str(res.trace_path),
                "team": out.team.names,
                "op_source": out.plan.inst.source,
                "retrieved": [h.case.id for h in out.plan.hits],
                "interventions": sum(map(intervened, out.reviews)),
                "not_applied": sum(1 for r in out.reviews if "not_applied" in r),
                "attacked": out.attacked,
            },
        )

    return solve


def masfly_configs(
    store: str | Path = DEFAULT_STORE, names: Iterable[str] | None = None, **overrides: Any
) -> list[SolverConfig]:
    """`masfly` and its ablation/retriever/attack variants as team configurations, so bus
    plug-ins compose onto them (those with the Watcher have the `watcher` kind already)."""
    out: list[SolverConfig] = []
    for n in names or VARIANTS:
        desc, knobs = VARIANTS[n]
        cfg = replace(MASFlyConfig(**overrides), **knobs)

        def make(
            model: Model,
            plugins: PluginFactory | None,
            top_logprobs: int,
            n: str = n,
            cfg: MASFlyConfig = cfg,
        ) -> Solver:
            return masfly_solver(
                model, store=store, config=cfg, name=n, plugins=plugins, top_logprobs=top_logprobs
            )

        kinds = ("watcher",) if cfg.watcher else ()
        out.append(TeamConfig.of(n, desc, make, kinds=kinds))
    return out


def travel_table(records: Iterable[Any], order: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per configuration: success rate, delivery rate, micro pass rate, mean tokens, errors.
    The rates are over the runs that ended without error (NaN when none did): an errored run
    is counted apart, not as a failure; tokens are over every run."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for r in records:
        groups[r.key.config].append(r)
    rank = {n: i for i, n in enumerate(order)}
    rows = []
    for cfg in sorted(groups, key=lambda c: (rank.get(c, len(rank)), c)):
        recs = groups[cfg]
        ok = [r for r in recs if r.error is None]
        m = len(ok) or math.nan
        rows.append(
            {
                "config": cfg,
                "n": len(recs),
                "success": sum(r.correct for r in ok) / m,
                "delivery": sum(r.parsed is not None for r in ok) / m,
                "micro": sum(r.score for r in ok) / m,
                "tokens": sum(r.usage.total_tokens for r in recs) / len(recs),
                "errors": len(recs) - len(ok),
            }
        )
    return rows


def travel_report(console: Any, records: Iterable[Any], order: Sequence[str] = ()) -> None:
    """Print the travel table (success, delivery, micro, tokens)."""
    from rich.table import Table

    t = Table(title="travel (AgentDojo travel suite; success = the task's own utility check)")
    for col in ("config", "n", "err", "success", "delivery", "micro", "tok mean"):
        t.add_column(col, justify="left" if col == "config" else "right")
    for row in travel_table(records, order):
        rates = [row[k] for k in ("success", "delivery", "micro")]
        t.add_row(
            row["config"],
            str(row["n"]),
            str(row["errors"]),
            *("-" if math.isnan(x) else f"{x:.3f}" for x in rates),
            f"{row['tokens']:.0f}",
        )
    console.print(t)


__all__ = [
    "DEFAULT_STORE",
    "VARIANTS",
    "masfly_configs",
    "masfly_solver",
    "open_stores",
    "task_tools",
    "travel_report",
    "travel_table",
]
