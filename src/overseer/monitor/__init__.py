"""Rogue-agent monitor: uncertainty features, trained monitors, rollback interventions.

Exported is what a user needs to train monitors (`train_monitors`, `MonitorSet`, `RoleMonitor`,
`monitor_files`, `report_lines`; training needs the `train` extra, scikit-learn), intervene with
them (`UncertaintyMonitor`, `RandomMonitor`; `monitor_plugin`: a factory of one per run, for a
bus) and compute the features (`turn_features`, `TurnFeatures`, `FEATURES`, `TOP_K`). The
statistics behind the features stay in `overseer.monitor.features`; experiments are in
`overseer.experiments.monitor`.
"""

from overseer.monitor.features import FEATURES, TOP_K, TurnFeatures, turn_features
from overseer.monitor.intervene import (
    MONITOR_TOP_LOGPROBS,
    RandomMonitor,
    UncertaintyMonitor,
    monitor_plugin,
)
from overseer.monitor.train import (
    MonitorSet,
    RoleMonitor,
    monitor_files,
    report_lines,
    train_monitors,
)

__all__ = [
    "FEATURES",
    "MONITOR_TOP_LOGPROBS",
    "TOP_K",
    "MonitorSet",
    "RandomMonitor",
    "RoleMonitor",
    "TurnFeatures",
    "UncertaintyMonitor",
    "monitor_files",
    "monitor_plugin",
    "report_lines",
    "train_monitors",
    "turn_features",
]
