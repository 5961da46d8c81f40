"""`overseer prune`: learn edge masks on training tasks, prune once, compare full vs pruned."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from overseer.cli._app import InputError, app, out_console

if TYPE_CHECKING:
    from overseer.bench import ResultRecord
    from overseer.models import Model
    from overseer.prune import RunCost

TEAMS = ("chain", "star", "tree", "complete", "layered", "random", "agentprune-c",
         "agentprune-l", "agentprune-r")  # fmt: skip


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise InputError(msg)


def _agent_prompt(rec: ResultRecord) -> tuple[int, int]:
    ag = [u for k, u in rec.usage_by_actor.items() if k.startswith("agent:")]
    return sum(u.prompt_tokens for u in ag), sum(u.completion_tokens for u in ag)


def _run_cost(rec: ResultRecord) -> RunCost:
    from overseer.prune import RunCost

    p, c = _agent_prompt(rec)
    x = rec.extra
    return RunCost(
        p,
        c,
        int(x.get("agent_calls", 0)),  # type: ignore[call-overload]
        int(x.get("spatial_deliveries", 0)),  # type: ignore[call-overload]
        int(x.get("temporal_deliveries", 0)),  # type: ignore[call-overload]
    )


@app.command("prune")
def prune_cmd(
    suite: Annotated[str, typer.Option(help="Task suite: mmlu-sample, gsm8k-sample, humaneval.")],
    team: Annotated[str, typer.Option(help=f"Team: {', '.join(TEAMS)}.")] = "complete",
    agents: Annotated[int, typer.Option(help="Number of agents.")] = 5,
    rounds: Annotated[int, typer.Option(help="Dialogue rounds K per query.")] = 2,
    temporal: Annotated[str, typer.Option(help="Temporal edges: all, self or none.")] = "all",
    train: Annotated[int, typer.Option(help="Training queries Q' (train split).")] = 10,
    test: Annotated[int, typer.Option(help="Held-out test queries (test split).")] = 10,
    ratio: Annotated[float, typer.Option(help="Pruning ratio p (0..1).")] = 0.3,
    samples: Annotated[int, typer.Option(help="Sampled structures M per training query.")] = 1,
    lr: Annotated[float, typer.Option(help="Adam learning rate of the mask logits.")] = 0.1,
    rank_weight: Annotated[float, typer.Option(help="Weight of the nuclear norm.")] = 0.05,
    anchor_weight: Annotated[float, typer.Option(help="Weight of the anchor term.")] = 0.5,
    candidates: Annotated[str, typer.Option(help="Mask candidates: existing or all.")] = "existing",
    attack: Annotated[
        str, typer.Option(help="none, prompt (liar) or replace (gibberish).")
    ] = "none",
    model: Annotated[str, typer.Option(help="Local model name or openai:MODEL.")] = "smollm2-135m",
    base_url: Annotated[str | None, typer.Option(help="Server URL for openai:MODEL.")] = None,
    max_tokens: Annotated[int, typer.Option(help="Max tokens per model call.")] = 256,
    seed: Annotated[int, typer.Option(help="Seed: split, sampling, attack target.")] = 0,
    out: Annotated[Path, typer.Option(help="Where the pruned TeamSpec is written.")] = Path(
        "results/pruned.json"
    ),
    store: Annotated[Path, typer.Option(help="SQLite result store (resumable).")] = Path(
        "results/prune.sqlite"
    ),
    retrain: Annotated[bool, typer.Option(help="Train again even if --out matches.")] = False,
    share_thoughts: Annotated[
        bool,
        typer.Option(
            help="Agents send their reasoning with their answers (the seed's setting: whole "
            "responses travel on edges); default: answers only."
        ),
    ] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Train AgentPrune masks on training tasks, prune once, evaluate full vs pruned."""
    from overseer.models import load_model, model_card
    from overseer.prune import (
        ATTACKS,
        RunSettings,
        TrainConfig,
        build_team,
        learn_and_prune,
        load_trained,
        save_trained,
    )
    from overseer.tasks import load_suite

    _check(team in TEAMS, f"--team: expected one of {', '.join(TEAMS)}, got {team!r}")
    _check(1 <= agents <= 16, f"--agents: expected 1..16, got {agents}")
    _check(1 <= rounds <= 10, f"--rounds: expected 1..10, got {rounds}")
    _check(
        temporal in ("all", "self", "none"), f"--temporal: expected all|self|none, got {temporal!r}"
    )
    _check(train >= 1 and test >= 1, f"--train/--test: expected >= 1, got {train}, {test}")
    _check(0.0 <= ratio <= 1.0, f"--ratio: expected 0 <= p <= 1, got {ratio}")
    _check(attack in ATTACKS, f"--attack: expected one of {', '.join(ATTACKS)}, got {attack!r}")
    _check(
        candidates in ("existing", "all"),
        f"--candidates: expected existing|all, got {candidates!r}",
    )
    _check(max_tokens >= 16, f"--max-tokens: expected >= 16, got {max_tokens}")
    try:
        cfg = TrainConfig(
            lr=lr, samples=samples, rank_weight=rank_weight, anchor_weight=anchor_weight, seed=seed
        )
        train_tasks = load_suite(suite, split="train", seed=seed, limit=train)
        test_tasks = load_suite(suite, split="test", seed=seed, limit=test)
        base = build_team(
            team, agents, rounds=rounds, kind=train_tasks[0].kind, temporal=temporal, seed=seed
        )
        if share_thoughts:
            base = base.sharing_thoughts()
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if not model.startswith("openai:"):
        model_card(model)
    rs = RunSettings(max_tokens=max_tokens, trace_dir=Path("runs/prune"), seed=seed)
    loaded: list[Model] = []

    def get_model() -> Model:
        if not loaded:
            loaded.append(load_model(model, base_url=base_url))
        return loaded[0]

    console = out_console()
    key = {
        "team": base.model_dump(mode="json"),
        "suite": suite,
        "train": [t.id for t in train_tasks],
        "ratio": ratio,
        "cfg": asdict(cfg),
        "candidates": candidates,
        "attack": attack,
        "model": model,
        "max_tokens": max_tokens,
    }
    prev = None if retrain else load_trained(out, key)
    if prev is None:
        console.print(
            f"training masks: {len(train_tasks)} {suite} train queries x {samples} samples, "
            f"team {base.name} ({len(base.spatial_edges)} spatial, "
            f"{len(base.temporal_edges)} temporal edges), attack {attack}"
        )
        res = asyncio.run(
            learn_and_prune(
                base, get_model(), train_tasks, ratio=ratio, cfg=cfg, attack=attack,
                candidates=candidates, rs=rs,  # type: ignore[arg-type]
            )
        )  # fmt: skip
        pruned, training = res.spec, save_trained(out, key, res)
    else:
        pruned, training = prev
        console.print(f"reusing the pruned spec in {out} (same settings; --retrain to redo)")
    console.print(
        f"pruned spec: {out} ({len(pruned.spatial_edges)}/{len(base.spatial_edges)} spatial, "
        f"{len(pruned.temporal_edges)}/{len(base.temporal_edges)} temporal edges kept)"
    )
    _evaluate(console, base, pruned, test_tasks, training, model, get_model, store, attack, rs,
              ratio=ratio, samples=samples, progress=progress)  # fmt: skip
    for m in loaded:
        m.close()


