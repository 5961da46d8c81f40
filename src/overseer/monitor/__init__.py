"""Rogue-agent monitor: uncertainty features, trained monitors, rollback interventions."""

from overseer.monitor.features import (
    FEATURES,
    TOP_K,
    TurnFeatures,
    decision_positions,
    entropy,
    kurtosis,
    turn_features,
    varentropy,
)
from overseer.monitor.intervene import RandomMonitor, UncertaintyMonitor
from overseer.monitor.train import (
    Candidate,
    MonitorSet,
    RoleMonitor,
    monitor_files,
    report_lines,
    train_monitors,
)

__all__ = [
    "FEATURES",
    "TOP_K",
    "Candidate",
    "MonitorSet",
    "RandomMonitor",
    "RoleMonitor",
    "TurnFeatures",
    "UncertaintyMonitor",
    "decision_positions",
    "entropy",
    "kurtosis",
    "monitor_files",
    "report_lines",
    "train_monitors",
    "turn_features",
    "varentropy",
]
