"""The monitor claim on WhoDunitEnv-Asym: collect games, train the monitors, evaluate no
intervention, the monitor per reset cap and the random monitor, and one direct call that
sees both halves of each game."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from overseer.bench import ResultRecord, ResultStore, Solver, SolverConfig, SolverOutput
from overseer.evidence.runs import Context, Part, run_configs, stored
from overseer.models import Model, StructuredOutputError, ask_structured
from overseer.tasks import Task

ENV = "whodunit-asym"
CAPS = (1, 2)

if TYPE_CHECKING:
    from overseer.experiments.monitor import EnvSetup
    from overseer.monitor import MonitorSet


class _Pick(BaseModel):
    character: int


def _direct_solver(model: Model) -> Solver:
    from overseer.envs import Game
    from overseer.envs.whodunit import describe, lineup_text

    async def solve(task: Task, seed: int) -> SolverOutput:
        game = Game.from_dict(dict(task.meta["game"]))
        prompt = (
            f"There are {game.n} characters, numbered 1 to {game.n}:\n{lineup_text(game)}\n\n"
            f"Exactly one of them fits this description: {describe(game, game.culprit)}.\n"
            'Which character is it? Reply with JSON only: {"character": N}.'
        )
        msgs = [{"role": "user", "content": prompt}]
        try:
            out = await ask_structured(model, msgs, parse=_Pick, max_tokens=32, seed=seed)
        except StructuredOutputError as exc:  # no usable pick: a lost game, tokens kept
            return SolverOutput("failure", {"agent:solver": exc.usage}, extra={"invalid": 1})
        ok = out.value.character == game.culprit
        return SolverOutput("success" if ok else "failure", {"agent:solver": out.usage})

    return solve


DIRECT_GAME = SolverConfig("direct", "one call given both halves of the game", _direct_solver)


def monitor_file(ctx: Context) -> Path:
    """Where the claim saves its trained monitors (the compose claim reads them)."""
    return ctx.artefact("monitor.json")


def _setup(ctx: Context) -> EnvSetup:
    from overseer.experiments.monitor import env_setup

    return env_setup(ENV, turns=ctx.size["turns"], trace_dir=ctx.out_dir / "runs" / "monitor")


def trained_monitor(ctx: Context, setup: EnvSetup | None = None) -> Path:
    """The `train` + `val` games without intervention (stored, resumable) and the monitors
    fitted on them once: the monitor file (the monitor and the compose claims run it)."""
    from overseer.experiments.monitor import configs_factory, train_from_store

    setup = setup or _setup(ctx)
    size = ctx.size
    collect = setup.games("train")[: size["train"]] + setup.games("validation")[: size["val"]]
    run_configs(ctx, configs_factory(setup)(), collect)
    path = monitor_file(ctx)
    if not path.with_suffix(".json").is_file():
        train_from_store(ctx.store, setup, ctx.model).save(path)
    return path


def flagged(monitors: MonitorSet, rec: ResultRecord) -> bool | None:
    """Whether the trained monitor would reset this game (an estimate below its role's
    threshold at some turn), read from the turn features the game kept; None without them."""
    rows = rec.extra.get("rows")
    if not isinstance(rows, list) or not rows:
        return None
    for row in rows:
        m = monitors.monitors.get(str(row.get("role")))
        if m is not None and all(k in row for k in m.inputs) and m.estimate_row(row) < m.tau:
            return True
    return False


def precision_text(monitors: MonitorSet, games: list[ResultRecord]) -> str:
    """The monitor's precision on the games without intervention: of the games it would
    reset, the share that failed (the paper reports it, Table 7)."""
    flags = [(flagged(monitors, r), r.correct) for r in games if r.error is None]
    hit = [ok for f, ok in flags if f]
    if not hit:
        return "Monitor precision: no game without intervention would have been reset."
    failed = sum(not ok for ok in hit)
    base = sum(not ok for _, ok in flags)
    return (
        f"Monitor precision on the games without intervention: {failed}/{len(hit)} of the "
        f"games it would reset failed ({100 * failed / len(hit):.0f}%; {base}/{len(flags)} "
        "failed in all)."
    )


def monitor_parts(ctx: Context) -> list[Part]:
    """Collect, train (once), evaluate; the test games' part of the page."""
    from overseer.envs import Game
    from overseer.experiments.monitor import configs_factory
    from overseer.monitor import MonitorSet

    size, setup = ctx.size, _setup(ctx)
    path = trained_monitor(ctx, setup)
    test = setup.games("test")[: size["test"]]
    configs = [DIRECT_GAME, *configs_factory(setup, MonitorSet.load(path), path, CAPS)()]
    run_configs(ctx, configs, test)
    names = [c.name for c in configs]
    with ResultStore(ctx.store) as st:
        recs = stored(st, ctx, names, test)
    labels = {n: n.split("@")[0] for n in names}
    labels["direct"] = "one call, both halves"
    n_chars = Game.from_dict(dict(test[0].meta["game"])).n if test else 0
    note = (
        f"{size['train']} training and {size['val']} validation games (no intervention) "
        f"trained the monitor `{path.name}`; configuration names carry its content hash. "
        f"Chance level: {100 / max(n_chars, 1):.0f}% (a guess among {n_chars} characters). "
        + precision_text(MonitorSet.load(path), [r for r in recs if r.key.config == "none"])
    )
    acted = {n: reset for n in names if n not in ("direct", "none")}
    part = Part("WhoDunitEnv-Asym test games", recs, names, "none", labels, "success", note, acted)
    return [part]


def reset(rec: ResultRecord) -> bool | None:
    """Whether a game's monitor (or the random one) acted: it reset the game at least once."""
    return None if "resets" not in rec.extra else bool(rec.extra["resets"])
