"""`overseer monitor collect|train|eval`: the rogue-agent monitor on multi-agent games."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from overseer.cli._app import InputError, app, csv_list, out_console

monitor_app = typer.Typer(
    help="Rogue-agent monitor: collect games, train monitors, evaluate interventions.",
    no_args_is_help=True,
)
app.add_typer(monitor_app, name="monitor")

DEFAULT_STORE = Path("results") / "monitor.sqlite"

Env = Annotated[str, typer.Option(help="whodunit-asym, whodunit-sym, govsim or codegen.")]
ModelOpt = Annotated[str, typer.Option(help="Local model name or openai:MODEL.")]
Seed = Annotated[int, typer.Option(help="Sampling seed of the games.")]
Store = Annotated[Path, typer.Option(help="SQLite result store (resumable).")]
Suspects = Annotated[int | None, typer.Option(help="Characters per game (default: the seed's).")]
Attributes = Annotated[int | None, typer.Option(help="Attributes per character.")]
Turns = Annotated[
    int | None, typer.Option(help="Turn limit per game (govsim: months; codegen: rounds).")
]
Coders = Annotated[int | None, typer.Option(help="codegen: coders in the debate (1-4).")]
Thoughts = Annotated[int, typer.Option(help="Max characters of 'thoughts' (0: none).")]
MaxTokens = Annotated[
    int | None,
    typer.Option(help="Max tokens per agent answer (default: 160; codegen coders: 384)."),
]
BaseUrl = Annotated[str | None, typer.Option(help="Server URL for openai:MODEL.")]
Progress = Annotated[bool, typer.Option(help="Show progress bars.")]
TraceDir = Annotated[Path | None, typer.Option(help="Write one JSONL trace per game here.")]


def _setup(
    env: str, suspects, attributes, turns, thoughts, max_tokens, trace_dir, coders=None
) -> Any:
    from overseer.cli._monitor_games import ENVS, whodunit_setup
    from overseer.envs import WhoDunitConfig

    if env not in ENVS:
        raise InputError(f"--env: expected one of {', '.join(ENVS)}, got {env!r}")
    if coders is not None and env != "codegen":
        raise InputError(f"--coders: a codegen option, not for {env}")
    mt = {"max_tokens": max_tokens} if max_tokens is not None else {}
    if env == "codegen":
        from overseer.cli._monitor_games import codegen_setup
        from overseer.envs.codegen import CodeGenConfig

        if suspects is not None or attributes is not None:
            raise InputError("--suspects/--attributes: WhoDunitEnv options, not for codegen")
        sizes = {k: v for k, v in (("rounds", turns), ("n_coders", coders)) if v is not None}
        try:
            cfg = CodeGenConfig(**sizes, **mt)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        return codegen_setup(cfg, trace_dir=trace_dir)
    if env == "govsim":
        from overseer.cli._monitor_games import govsim_setup
        from overseer.envs.govsim import GovSimConfig

        if suspects is not None or attributes is not None:
            raise InputError("--suspects/--attributes: WhoDunitEnv options, not for govsim")
        try:
            cfg = GovSimConfig(**mt, **({"months": turns} if turns else {}))
        except ValueError as exc:
            raise InputError(str(exc)) from None
        return govsim_setup(cfg, trace_dir=trace_dir)
    sizes = {
        k: v
        for k, v in (("n_suspects", suspects), ("n_attributes", attributes), ("max_turns", turns))
        if v is not None
    }
    try:
        if env == "whodunit-asym":
            cfg = WhoDunitConfig(**sizes, thoughts_chars=thoughts, **mt)
        else:
            cfg = WhoDunitConfig.symmetric(**sizes, thoughts_chars=thoughts, **mt)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return whodunit_setup(env, cfg, trace_dir=trace_dir)


def _limit(tasks: list, n: int | None, what: str) -> list:
    if n is None:
        return tasks
    if n < 0:
        raise InputError(f"{what}: expected >= 0, got {n}")
    if n > len(tasks):
        raise InputError(f"{what}: the split has {len(tasks)} games, asked for {n}")
    return tasks[:n]


def _run(setup, configs, tasks, model, base_url, seed, store, progress) -> None:
    from overseer.bench import ResultStore, run_experiment
    from overseer.models import load_model, model_card

    if not model.startswith("openai:"):
        model_card(model)
    if not tasks:
        return
    with ResultStore(store) as rs:
        s = asyncio.run(
            run_experiment(
                configs=configs,
                tasks=tasks,
                seeds=[seed],
                model_name=model,
                load_model=lambda: load_model(model, base_url=base_url),
                store=rs,
                progress=progress,
            )
        )
    out_console().print(
        f"{setup.suite}: {s.planned} games planned, {s.already_done} already stored, "
        f"{s.ran} played, {s.errors} errors; store {store}"
    )


@monitor_app.command("collect")
def collect_cmd(
    env: Env = "whodunit-asym",
    model: ModelOpt = "smollm2-135m",
    games: Annotated[int | None, typer.Option(help="Training games (default: all).")] = None,
    val_games: Annotated[int | None, typer.Option(help="Validation games (default: all).")] = None,
    seed: Seed = 0,
    store: Store = DEFAULT_STORE,
    suspects: Suspects = None,
    attributes: Attributes = None,
    turns: Turns = None,
    thoughts: Thoughts = 160,
    max_tokens: MaxTokens = None,
    coders: Coders = None,
    base_url: BaseUrl = None,
    progress: Progress = True,
    trace_dir: TraceDir = None,
) -> None:
    """Play training and validation games without intervention, storing per-turn features."""
    from overseer.cli._monitor_games import game_config

    setup = _setup(env, suspects, attributes, turns, thoughts, max_tokens, trace_dir, coders)
    tasks = _limit(setup.games("train"), games, "--games")
    tasks += _limit(setup.games("validation"), val_games, "--val-games")
    _run(setup, [game_config("collect", setup)], tasks, model, base_url, seed, store, progress)
    _print_outcomes(setup, model, store, ["collect"])


@monitor_app.command("train")
def train_cmd(
    env: Env = "whodunit-asym",
    model: ModelOpt = "smollm2-135m",
    store: Store = DEFAULT_STORE,
    out: Annotated[Path | None, typer.Option(help="Monitor file (.json + .npz).")] = None,
    suspects: Suspects = None,
    attributes: Attributes = None,
    turns: Turns = None,
    thoughts: Thoughts = 160,
    max_tokens: MaxTokens = None,
    coders: Coders = None,
) -> None:
    """Train per-role monitors on the collected games and print the selection report."""
    from overseer.bench import ResultStore
    from overseer.cli._monitor_games import split_rows
    from overseer.monitor import report_lines, train_monitors

    setup = _setup(env, suspects, attributes, turns, thoughts, max_tokens, None, coders)
    if not store.is_file():
        raise InputError(f"--store: no result store at {store}; run `overseer monitor collect`")
    with ResultStore(store) as rs:
        recs = list(rs.records(suite=setup.suite, model=model, configs=["collect"]))
    train, val = split_rows(recs)
    if not train or not val:
        raise InputError(
            f"--store {store}: {setup.suite}/{model} has {len(train)} training and {len(val)} "
            "validation feature rows; collect both splits first"
        )
    try:
        ms = train_monitors(train, val, env=setup.suite, model=model)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    path = ms.save(out or _default_monitor(setup.suite, model))
    t = Table(title=f"monitor selection ({setup.suite}, {model}): gain on validation")
    for col in ("role", "features (+turn)", "degree", "tau", "gain", "TP/FP", "chosen"):
        t.add_column(col)
    for line in report_lines(ms):
        t.add_row(*line)
    console = out_console()
    console.print(t)
    m = ms.meta
    console.print(
        f"trained on {m['train_games']} games ({m['train_rows']} turns), selected on "
        f"{m['validation_games']} games (success {100 * m['validation_success_rate']:.1f}%); "
        f"saved {path}"
    )


def _default_monitor(suite: str, model: str) -> Path:
    return Path("results") / f"monitor-{suite}-{model.replace(':', '_').replace('/', '_')}.json"


@monitor_app.command("eval")
def eval_cmd(
    env: Env = "whodunit-asym",
    model: ModelOpt = "smollm2-135m",
    games: Annotated[int | None, typer.Option(help="Test games (default: all).")] = None,
    seed: Seed = 0,
    store: Store = DEFAULT_STORE,
    monitor: Annotated[Path | None, typer.Option(help="Monitor file from `train`.")] = None,
    caps: Annotated[str, typer.Option(help="Resets allowed per role, e.g. 1,2.")] = "1,2",
    suspects: Suspects = None,
    attributes: Attributes = None,
    turns: Turns = None,
    thoughts: Thoughts = 160,
    max_tokens: MaxTokens = None,
    coders: Coders = None,
    base_url: BaseUrl = None,
    progress: Progress = True,
    trace_dir: TraceDir = None,
) -> None:
    """Test games with no intervention, the trained monitor (per cap) and the random monitor."""
    from overseer.cli._monitor_games import game_config, monitor_tag
    from overseer.monitor import MonitorSet

    setup = _setup(env, suspects, attributes, turns, thoughts, max_tokens, trace_dir, coders)
    try:
        cap_list = sorted({int(c) for c in csv_list(caps, "--caps")})
    except ValueError:
        raise InputError(f"--caps: expected integers like 1,2, got {caps!r}") from None
    if any(c < 1 or c > 4 for c in cap_list):
        raise InputError(f"--caps: expected values 1..4, got {caps!r}")
    path = monitor or _default_monitor(setup.suite, model)
    try:
        ms = MonitorSet.load(path)
    except ValueError as exc:
        raise InputError(f"--monitor: {exc}; run `overseer monitor train` first") from None
    if ms.env != setup.suite:
        raise InputError(f"--monitor {path}: trained for {ms.env}, not {setup.suite}")
    tag = monitor_tag(path)
    configs = [game_config("none", setup)]
    for c in cap_list:
        configs.append(game_config(f"monitor-cap{c}@{tag}", setup, monitors=ms, cap=c))
    configs.append(
        game_config(
            f"random-cap{cap_list[0]}@{tag}", setup, monitors=ms, cap=cap_list[0], random=True
        )
    )
    tasks = _limit(setup.games("test"), games, "--games")
    _run(setup, configs, tasks, model, base_url, seed, store, progress)
    _print_outcomes(setup, model, store, [c.name for c in configs], ids={t.id for t in tasks})


def _print_outcomes(setup, model: str, store: Path, configs: list[str], ids=None) -> None:
    from overseer.bench import ResultStore
    from overseer.cli._monitor_games import eval_columns, eval_rows

    with ResultStore(store) as rs:
        recs = [
            r
            for r in rs.records(suite=setup.suite, model=model, configs=configs)
            if ids is None or r.key.task_id in ids
        ]
    t = Table(title=f"{setup.suite} with {model}")
    for col in eval_columns(setup.env):
        t.add_column(col, justify="left" if col == "config" else "right")
    for row in eval_rows(setup.env, recs, configs):
        t.add_row(*row)
    out_console().print(t)
