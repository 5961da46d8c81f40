"""AgentPrune on benchmark tasks: teams (presets and the -C/-L/-R variants), training rollouts
through the Executor, learn-then-prune, and solvers the bench runner can store results of."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from overseer.bench import ExecutorSettings, Solver, SolverOutput, run_team
from overseer.bench.solvers import TeamSetup
from overseer.models import Model, Usage
from overseer.prune.attacks import AttackedTeam, apply_attack
from overseer.prune.cost import RunCost
from overseer.prune.masks import Candidates, EdgeMasks
from overseer.prune.prune import prune_team
from overseer.prune.trainer import Rollout, RolloutFn, TrainConfig, TrainReport, train_query_level
from overseer.runtime import Budget, TeamSpec, make_team
from overseer.tasks import Task, ascore

VARIANTS: dict[str, str] = {
    "agentprune-c": "complete",
    "agentprune-l": "layered",
    "agentprune-r": "random",
}
POOL_BY_KIND = {"mc": "reasoning", "numeric": "math", "code": "code", "text": "reasoning"}


def build_team(
    preset: str, agents: int, *, rounds: int, kind: str, temporal: str = "all", seed: int = 0
) -> TeamSpec:
    """A preset team for a task kind; AgentPrune-C/-L/-R are complete/layered/random spatial
    graphs with all-to-all temporal edges (seed section 4.2), to be trained and pruned."""
    base = VARIANTS.get(preset, preset)
    if preset in VARIANTS:
        temporal = "all"
    return make_team(
        base,
        agents,
        rounds=rounds,
        pool=POOL_BY_KIND[kind],
        temporal=temporal,  # type: ignore[arg-type]
        seed=seed,
    )


def spec_digest(team: TeamSpec) -> str:
    """A short digest of a spec, so stored results of different specs never mix."""
    return hashlib.sha256(team.to_json().encode()).hexdigest()[:8]


@dataclass(frozen=True)
class RunSettings:
    """How each team run is executed: per-call token cap, agent steps, trace folder, seed,
    and the budget of each run (training and test runs alike; None: unlimited)."""

    max_tokens: int = 256
    max_steps: int = 2
    trace_dir: Path = Path("runs/prune")
    seed: int = 0
    budget: Budget | None = None


async def _run_task(
    model: Model, attacked: AttackedTeam, task: Task, rs: RunSettings, seed: int, tag: str
) -> tuple[SolverOutput, RunCost]:
    settings = ExecutorSettings(
        trace_dir=rs.trace_dir,
        max_steps=rs.max_steps,
        max_tokens=rs.max_tokens,
        seed=rs.seed,
        budget=rs.budget,
    )
    setup = TeamSetup(attacked.team, models=attacked.models, run_tag=tag)
    out, res = await run_team(model, setup, task, seed, settings)
    cost = RunCost.of(attacked.team, res)
    extra = {
        **out.extra,
        "agent_calls": cost.calls,
        "spatial_deliveries": cost.spatial_deliveries,
        "temporal_deliveries": cost.temporal_deliveries,
        "spatial_edges": len(attacked.team.spatial_edges),
        "temporal_edges": len(attacked.team.temporal_edges),
    }
    return replace(out, extra=extra), cost


def task_rollout(
    model: Model, tasks: list[Task], *, attack: str, rs: RunSettings, costs: list[RunCost]
) -> RolloutFn:
    """Training rollouts: the sampled team (under the attack) on training task q, scored."""

    async def rollout(team: TeamSpec, q: int, k: int) -> Rollout:
        attacked = apply_attack(team, attack, rs.seed)
        out, cost = await _run_task(model, attacked, tasks[q], rs, rs.seed, f"train-q{q}-m{k}")
        costs.append(cost)
        value = 0.0
        if out.error is None:
            value = (await ascore(tasks[q], out.answer)).value
        return Rollout(value, sum(out.usage_by_actor.values(), Usage()), out.error)

    return rollout


@dataclass
class PruneResult:
    """The pruned team (clean agents, pruned edges), the learned masks, training cost."""

    spec: TeamSpec
    masks: EdgeMasks
    report: TrainReport
    costs: list[RunCost] = field(default_factory=list)


async def learn_and_prune(
    team: TeamSpec,
    model: Model,
    train_tasks: list[Task],
    *,
    ratio: float,
    cfg: TrainConfig,
    attack: str = "none",
    candidates: Candidates = "existing",
    rs: RunSettings | None = None,
    on_step: Callable[..., None] | None = None,
) -> PruneResult:
    """Query-level AgentPrune: train masks on the training tasks (with the attacker present,
    if any), prune once with ratio p, return the pruned spec of the original agents."""
    if not train_tasks:
        raise ValueError("train_tasks: expected at least one training task")
    rs = rs or RunSettings(seed=cfg.seed)
    masks = EdgeMasks.from_team(team, candidates=candidates)
    costs: list[RunCost] = []
    rollout = task_rollout(model, train_tasks, attack=attack, rs=rs, costs=costs)
    report = await train_query_level(masks, team, rollout, len(train_tasks), cfg, on_step=on_step)
    return PruneResult(prune_team(team, masks, ratio), masks, report, costs)


def spec_solver(model: Model, team: TeamSpec, *, attack: str, rs: RunSettings) -> Solver:
    """A runner solver that runs `team` (under `attack`) on each task."""

    async def solve(task: Task, seed: int) -> SolverOutput:
        attacked = apply_attack(team, attack, rs.seed)
        out, _ = await _run_task(model, attacked, task, rs, seed, f"eval-{team.name}")
        return out

    return solve


def load_trained(out: Path, key: dict[str, object]) -> tuple[TeamSpec, dict[str, object]] | None:
    """A pruned spec and its training record saved by `save_trained` under the same key."""
    side = out.with_suffix(".train.json")
    if not (out.is_file() and side.is_file()):
        return None
    try:
        data = json.loads(side.read_text())
    except json.JSONDecodeError:
        return None
    if data.get("key") != json.loads(json.dumps(key, default=str)):
        return None
    return TeamSpec.load(out), data


def save_trained(out: Path, key: dict[str, object], res: PruneResult) -> dict[str, object]:
    """Write the pruned spec to `out` and masks, training history and costs beside it."""
    res.spec.save(out)
    record: dict[str, object] = {
        "key": json.loads(json.dumps(key, default=str)),
        "masks": res.masks.to_dict(),
        "report": res.report.to_dict(),
        "runs": [asdict(c) for c in res.costs],
    }
    out.with_suffix(".train.json").write_text(json.dumps(record, indent=2) + "\n")
    return record