def _evaluate(
    console: Any, base: Any, pruned: Any, tasks: list[Any], training: dict[str, Any],
    model_name: str, get_model: Any, store: Path, attack: str, rs: Any, *, ratio: float,
    samples: int, progress: bool,
) -> None:  # fmt: skip
    from overseer.bench import ResultStore, SolverConfig, run_experiment
    from overseer.prune import spec_digest, spec_solver

    names = {
        "full": f"full:{base.name}:{spec_digest(base)}:{attack}",
        "pruned": f"agentprune:{pruned.name}:{spec_digest(pruned)}:{attack}",
    }
    specs = {"full": base, "pruned": pruned}
    configs = [
        SolverConfig(
            names[k],
            f"{k} team",
            lambda m, s=specs[k]: spec_solver(m, s, attack=attack, rs=rs),
        )
        for k in ("full", "pruned")
    ]
    ids = {t.id for t in tasks}
    with ResultStore(store) as rs_store:
        summary = asyncio.run(
            run_experiment(
                configs=configs,
                tasks=tasks,
                seeds=[rs.seed],
                model_name=model_name,
                load_model=get_model,
                store=rs_store,
                progress=progress,
            )
        )
        console.print(
            f"{summary.planned} planned: {summary.already_done} already done, "
            f"{summary.ran} ran, {summary.errors} errors; store {store}"
        )
        recs: dict[str, list[ResultRecord]] = {k: [] for k in names}
        for k, cfg in names.items():
            recs[k] = [
                r
                for r in rs_store.records(model=model_name, configs=[cfg])
                if r.key.task_id in ids and r.key.seed == rs.seed
            ]
    _print_table(console, base, pruned, recs, attack)
    _print_cost_model(console, base, recs, training, ratio=ratio, samples=samples)


