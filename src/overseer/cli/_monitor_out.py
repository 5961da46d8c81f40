"""What `overseer monitor` prints: the selection report of trained monitors and the outcome
table of a store's games."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from overseer.cli._app import out_console

if TYPE_CHECKING:
    from overseer.experiments.monitor import EnvSetup
    from overseer.monitor import MonitorSet


def print_line(text: str) -> None:
    """One line on stdout."""
    out_console().print(text)


def print_selection(ms: MonitorSet, what: str, path: Path) -> None:
    """The per-role selection report of freshly trained monitors and where they were saved."""
    from rich.table import Table

    from overseer.monitor import report_lines

    t = Table(title=f"monitor selection ({what}): gain on validation")
    for col in ("role", "features (+turn)", "degree", "tau", "gain", "TP/FP", "chosen"):
        t.add_column(col)
    for line in report_lines(ms):
        t.add_row(*line)
    console, m = out_console(), ms.meta
    console.print(t)
    console.print(
        f"trained on {m['train_games']} games ({m['train_rows']} turns), selected on "
        f"{m['validation_games']} games (success {100 * m['validation_success_rate']:.1f}%); "
        f"saved {path}"
    )


def print_outcomes(
    setup: EnvSetup, model: str, store: Path, configs: list[str], ids: set[str] | None = None
) -> None:
    """The outcome table of the store's games of `configs` (only `ids`, when given)."""
    from rich.table import Table

    from overseer.experiments.monitor import eval_columns, outcome_rows

    t = Table(title=f"{setup.suite} with {model}")
    for col in eval_columns(setup.env):
        t.add_column(col, justify="left" if col == "config" else "right")
    for row in outcome_rows(setup, store, model, configs, ids):
        t.add_row(*row)
    out_console().print(t)
