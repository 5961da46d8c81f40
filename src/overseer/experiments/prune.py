"""AgentPrune experiments: train masks or reuse a saved pruned spec, evaluate the full and the
pruned team on held-out tasks, and the rows of the comparison and cost-model tables (what
`overseer prune` runs and prints)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypedDict

from overseer.bench import ResultRecord, ResultStore, RunSummary, SolverConfig, run_experiment
from overseer.bench.backends import Backend, listed_configs
from overseer.experiments.prune_runs import (
    RunSettings,
    learn_and_prune,
    load_trained,
    save_trained,
    spec_digest,
    spec_solver,
)
from overseer.models import Model
from overseer.prune.cost import (
    Graph,
    RunCost,
    estimate_costs,
    query_level_cost,
    query_level_savings,
    vanilla_cost,
)
from overseer.prune.masks import Candidates
from overseer.prune.trainer import StepInfo, TrainConfig
from overseer.runtime import TeamSpec
from overseer.tasks import Task


class _Training(TypedDict):
    """The settings of `learn_and_prune` a job decides."""

    ratio: float
    cfg: TrainConfig
    attack: str
    candidates: Candidates


@dataclass(frozen=True)
class PruneJob:
    """One AgentPrune training: the team, its training tasks and every setting that decides
    the result (they form the key a saved spec is reused under)."""

    base: TeamSpec
    suite: str
    train_tasks: Sequence[Task]
    ratio: float
    cfg: TrainConfig
    model: str
    max_tokens: int
    attack: str = "none"
    candidates: Candidates = "existing"

    def training(self) -> _Training:
        """How its masks are trained and its team pruned (`learn_and_prune`'s settings)."""
        return _Training(
            ratio=self.ratio, cfg=self.cfg, attack=self.attack, candidates=self.candidates
        )

    def key(self) -> dict[str, object]:
        return {
            "team": self.base.model_dump(mode="json"),
            "suite": self.suite,
            "train": [t.id for t in self.train_tasks],
            "ratio": self.ratio,
            "cfg": asdict(self.cfg),
            "candidates": self.candidates,
            "attack": self.attack,
            "model": self.model,
            "max_tokens": self.max_tokens,
        }


async def train_or_load(
    job: PruneJob,
    out: Path,
    model: Callable[[], Model],
    rs: RunSettings,
    *,
    retrain: bool = False,
    on_train: Callable[[], None] | None = None,
    on_step: Callable[[StepInfo], None] | None = None,
) -> tuple[TeamSpec, dict[str, Any], bool]:
    """(pruned spec, training record, reused): the spec saved in `out` under the same key, or
    masks trained now (`on_train` is called first, `on_step` after each update) and saved."""
    prev = None if retrain else load_trained(out, job.key())
    if prev is not None:
        return prev[0], prev[1], True
    if on_train is not None:
        on_train()
    res = await learn_and_prune(
        job.base, model(), list(job.train_tasks), rs=rs, on_step=on_step, **job.training()
    )
    return res.spec, save_trained(out, job.key(), res), False


# the backend of a run, given a picklable factory of its configurations (see evaluate_pruned)
BackendFor = Callable[[Callable[[], Sequence[SolverConfig]]], Backend | Literal["asyncio"]]


def _team_configs(
    base: TeamSpec, pruned: TeamSpec, attack: str, rs: RunSettings
) -> dict[str, SolverConfig]:
    """The full and the pruned team as runner configurations, named by team, spec digest and
    attack (keys "full" and "pruned")."""
    specs = {"full": base, "pruned": pruned}
    names = {
        "full": f"full:{base.name}:{spec_digest(base)}:{attack}",
        "pruned": f"agentprune:{pruned.name}:{spec_digest(pruned)}:{attack}",
    }
    return {
        k: SolverConfig(
            names[k], f"{k} team", partial(spec_solver, team=spec, attack=attack, rs=rs)
        )
        for k, spec in specs.items()
    }


async def evaluate_pruned(
    base: TeamSpec,
    pruned: TeamSpec,
    tasks: Sequence[Task],
    *,
    attack: str,
    rs: RunSettings,
    model_name: str,
    load_model: Callable[[], Model],
    store: Path,
    progress: bool = False,
    backend_for: BackendFor | None = None,
) -> tuple[RunSummary, dict[str, list[ResultRecord]]]:
    """Run the full and the pruned team on the tasks (stored, resumable); their records.
    `backend_for`, given a picklable factory of the two configurations, gives the backend
    they run on (e.g. a `RayBackend` whose workers build them; None: asyncio)."""
    teams = _team_configs(base, pruned, attack, rs)
    configs = list(teams.values())
    ids = {t.id for t in tasks}
    backend = "asyncio" if backend_for is None else backend_for(partial(listed_configs, configs))
    with ResultStore(store) as st:
        summary = await run_experiment(
            configs=configs,
            tasks=list(tasks),
            seeds=[rs.seed],
            model_name=model_name,
            load_model=load_model,
            store=st,
            progress=progress,
            backend=backend,
        )
        recs = {
            k: [
                r
                for r in st.records(model=model_name, configs=[c.name])
                if r.key.task_id in ids and r.key.seed == rs.seed
            ]
            for k, c in teams.items()
        }
    return summary, recs


def comparison_rows(
    base: TeamSpec, pruned: TeamSpec, recs: dict[str, list[ResultRecord]]
) -> list[list[str]]:
    """Full vs pruned: edges, n, accuracy, errors, tokens per task and in total, ratios.
    Accuracy is over the answered tasks: an errored one is counted apart, not as wrong."""
    rows, full_p, full_c = [], 0, 0
    for k, spec in (("full", base), ("pruned", pruned)):
        rs = recs[k]
        n = len(rs)
        errors = sum(r.error is not None for r in rs)
        right = sum(r.correct for r in rs if r.error is None)
        p = sum(r.usage.prompt_tokens for r in rs)
        c = sum(r.usage.completion_tokens for r in rs)
        if k == "full":
            full_p, full_c = p, c
        rows.append(
            [
                f"{k} ({spec.name})",
                f"{len(spec.spatial_edges)}/{len(spec.temporal_edges)}",
                str(n),
                f"{right / (n - errors):.3f}" if n > errors else "-",
                str(errors),
                f"{p / n:.0f}" if n else "-",
                f"{c / n:.0f}" if n else "-",
                str(p),
                str(c),
                f"{p / full_p:.2f}x" if full_p else "-",
                f"{c / full_c:.2f}x" if full_c else "-",
            ]
        )
    return rows


def agent_tokens(rec: ResultRecord) -> tuple[int, int]:
    """Prompt and completion tokens of a record's agents (supervisors and decision excluded)."""
    ag = [u for k, u in rec.usage_by_actor.items() if k.startswith("agent:")]
    return sum(u.prompt_tokens for u in ag), sum(u.completion_tokens for u in ag)


def run_cost(rec: ResultRecord) -> RunCost:
    """The cost-model observation of a stored run."""
    p, c = agent_tokens(rec)
    x = rec.extra
    return RunCost(
        p,
        c,
        int(x.get("agent_calls", 0)),  # type: ignore[call-overload]
        int(x.get("spatial_deliveries", 0)),  # type: ignore[call-overload]
        int(x.get("temporal_deliveries", 0)),  # type: ignore[call-overload]
    )


@dataclass(frozen=True)
class CostModelTable:
    """Predicted (eq. 14-17) vs measured agent prompt tokens over all Q queries."""

    queries: int
    train_queries: int
    test_queries: int
    rows: list[list[str]]
    c_s: float
    c_q: float


def cost_model_table(
    base: TeamSpec,
    recs: dict[str, list[ResultRecord]],
    training: dict[str, Any],
    *,
    ratio: float,
    samples: int,
) -> CostModelTable | None:
    """The cost-model table; None when no run made a counted call or nothing was evaluated."""
    train_runs = [RunCost(**r) for r in training.get("runs", [])]
    eval_runs = [run_cost(r) for k in recs for r in recs[k]]
    if not any(r.calls for r in train_runs + eval_runs) or not recs["full"]:
        return None
    c = estimate_costs(train_runs + eval_runs)
    g = Graph.of(base)
    q1, q_test = len(training["key"]["train"]), len(recs["full"])
    q = q1 + q_test
    kw = {"queries": q, "train_queries": q1, "samples": samples, "ratio": ratio}
    tr, rest = query_level_cost(c, g, **kw)  # type: ignore[arg-type]
    delta = query_level_savings(c, g, **kw)  # type: ignore[arg-type]
    meas_vanilla = sum(agent_tokens(r)[0] for r in recs["full"]) / q_test * q
    train_prompt = sum(r.prompt_tokens for r in train_runs)
    meas_ap = train_prompt + sum(agent_tokens(r)[0] for r in recs["pruned"])
    rows = [
        ["vanilla (full team on all Q)", f"{vanilla_cost(c, g, q):.0f}", f"{meas_vanilla:.0f}*"],
        ["AgentPrune: training (eq. 15)", f"{tr:.0f}", str(train_prompt)],
        ["AgentPrune: pruned queries (eq. 16)", f"{rest:.0f}", f"{meas_ap - train_prompt:.0f}"],
        ["savings Delta (eq. 17)", f"{delta:.0f}", f"{meas_vanilla - meas_ap:.0f}*"],
    ]
    return CostModelTable(q, q1, q_test, rows, c.c_s, c.c_q)
