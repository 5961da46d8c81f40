"""The plug-ins of `overseer run` (`--rules`, `--supervise`, `--monitor`), built from the
product's packages (supervise, monitor) alone: `overseer run` is a product command and never
loads the lab, whose registry (`overseer.experiments.registry`) gives `overseer bench` the same
plug-ins by name (tests/cli/test_run_plugins.py checks that they agree)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any


def supervise_plugin(
    mode: str, supervisor_model: Any, filter_preset: str | None
) -> tuple[Any, str, int]:
    """The chain of `mode` for each run (the rule plug-ins, then the SupervisorAgent), built
    from the product's packages alone (what `supervise:MODE` of `overseer bench` puts on a
    bus, less the bench's tool verifier, which `overseer run` never used): (factory, what it
    is, top-k logprobs)."""
    from overseer.supervise import SupervisorSettings, preset
    from overseer.supervise.modes import mode_of, supervision_plugins

    mode_of(mode)
    base = SupervisorSettings()
    if filter_preset:
        base = replace(base, filter=preset(filter_preset))

    def make(model: Any) -> list[Any]:
        return supervision_plugins(
            mode, supervisor_model=supervisor_model, base=base, verifier=True
        )

    return make, f"supervision ({mode})", 0


def monitor_plugin(path: Path) -> tuple[Any, str, int]:
    """The trained rogue-agent monitor of FILE for each run (`monitor:FILE` of `overseer
    bench`): (factory, what it is, top-k logprobs its agents ask for)."""
    from overseer.monitor import MONITOR_TOP_LOGPROBS
    from overseer.monitor import monitor_plugin as make

    return make(path), f"rogue-agent monitor {path}", MONITOR_TOP_LOGPROBS