def _print_table(
    console: Any, base: Any, pruned: Any, recs: dict[str, list[ResultRecord]], attack: str
) -> None:
    t = Table(title=f"full vs AgentPrune on held-out tasks (attack: {attack})")
    for col in ("team", "edges S/T", "n", "acc", "err", "prompt/task", "compl/task",
                "prompt total", "compl total", "prompt vs full", "compl vs full"):  # fmt: skip
        t.add_column(col, justify="left" if col == "team" else "right")
    full_p = full_c = 0
    for k, spec in (("full", base), ("pruned", pruned)):
        rows = recs[k]
        n = len(rows)
        p = sum(r.usage.prompt_tokens for r in rows)
        c = sum(r.usage.completion_tokens for r in rows)
        if k == "full":
            full_p, full_c = p, c
        t.add_row(
            f"{k} ({spec.name})",
            f"{len(spec.spatial_edges)}/{len(spec.temporal_edges)}",
            str(n),
            f"{sum(r.correct for r in rows) / n:.3f}" if n else "-",
            str(sum(r.error is not None for r in rows)),
            f"{p / n:.0f}" if n else "-",
            f"{c / n:.0f}" if n else "-",
            str(p),
            str(c),
            f"{p / full_p:.2f}x" if full_p else "-",
            f"{c / full_c:.2f}x" if full_c else "-",
        )
    console.print(t)


def _print_cost_model(
    console: Any,
    base: Any,
    recs: dict[str, list[ResultRecord]],
    training: dict[str, Any],
    *,
    ratio: float,
    samples: int,
) -> None:
    from overseer.prune import (
        Graph,
        RunCost,
        estimate_costs,
        query_level_cost,
        query_level_savings,
        vanilla_cost,
    )

    train_runs = [RunCost(**r) for r in training.get("runs", [])]
    eval_runs = [_run_cost(r) for k in recs for r in recs[k]]
    usage = training["report"]["usage"]
    console.print(
        f"training cost (M x Q' = {training['report']['runs']} team runs): "
        f"{usage['prompt_tokens']} prompt, {usage['completion_tokens']} completion tokens"
    )
    if not any(r.calls for r in train_runs + eval_runs) or not recs["full"]:
        return
    c = estimate_costs(train_runs + eval_runs)
    g = Graph.of(base)
    q1, q_test = len(training["key"]["train"]), len(recs["full"])
    q = q1 + q_test
    pred_vanilla = vanilla_cost(c, g, q)
    tr, rest = query_level_cost(c, g, queries=q, train_queries=q1, samples=samples, ratio=ratio)
    delta = query_level_savings(c, g, queries=q, train_queries=q1, samples=samples, ratio=ratio)
    full_mean = sum(_agent_prompt(r)[0] for r in recs["full"]) / q_test
    meas_vanilla = full_mean * q
    meas_ap = sum(r.prompt_tokens for r in train_runs) + sum(
        _agent_prompt(r)[0] for r in recs["pruned"]
    )
    t = Table(title=f"agent prompt tokens over Q = {q} queries (Q' = {q1} train, {q_test} test)")
    for col in ("", "cost model (eq. 14-17)", "measured"):
        t.add_column(col, justify="left" if not col else "right")
    t.add_row("vanilla (full team on all Q)", f"{pred_vanilla:.0f}", f"{meas_vanilla:.0f}*")
    t.add_row(
        "AgentPrune: training (eq. 15)", f"{tr:.0f}", str(sum(r.prompt_tokens for r in train_runs))
    )
    t.add_row(
        "AgentPrune: pruned queries (eq. 16)",
        f"{rest:.0f}",
        f"{meas_ap - sum(r.prompt_tokens for r in train_runs):.0f}",
    )
    t.add_row("savings Delta (eq. 17)", f"{delta:.0f}", f"{meas_vanilla - meas_ap:.0f}*")
    console.print(t)
    console.print(
        f"measured averages: c_S = c_T = {c.c_s:.1f}, c_q = {c.c_q:.1f} tokens; "
        "* full-team tokens per test query scaled to all Q queries; the model charges "
        "temporal edges in every round, though the first round reads no previous one"
    )
