"""The lab's commands (benchmarks, reports, experiments, training, attribution, replay) need
the `bench` extra; the product's (serve, proxy, models, run, trace show) need none. A lab
command run without the extra ends with one line naming it, not an ImportError's traceback."""

from __future__ import annotations

import importlib.util

from overseer.errors import MissingExtra, install_hint

#: what the `bench` extra brings that the core does not, by import name (pyproject.toml)
LAB_MODULES = ("numpy", "scipy", "sklearn", "matplotlib")


def need_lab(command: str) -> None:
    """Return if the `bench` extra is installed; else MissingExtra (one line, exit 2) naming
    `command`, what is missing and the pip line that installs it."""
    missing = [m for m in LAB_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtra(
            f"{command} is part of the lab (benchmarks, reports, experiments) and needs "
            f"{', '.join(missing)}: {install_hint('bench')}",
            name=missing[0],
        )
