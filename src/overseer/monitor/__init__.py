"""Rogue-agent monitor: uncertainty features, trained monitors, rollback interventions.

Exported is what a user needs to train monitors (`train_monitors`, `MonitorSet`, `RoleMonitor`,
`monitor_files`, `report_lines`), intervene with them (`UncertaintyMonitor`, `RandomMonitor`) and
compute the features (`turn_features`, `TurnFeatures`, `FEATURES`, `TOP_K`). The statistics
behind the features stay in `overseer.monitor.features`; experiments are in
`overseer.experiments.monitor`.
"""

from overseer.monitor.features import FEATURES, TOP_K, TurnFeatures, turn_features
from overseer.monitor.intervene import RandomMonitor, UncertaintyMonitor
from overseer.monitor.train import (
    MonitorSet,
    RoleMonitor,
    monitor_files,
    report_lines,
    train_monitors,
)

__all__ = [
    "FEATURES",
    "TOP_K",
    "MonitorSet",
    "RandomMonitor",
    "RoleMonitor",
    "TurnFeatures",
    "UncertaintyMonitor",
    "monitor_files",
    "report_lines",
    "train_monitors",
    "turn_features",
]
