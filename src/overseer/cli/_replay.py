"""`overseer replay PATH`: the LLM-free rule tier over imported trajectories, offline."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from overseer.cli._app import InputError, Interrupted, app, out_console
from overseer.cli._io import emit_json
from overseer.cli._lab import need_lab

if TYPE_CHECKING:
    from rich.table import Table

    from overseer.traces import Trajectory
    from overseer.traces.replay import LogReplay, ReplayTotals

PATH_HELP = (
    "A Who&When log, an OpenAI chat transcript, an overseer trace, a directory of them, or "
    "whowhen / whowhen-hand / whowhen-alg (the packaged benchmark)."
)
_COLUMNS = (
    "log",
    "steps",
    "repeats",
    "loop blocks",
    "obs tok",
    "obs tok rules",
    "context tok",
    "context tok rules",
    "saved",
    "first firing vs mistake",
)


def load_logs(path: str) -> list[Trajectory]:
    """The trajectories at `path`; an unreadable or malformed file is one line naming it."""
    from overseer.traces import TraceFormatError, load_source

    try:
        return load_source(path)
    except (TraceFormatError, ValueError) as exc:
        raise InputError(str(exc)) from None


def _row(t: Table, r: LogReplay | ReplayTotals, name: str, steps: str, pos: str) -> None:
    saved = 1 - r.context_rules / r.context_logged if r.context_logged else 0.0
    t.add_row(
        name,
        steps,
        str(r.repeats),
        str(r.loop_blocks),
        f"{r.observation_tokens:,}",
        f"{r.observation_tokens_rules:,}",
        f"{r.context_logged:,}",
        f"{r.context_rules:,}",
        f"{saved:.0%}",
        pos,
    )


def _table(reps: list[LogReplay], tot: ReplayTotals, tokenizer: str, per_log: bool) -> Table:
    from rich.table import Table

    t = Table(title=f"rule tier replayed offline (tokens: {tokenizer})")
    for c in _COLUMNS:
        t.add_column(c, justify="left" if c in ("log", "first firing vs mistake") else "right")
    if per_log:
        for r in reps:
            pos = f"{r.position} ({r.first_firing} vs {r.mistake_step})"
            _row(t, r, r.id, str(r.n_steps), pos)
    where = ", ".join(f"{k} {v}" for k, v in sorted(tot.positions.items()))
    _row(t, tot, f"total ({tot.logs} logs)", str(sum(r.n_steps for r in reps)), where)
    return t


def _replay_doc(
    reps: list[LogReplay], tot: ReplayTotals, tokenizer: str, secs: float
) -> dict[str, object]:
    """The replay as JSON: totals, then each log without its step list."""
    return {
        "tokenizer": tokenizer,
        "seconds": round(secs, 1),
        "totals": dataclasses.asdict(tot),
        "logs": [
            {
                **{k: v for k, v in dataclasses.asdict(r).items() if k != "steps"},
                "position": r.position,
                "repeat_position": r.repeat_position,
            }
            for r in reps
        ],
    }


def _replay_all(logs: list[Trajectory], tokenizer: str, settings: Any) -> tuple[list[Any], bool]:
    """The replays of `logs` in order, and whether Ctrl-C stopped them early (the replays
    finished before it are kept, to be printed)."""
    from overseer.traces.replay import ModelTokenizer, replay

    tok = ModelTokenizer.load(tokenizer)
    reps: list[Any] = []
    try:
        for t in logs:
            reps.append(replay(t, tok, settings))
    except KeyboardInterrupt:
        return reps, True
    finally:
        tok.close()
    return reps, False


@app.command("replay")
def replay_cmd(
    path: Annotated[str, typer.Argument(help=PATH_HELP)],
    tokenizer: Annotated[
        str, typer.Option(help="Local model whose tokenizer counts tokens.")
    ] = "qwen2.5-coder-0.5b",
    loop_limit: Annotated[int, typer.Option(help="Identical actions allowed.")] = 2,
    mask_keep: Annotated[int, typer.Option(help="Observations kept whole.")] = 2,
    purify_over: Annotated[int, typer.Option(help="Purify observations over (chars).")] = 3000,
    budget_tokens: Annotated[int | None, typer.Option(help="Token budget per agent.")] = None,
    per_log: Annotated[bool, typer.Option("--per-log/--totals", help="One row per log.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Replay the rule tier (loop breaker, masking, purification, budgets) over trajectories:
    repeats, observation and context tokens with and without the rules, first firing vs the
    annotated mistake step. No model call; the tokenizer is the named local model's own.
    Ctrl-C prints the logs replayed so far (replay stores nothing)."""
    need_lab("overseer replay")
    from overseer.supervise.rules import RuleSettings
    from overseer.traces.replay import totals

    try:
        settings = RuleSettings(
            loop_limit=loop_limit,
            mask_keep=mask_keep,
            purify_over=purify_over,
            purify_keep=min(1500, purify_over - 1),
            budget_tokens=budget_tokens,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    logs = load_logs(path)
    start = time.perf_counter()
    reps, stopped = _replay_all(logs, tokenizer, settings)
    tot, secs = totals(reps), time.perf_counter() - start
    if as_json:
        emit_json({**_replay_doc(reps, tot, tokenizer, secs), "interrupted": stopped})
    elif reps or not stopped:
        out = out_console()
        out.print(_table(reps, tot, tokenizer, per_log))
        out.print(f"{len(reps)} logs replayed in {secs:.1f} s; rule firings: {tot.firings}")
    if stopped:
        shown = "printed above" if reps else "none finished"
        note = f"{len(reps)} of {len(logs)} logs replayed ({shown}); replay stores nothing"
        raise Interrupted(note=note)
