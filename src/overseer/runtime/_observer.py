"""A watch-only plug-in: approves every interaction and reports each agent step to a callback.

Front ends (the CLI's live progress line) use it to show a long run as it goes without
touching the run: it returns no verdict but approve and books no model calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from overseer.runtime._interaction import ALL_KINDS, BaseSupervisor, Interaction, Verdict

if TYPE_CHECKING:
    from overseer.runtime._run import Run


@dataclass(frozen=True)
class StepReport:
    """One agent step as the observer saw it, with the run's token total so far."""

    agent: str
    round: int
    step: int
    kind: str
    tokens: int
    calls: int


class StepObserver(BaseSupervisor):
    """Approves everything; calls `report` with a StepReport after every interaction."""

    kinds: frozenset[str] = ALL_KINDS
    actions: frozenset[str] = frozenset({"approve"})

    def __init__(self, report: Callable[[StepReport], None], *, name: str = "progress") -> None:
        self.name = name
        self.report = report

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        ledger = run.ledger
        self.report(
            StepReport(
                agent=interaction.agent,
                round=interaction.round,
                step=interaction.step,
                kind=interaction.kind,
                tokens=ledger.total.total_tokens,
                calls=sum(ledger.calls_by_actor().values()),
            )
        )
        return Verdict.approve(self.name)
