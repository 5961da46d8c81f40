"""Monitor plug-ins on the bus: estimate success after each agent turn, roll back when it is low.

Any step that carries token logprobs (a game move, or a team agent's answer when the
Executor runs with `top_logprobs`) is featurised at its decision positions. The plug-in
returns `Verdict.rollback`; the bus applies it by rolling the channel back to its last
irreversible mark. Each role may trigger up to `cap` times per run (counters kept on the run).
Neither plug-in calls a model, so nothing is booked in the ledger.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from overseer.models import Model
from overseer.monitor.features import turn_features
from overseer.monitor.train import MonitorSet, RoleMonitor
from overseer.runtime import BaseSupervisor, Interaction, Run, Supervisor, Verdict

DEFAULT_KEYS = ("action", "character")


def _role(i: Interaction) -> str:
    return i.role or str(i.meta.get("role", "")) or i.local_task


def _triggers(plugin: object, run: Run) -> defaultdict[str, int]:
    """The plug-in's trigger counts by role in this run (kept on the run)."""
    return run.state(plugin, lambda: defaultdict(int))


class UncertaintyMonitor(BaseSupervisor):
    """Trained monitors per role; with none it only records each turn's feature row.

    `fallback_role` names the monitor used for a role the set has none for (a team's
    agents, whose roles are not the games' roles); None leaves such turns alone.
    `intervene=False` only estimates and counts the turns it would roll back: what a host
    that cannot roll back (a framework's run, the proxy) can run.
    """

    kinds = frozenset({"message", "move"})
    actions = frozenset({"rollback"})

    def __init__(
        self,
        monitors: MonitorSet | Mapping[str, RoleMonitor] | None = None,
        *,
        cap: int = 1,
        name: str = "rogue-monitor",
        fallback_role: str | None = None,
        intervene: bool = True,
    ) -> None:
        if cap < 0:
            raise ValueError(f"cap: expected >= 0 resets per role, got {cap}")
        if isinstance(monitors, MonitorSet):
            monitors = monitors.monitors
        self.monitors: dict[str, RoleMonitor] = dict(monitors or {})
        if fallback_role is not None and fallback_role not in self.monitors:
            raise ValueError(
                f"fallback_role: expected one of {sorted(self.monitors)}, got {fallback_role!r}"
            )
        self.cap = cap
        self.name = name
        self.fallback_role = fallback_role
        self.rows: list[dict[str, Any]] = []
        self.missing = 0
        self.intervene = intervene
        self.flagged = 0  # turns estimated below tau (rolled back when it intervenes)
        if not intervene:
            self.actions = frozenset()

    def _row(self, i: Interaction, run: Run) -> dict[str, Any] | None:
        if not i.logprobs:
            self.missing += 1
            return None
        keys = tuple(i.meta.get("decision_keys") or DEFAULT_KEYS)
        f = turn_features(i.logprobs, keys, i.round, positions=i.decision_positions)
        return {
            "game": run.id,
            "role": _role(i),
            "agent": i.agent,
            "turn": i.round,
            "attempt": int(i.meta.get("attempt", i.step)),
            "entropy": f.entropy,
            "varentropy": f.varentropy,
            "kurtosis": f.kurtosis,
            "positions": f.positions,
            "fallback": f.fallback,
        }

    def _monitor(self, role: str) -> RoleMonitor | None:
        m = self.monitors.get(role)
        if m is None and self.fallback_role is not None:
            m = self.monitors[self.fallback_role]
        return m

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        row = self._row(interaction, run)
        if row is None:
            return Verdict.approve(self.name)
        m = self._monitor(row["role"])
        est = m.estimate_row(row) if m is not None else None
        row["estimate"] = est
        self.rows.append(row)
        run.trace.event(
            "monitor_features",
            by=self.name,
            **{k: row[k] for k in _TRACED},
            estimate=est,
            tau=m.tau if m is not None else None,
        )
        if m is None or est is None or est >= m.tau:
            return Verdict.approve(self.name)
        self.flagged += 1
        triggers = _triggers(self, run)
        if not self.intervene or triggers[row["role"]] >= self.cap:
            return Verdict.approve(self.name)
        triggers[row["role"]] += 1
        reason = (
            f"{row['role']} {interaction.agent} turn {row['turn']}: estimated success "
            f"{est:.2f} < {m.tau:.2f}"
        )
        return Verdict.rollback(by=self.name, reason=reason)

    def stats(self, run: Run) -> Mapping[str, object]:
        """Turns featurised (from their logprobs), turns without logprobs, turns estimated
        below tau, and whether it rolls back."""
        return {
            "turns": len(self.rows),
            "without_logprobs": self.missing,
            "flagged": self.flagged,
            "intervenes": self.intervene,
        }


_TRACED = (
    "role",
    "agent",
    "turn",
    "attempt",
    "entropy",
    "varentropy",
    "kurtosis",
    "positions",
    "fallback",
)


class RandomMonitor(BaseSupervisor):
    """The baseline: triggers at each turn of a role with probability p[role], same caps."""

    kinds = frozenset({"message", "move"})
    actions = frozenset({"rollback"})

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

    async def on_interaction(self, interaction: Interaction, run: Run) -> Verdict:
        role = _role(interaction)
        p = self.p.get(role, 0.0)
        triggers = _triggers(self, run)
        if triggers[role] >= self.cap or not self.rng.random() < p:
            return Verdict.approve(self.name)
        triggers[role] += 1
        return Verdict.rollback(by=self.name, reason=f"random trigger (p={p:.3f}) for {role}")


#: top-k logprobs the agents ask for when the monitor is on the bus (the monitor's features)
MONITOR_TOP_LOGPROBS = 10


def monitor_plugin(path: str | Path, *, cap: int = 1) -> Callable[[Model], list[Supervisor]]:
    """A plug-in factory: an UncertaintyMonitor (the trained monitors of FILE, rollback) for each
    run. The file is read now, so a bad FILE fails before any run (ValueError naming it). A team
    agent's role has no monitor of its own: it is judged by the file's first role (the accuser's
    for a WhoDunitEnv file), the role that decides the game."""
    ms = MonitorSet.load(path)
    if not ms.monitors:
        raise ValueError(f"monitor file {path}: holds no trained monitor")
    first = next(iter(ms.monitors))

    def plugins(model: Model) -> list[Supervisor]:
        return [UncertaintyMonitor(ms, cap=cap, fallback_role=first)]

    return plugins
