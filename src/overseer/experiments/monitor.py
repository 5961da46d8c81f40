"""Monitor experiments on the games: environments as runner tasks, game solvers, collect /
train / eval steps and their tables (what `overseer monitor collect|train|eval` runs).

One game is one runner result keyed by (config, model, suite, task id = game id, seed); the
feature rows of every agent turn, labelled with the game's outcome, ride in `extra`. The monitor
package itself knows neither the games (`overseer.envs`) nor the runner.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np

from overseer.bench import (
    ResultRecord,
    ResultStore,
    SolverConfig,
    SolverOutput,
)
from overseer.envs import Game, WhoDunitConfig, call_seed, generate_games, play_whodunit
from overseer.envs.codegen import CodeGenConfig, codegen_splits, play_codegen
from overseer.envs.govsim import GovSimConfig, govsim_splits, play_govsim
from overseer.models import Model
from overseer.monitor.intervene import RandomMonitor, UncertaintyMonitor
from overseer.monitor.train import MonitorSet, monitor_files, train_monitors
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
    args: Mapping[str, Any] = field(default_factory=dict)  # env_setup's arguments, if built so


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


def _check_sizes(
    env: str, suspects: int | None, attributes: int | None, coders: int | None
) -> None:
    """ValueError unless `env` is known and has every size given."""
    if env not in ENVS:
        raise ValueError(f"env: expected one of {', '.join(ENVS)}, got {env!r}")
    if env in ("codegen", "govsim") and (suspects is not None or attributes is not None):
        raise ValueError(f"suspects/attributes: WhoDunitEnv sizes, not for {env}")
    if coders is not None and env != "codegen":
        raise ValueError(f"coders: a codegen size, not for {env}")


def env_setup(
    env: str,
    *,
    suspects: int | None = None,
    attributes: int | None = None,
    turns: int | None = None,
    coders: int | None = None,
    thoughts: int = 160,
    max_tokens: int | None = None,
    trace_dir: Path | None = None,
) -> EnvSetup:
    """The setup of an environment with the given sizes (None: the seed's defaults); sizes an
    environment does not have, or bad values, raise ValueError. It keeps these arguments in
    `args`, so a Ray worker can build the same setup (`game_configs`)."""
    # keyword arguments of the config classes (their fields have several types)
    mt: dict[str, Any] = {"max_tokens": max_tokens} if max_tokens is not None else {}
    _check_sizes(env, suspects, attributes, coders)
    if env == "codegen":
        sizes: dict[str, Any] = {
            k: v for k, v in (("rounds", turns), ("n_coders", coders)) if v is not None
        }
        ccfg = CodeGenConfig(**sizes, **mt)
        setup = codegen_setup(ccfg, trace_dir=trace_dir)
    elif env == "govsim":
        months: dict[str, Any] = {"months": turns} if turns else {}
        setup = govsim_setup(GovSimConfig(**mt, **months), trace_dir=trace_dir)
    else:
        named = (("n_suspects", suspects), ("n_attributes", attributes), ("max_turns", turns))
        sizes = {k: v for k, v in named if v is not None}
        make = WhoDunitConfig if env == "whodunit-asym" else WhoDunitConfig.symmetric
        wcfg = make(**sizes, thoughts_chars=thoughts, **mt)
        setup = whodunit_setup(env, wcfg, trace_dir=trace_dir)
    args = {
        "env": env,
        "suspects": suspects,
        "attributes": attributes,
        "turns": turns,
        "coders": coders,
        "thoughts": thoughts,
        "max_tokens": max_tokens,
        "trace_dir": trace_dir,
    }
    return dataclasses.replace(setup, args=args)


def default_monitor_path(suite: str, model: str) -> Path:
    """Where `overseer monitor train` saves the monitors of a suite and model by default."""
    return Path("results") / f"monitor-{suite}-{model.replace(':', '_').replace('/', '_')}.json"


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


def eval_configs(
    setup: EnvSetup, monitors: MonitorSet, path: Path, caps: Sequence[int]
) -> list[SolverConfig]:
    """No intervention, the trained monitor with each reset cap, the random monitor (first
    cap); names carry the monitor's content hash, so results of different monitors never mix."""
    _check_monitors(setup, monitors, path)
    return _eval_configs(setup, monitors, monitor_tag(path), caps)


def _check_monitors(setup: EnvSetup, monitors: MonitorSet, path: Path) -> None:
    if monitors.env != setup.suite:
        raise ValueError(f"{path}: trained for {monitors.env}, not {setup.suite}")


def _eval_configs(
    setup: EnvSetup, monitors: MonitorSet, tag: str, caps: Sequence[int]
) -> list[SolverConfig]:
    configs = [game_config("none", setup)]
    for c in caps:
        configs.append(game_config(f"monitor-cap{c}@{tag}", setup, monitors=monitors, cap=c))
    first = caps[0]
    configs.append(
        game_config(f"random-cap{first}@{tag}", setup, monitors=monitors, cap=first, random=True)
    )
    return configs


def game_configs(
    setup_args: Mapping[str, Any],
    monitors: MonitorSet | None = None,
    tag: str = "",
    caps: Sequence[int] = (),
) -> list[SolverConfig]:
    """`collect`'s configuration (no `monitors`) or `eval`'s (as `eval_configs`), built from
    `env_setup`'s arguments alone: a Ray worker given a partial of this builds the same ones."""
    setup = env_setup(**setup_args)
    if monitors is None:
        return [game_config("collect", setup)]
    return _eval_configs(setup, monitors, tag, caps)


def configs_factory(
    setup: EnvSetup,
    monitors: MonitorSet | None = None,
    path: Path | None = None,
    caps: Sequence[int] = (),
) -> Callable[[], list[SolverConfig]]:
    """A picklable factory of `collect`'s configuration (no `monitors`) or `eval`'s (the
    monitors saved at `path`), for `run_experiment` and Ray workers; ValueError as `eval_configs`
    or for a setup not built by `env_setup`."""
    if not setup.args:
        raise ValueError(f"{setup.suite}: a setup built by env_setup (workers rebuild it)")
    if monitors is None:
        return partial(game_configs, dict(setup.args))
    if path is None:
        raise ValueError("path: the saved monitors' file (their tag names the configurations)")
    _check_monitors(setup, monitors, path)
    return partial(game_configs, dict(setup.args), monitors, monitor_tag(path), tuple(caps))


def collected_rows(store: Path, setup: EnvSetup, model: str) -> tuple[list[dict], list[dict]]:
    """Training and validation feature rows of the games `collect` stored."""
    with ResultStore(store) as rs:
        return split_rows(list(rs.records(suite=setup.suite, model=model, configs=["collect"])))


class MissingGamesError(ValueError):
    """The store lacks the collected games of a split."""


def train_from_store(store: Path, setup: EnvSetup, model: str) -> MonitorSet:
    """Per-role monitors trained on the collected games; MissingGamesError if a split has
    none, ValueError if they cannot be trained."""
    train, val = collected_rows(store, setup, model)
    if not train or not val:
        raise MissingGamesError(
            f"{store}: {setup.suite}/{model} has {len(train)} training and {len(val)} "
            "validation feature rows; collect both splits first"
        )
    return train_monitors(train, val, env=setup.suite, model=model)


def outcome_rows(
    setup: EnvSetup, store: Path, model: str, configs: Sequence[str], ids: Iterable[str] | None
) -> list[list[str]]:
    """The comparison rows of stored games (only games `ids`, if given)."""
    keep = set(ids) if ids is not None else None
    with ResultStore(store) as rs:
        recs = [
            r
            for r in rs.records(suite=setup.suite, model=model, configs=list(configs))
            if keep is None or r.key.task_id in keep
        ]
    return eval_rows(setup.env, recs, configs)


def split_rows(records: Sequence[ResultRecord]) -> tuple[list[dict], list[dict]]:
    """Feature rows of the stored training and validation games (first attempt only)."""
    train: list[dict] = []
    val: list[dict] = []
    for rec in records:
        if rec.error is not None:
            continue
        # rows as game_config's solver stored them: a list of feature dicts
        stored = cast(list[dict[str, Any]], rec.extra.get("rows", []))
        rows = [r for r in stored if r.get("attempt", 0) == 0]
        split = rec.extra.get("split")
        (train if split == "train" else val if split == "validation" else []).extend(rows)
    return train, val


Cell = Callable[[Sequence[ResultRecord]], str]


def _mean(recs: Sequence[ResultRecord], key: str) -> float:
    return float(np.mean([float(r.extra.get(key, 0) or 0) for r in recs]))  # type: ignore[arg-type]


def _avg(key: str, fmt: str = ".1f", scale: float = 1.0) -> Cell:
    """A cell: the mean of `extra[key]` over the games, times `scale`."""
    return lambda recs: f"{scale * _mean(recs, key):{fmt}}"


def _correct(recs: Sequence[ResultRecord]) -> str:
    return f"{100 * np.mean([r.correct for r in recs]):.1f}"


def _success(recs: Sequence[ResultRecord]) -> str:
    return f"{100 * sum(r.correct for r in recs) / len(recs):.1f}"


def _precision(recs: Sequence[ResultRecord]) -> str:
    """Success rate among the games that ended with an award."""
    awarded = sum(r.extra.get("ended") == "award" for r in recs)
    return f"{100 * sum(r.correct for r in recs) / awarded:.1f}" if awarded else "-"


def _any_pass(recs: Sequence[ResultRecord]) -> str:
    anyp = np.mean([any(r.extra.get("solved_by") or [False]) for r in recs])  # type: ignore[arg-type]
    return f"{100 * anyp:.1f}"


def _tokens(recs: Sequence[ResultRecord]) -> str:
    return f"{np.mean([r.usage.total_tokens for r in recs]):.0f}"


_RESETS = ("resets", _avg("resets", ".2f"))
# env -> the columns after "config" and "games", each with how its cell is computed
_METRICS: dict[str, tuple[tuple[str, Cell], ...]] = {
    "whodunit": (
        ("success %", _success),
        ("precision %", _precision),
        ("length", _avg("turns")),
        _RESETS,
        ("tokens", _tokens),
    ),
    "govsim": (
        ("survival %", _correct),
        ("survival time", _avg("survival_time")),
        ("efficiency %", _avg("efficiency", scale=100)),
        ("equality %", _avg("equality", scale=100)),
        ("over-usage %", _avg("over_usage", scale=100)),
        _RESETS,
        ("tokens", _tokens),
    ),
    "codegen": (
        ("pass@1 %", _correct),
        ("any-pass %", _any_pass),
        _RESETS,
        ("invalid", _avg("invalid_actions", ".2f")),
        ("tokens", _tokens),
    ),
}


def _metrics(env: str) -> tuple[tuple[str, Cell], ...]:
    return _METRICS["whodunit" if env.startswith("whodunit") else env]


def eval_columns(env: str) -> tuple[str, ...]:
    """Columns of the comparison table of an environment (errored games last)."""
    return ("config", "games", *(name for name, _ in _metrics(env)), "errors")


def eval_rows(env: str, records: Sequence[ResultRecord], order: Sequence[str]) -> list[list[str]]:
    """Rows of the comparison table, one per configuration, in `order`. `games` and the
    figures count the games that finished; an errored game is neither a success nor a
    failure, it is counted in the last column."""
    cells = [cell for _, cell in _metrics(env)]
    by: dict[str, list[ResultRecord]] = {}
    errors: Counter[str] = Counter()
    for rec in records:
        if rec.error is None:
            by.setdefault(rec.key.config, []).append(rec)
        else:
            errors[rec.key.config] += 1
    return [
        [name, str(len(by.get(name, []))), *_cells(cells, by.get(name, [])), str(errors[name])]
        for name in order
        if name in by or errors[name]
    ]


def _cells(cells: Sequence[Cell], recs: Sequence[ResultRecord]) -> list[str]:
    return [cell(recs) if recs else "-" for cell in cells]
