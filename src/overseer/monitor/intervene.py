"""Monitor plug-ins on the bus: estimate success after each agent turn, roll back when it is low.

An environment's loop sends each agent turn as an Interaction whose `meta` holds the turn's
token logprobs (`logprobs`), the role's decision keys (`decision_keys`), `role`, `turn` and
`attempt`. The plug-in returns `Verdict.rollback`; the loop (or the Executor) applies it by
rolling the channel back to its last irreversible mark. Each role may trigger up to `cap`
times per run. Neither plug-in calls a model, so nothing is booked in the ledger.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from overseer.monitor.features import turn_features
from overseer.monitor.train import MonitorSet, RoleMonitor
from overseer.runtime import BaseSupervisor, Interaction, Run, Verdict

DEFAULT_KEYS = ("action", "character")


class UncertaintyMonitor(BaseSupervisor):
    """Trained monitors per role; with none it only records each turn's feature row."""

    kinds = frozenset({"message"})

    def __init__(
        self,
        monitors: MonitorSet | Mapping[str, RoleMonitor] | None = None,
        *,
        cap: int = 1,
        name: str = "rogue-monitor",
    ) -> None:
        if cap < 0:
            raise ValueError(f"cap: expected >= 0 resets per role, got {cap}")
        if isinstance(monitors, MonitorSet):
            monitors = monitors.monitors
        self.monitors: dict[str, RoleMonitor] = dict(monitors or {})
        self.cap = cap
        self.name = name
        self.rows: list[dict[str, Any]] = []
        self.triggers: dict[str, int] = defaultdict(int)
        self.missing = 0

    def _row(self, i: Interaction, run: Run) -> dict[str, Any] | None:
        meta = i.meta
        lp = meta.get("logprobs")
        if not lp:
            self.missing += 1
            return None
        turn = int(meta.get("turn", i.round))
        f = turn_features(lp, tuple(meta.get("decision_keys", DEFAULT_KEYS)), turn)
        return {
            "game": run.id,
            "role": str(meta.get("role", i.local_task)),
            "agent": i.agent,
            "turn": turn,
            "attempt": int(meta.get("attempt", i.step)),
            "entropy": f.entropy,
            "varentropy": f.varentropy,
            "kurtosis": f.kurtosis,
            "positions": f.positions,
            "fallback": f.fallback,
        }

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        row = self._row(interaction, run)
        if row is None:
            return Verdict.approve(self.name)
        m = self.monitors.get(row["role"])
        est = m.estimate_row(row) if m is not None else None
        row["estimate"] = est
        self.rows.append(row)
        if m is None or est is None or est >= m.tau or self.triggers[row["role"]] >= self.cap:
            return Verdict.approve(self.name)
        self.triggers[row["role"]] += 1
        reason = (
            f"{row['role']} {interaction.agent} turn {row['turn']}: estimated success "
            f"{est:.2f} < {m.tau:.2f}"
        )
        run.trace.event(
            "monitor_trigger",
            by=self.name,
            role=row["role"],
            estimate=est,
            tau=m.tau,
            turn=row["turn"],
        )
        return Verdict.rollback(by=self.name, reason=reason)


class RandomMonitor(BaseSupervisor):
    """The baseline: triggers at each turn of a role with probability p[role], same caps."""

    kinds = frozenset({"message"})

    def __init__(
        self,
        p: Mapping[str, float],
        rng: np.random.Generator,
        *,
        cap: int = 1,
        name: str = "random-monitor",
    ) -> None:
        for role, v in p.items():
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"p[{role!r}]: expected a probability in [0, 1], got {v}")
        self.p = dict(p)
        self.rng = rng
        self.cap = cap
        self.name = name
        self.triggers: dict[str, int] = defaultdict(int)

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        role = str(interaction.meta.get("role", interaction.local_task))
        p = self.p.get(role, 0.0)
        if self.triggers[role] >= self.cap or not self.rng.random() < p:
            return Verdict.approve(self.name)
        self.triggers[role] += 1
        return Verdict.rollback(by=self.name, reason=f"random trigger (p={p:.3f}) for {role}")
