"""Glue for `overseer monitor`: environments as runner tasks, game solvers, the eval table.

One game is one runner result keyed by (config, model, suite, task id = game id, seed); the
feature rows of every agent turn, labelled with the game's outcome, ride in `extra`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from overseer.bench import ResultRecord, SolverConfig, SolverOutput
from overseer.envs import Game, WhoDunitConfig, call_seed, generate_games, play_whodunit
from overseer.envs.codegen import CodeGenConfig, codegen_splits, play_codegen
from overseer.envs.govsim import GovSimConfig, govsim_splits, play_govsim
from overseer.models import Model
from overseer.monitor import MonitorSet, RandomMonitor, UncertaintyMonitor, monitor_files
from overseer.runtime import Supervisor
from overseer.tasks import Task

ENVS = ("whodunit-asym", "whodunit-sym", "govsim", "codegen")


@dataclass(frozen=True)
class EnvSetup:
    """An environment as the monitor commands see it: its suite name, games and player."""

    env: str
    suite: str
    games: Callable[[str], list[Task]]
    play: Callable[..., Any]  # async (meta, model, supervisors, seed, trace_dir) -> result


def _fingerprint(cfg: Any) -> str:
    """Empty for the default configuration, else a short hash of the non-default fields."""
    default = (
        type(cfg)()
        if not isinstance(cfg, WhoDunitConfig) or cfg.variant == "asym"
        else (WhoDunitConfig.symmetric())
    )
    diff = {
        f.name: getattr(cfg, f.name)
        for f in dataclasses.fields(cfg)
        if getattr(cfg, f.name) != getattr(default, f.name)
    }
    if not diff:
        return ""
    return hashlib.sha256(json.dumps(diff, sort_keys=True, default=str).encode()).hexdigest()[:8]


def whodunit_setup(env: str, cfg: WhoDunitConfig, *, trace_dir: Path | None = None) -> EnvSetup:
    """WhoDunitEnv games of each split as tasks; `play` runs one with the given supervisors."""
    fp = _fingerprint(cfg)
    suite = f"{env}-{cfg.tag}-{fp}" if fp else env
    cache: dict[str, dict[str, list[Game]]] = {}

    def games(split: str) -> list[Task]:
        if "all" not in cache:
            cache["all"] = generate_games(cfg)  # type: ignore[assignment]
        return [
            Task(
                suite,
                g.id,
                f"whodunit game {g.id}",
                "success",
                "text",
                meta={"game": g.to_dict(), "split": split},
            )
            for g in cache["all"][split]
        ]

    async def play(meta: Mapping[str, Any], model: Model, sups: list[Supervisor], seed: int):
        game = Game.from_dict(dict(meta["game"]))
        return await play_whodunit(
            game, model, cfg, supervisors=sups, seed=seed, trace_dir=trace_dir, max_resets=4
        )

    return EnvSetup(env, suite, games, play)


def govsim_setup(cfg: GovSimConfig, *, trace_dir: Path | None = None) -> EnvSetup:
    """GovSim fishing: one game per starting capacity R0 of the split (appendix D.1)."""
    fp = _fingerprint(cfg)
    suite = f"govsim-{fp}" if fp else "govsim"
    splits = govsim_splits()

    def games(split: str) -> list[Task]:
        return [
            Task(
                suite,
                f"govsim-{split}-r{r0}",
                f"govsim R0={r0}",
                "success",
                "text",
                meta={"r0": r0, "split": split},
            )
            for r0 in splits[split]
        ]

    async def play(meta: Mapping[str, Any], model: Model, sups: list[Supervisor], seed: int):
        return await play_govsim(
            int(meta["r0"]), model, cfg, supervisors=sups, seed=seed, trace_dir=trace_dir
        )

    return EnvSetup("govsim", suite, games, play)


def codegen_setup(cfg: CodeGenConfig, *, trace_dir: Path | None = None) -> EnvSetup:
    """CodeGen debates: one game per HumanEval problem of the split (`load_suite`'s split)."""
    fp = _fingerprint(cfg)
    suite = f"codegen-{fp}" if fp else "codegen"
    cache: dict[str, dict[str, list[Task]]] = {}

    def games(split: str) -> list[Task]:
        if "all" not in cache:
            cache["all"] = codegen_splits()
        return [
            Task(
                suite,
                t.id,
                f"codegen {t.id}",
                "success",
                "text",
                meta={
                    "split": split,
                    "problem": {
                        "id": t.id,
                        "prompt": t.prompt,
                        "test": t.meta["test"],
                        "entry_point": t.meta["entry_point"],
                    },
                },
            )
            for t in cache["all"][split]
        ]

    async def play(meta: Mapping[str, Any], model: Model, sups: list[Supervisor], seed: int):
        p = meta["problem"]
        task = Task(
            "humaneval",
            str(p["id"]),
            str(p["prompt"]),
            "",
            "code",
            meta={"test": p["test"], "entry_point": p["entry_point"]},
        )
        return await play_codegen(
            task, model, cfg, supervisors=sups, seed=seed, trace_dir=trace_dir, max_resets=4
        )

    return EnvSetup("codegen", suite, games, play)


def game_config(
    name: str,
    setup: EnvSetup,
    *,
    monitors: MonitorSet | None = None,
    cap: int = 0,
    random: bool = False,
) -> SolverConfig:
    """A runner configuration playing games with no monitor, the trained one, or random."""

    def build(model: Model):
        async def solve(task: Task, seed: int) -> SolverOutput:
            recorder = UncertaintyMonitor(None if random else monitors, cap=cap, name="recorder")
            sups: list[Supervisor] = [recorder]
            if random:
                if monitors is None:
                    raise ValueError("random monitor: needs the tuned p of a trained monitor set")
                rng = np.random.default_rng(call_seed(task.id, seed, "random-monitor"))
                sups.append(RandomMonitor(monitors.random_p, rng, cap=cap))
            r = await setup.play(task.meta, model, sups, seed)
            rows = [{**row, "game": task.id, "success": r.success} for row in recorder.rows]
            extra = {
                **r.summary(),
                "split": task.meta["split"],
                "rows": rows,
                "missing_logprobs": recorder.missing,
            }
            return SolverOutput(
                "success" if r.success else "failure", r.usage_by_actor, extra=extra
            )

        return solve

    return SolverConfig(name, f"{setup.env} games: {name}", build)


def monitor_tag(path: Path) -> str:
    """Short content hash of a saved monitor, so results of different monitors never mix."""
    jpath, npath = monitor_files(path)
    data = jpath.read_bytes() + npath.read_bytes()
    return hashlib.sha256(data).hexdigest()[:6]


def split_rows(records: Sequence[ResultRecord]) -> tuple[list[dict], list[dict]]:
    """Feature rows of the stored training and validation games (first attempt only)."""
    train: list[dict] = []
    val: list[dict] = []
    for rec in records:
        if rec.error is not None:
            continue
        rows = [r for r in rec.extra.get("rows", []) if r.get("attempt", 0) == 0]  # type: ignore[union-attr]
        split = rec.extra.get("split")
        (train if split == "train" else val if split == "validation" else []).extend(rows)
    return train, val


def eval_columns(env: str) -> tuple[str, ...]:
    """Columns of the comparison table of an environment."""
    if env == "codegen":
        return CODEGEN_COLUMNS
    return WHODUNIT_COLUMNS if env.startswith("whodunit") else GOVSIM_COLUMNS


def eval_rows(env: str, records: Sequence[ResultRecord], order: Sequence[str]) -> list[list[str]]:
    """Rows of the comparison table, one per configuration, in `order`."""
    rows = _whodunit_rows if env.startswith("whodunit") else _govsim_rows
    if env == "codegen":
        rows = _codegen_rows
    by: dict[str, list[ResultRecord]] = {}
    for rec in records:
        if rec.error is None:
            by.setdefault(rec.key.config, []).append(rec)
    return [[name, str(len(by[name])), *rows(by[name])] for name in order if name in by]


def _mean(recs: Sequence[ResultRecord], key: str) -> float:
    return float(np.mean([float(r.extra.get(key, 0) or 0) for r in recs]))  # type: ignore[arg-type]


def _whodunit_rows(recs: Sequence[ResultRecord]) -> list[str]:
    """Success rate, precision (success when an award was given), length, resets, tokens."""
    n = len(recs)
    ok = sum(r.correct for r in recs)
    awarded = sum(r.extra.get("ended") == "award" for r in recs)
    toks = np.mean([r.usage.total_tokens for r in recs])
    prec = f"{100 * ok / awarded:.1f}" if awarded else "-"
    return [
        f"{100 * ok / n:.1f}",
        prec,
        f"{_mean(recs, 'turns'):.1f}",
        f"{_mean(recs, 'resets'):.2f}",
        f"{toks:.0f}",
    ]


def _govsim_rows(recs: Sequence[ResultRecord]) -> list[str]:
    """Survival rate, survival time, efficiency, equality, over-usage, resets, tokens."""
    toks = np.mean([r.usage.total_tokens for r in recs])
    return [
        f"{100 * np.mean([r.correct for r in recs]):.1f}",
        f"{_mean(recs, 'survival_time'):.1f}",
        f"{100 * _mean(recs, 'efficiency'):.1f}",
        f"{100 * _mean(recs, 'equality'):.1f}",
        f"{100 * _mean(recs, 'over_usage'):.1f}",
        f"{_mean(recs, 'resets'):.2f}",
        f"{toks:.0f}",
    ]


def _codegen_rows(recs: Sequence[ResultRecord]) -> list[str]:
    """Pass@1, share with any final solution passing, resets, unusable answers, tokens."""
    toks = np.mean([r.usage.total_tokens for r in recs])
    anyp = np.mean([any(r.extra.get("solved_by") or [False]) for r in recs])  # type: ignore[arg-type]
    return [
        f"{100 * np.mean([r.correct for r in recs]):.1f}",
        f"{100 * anyp:.1f}",
        f"{_mean(recs, 'resets'):.2f}",
        f"{_mean(recs, 'invalid_actions'):.2f}",
        f"{toks:.0f}",
    ]


CODEGEN_COLUMNS = ("config", "games", "pass@1 %", "any-pass %", "resets", "invalid", "tokens")
WHODUNIT_COLUMNS = ("config", "games", "success %", "precision %", "length", "resets", "tokens")
GOVSIM_COLUMNS = (
    "config",
    "games",
    "survival %",
    "survival time",
    "efficiency %",
    "equality %",
    "over-usage %",
    "resets",
    "tokens",
)
