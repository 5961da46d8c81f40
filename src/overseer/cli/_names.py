"""Names the help texts list, written here so that `--help` imports none of the packages that
do the work; tests/cli/test_help_speed.py checks each equals its package's own."""

from __future__ import annotations

#: overseer.runtime.PRESETS
PRESETS = ("chain", "star", "tree", "complete", "layered", "random", "debate")
#: overseer.traces.campaign.FREE_METHODS and METHODS
FREE_METHODS = ("random", "most-frequent", "first-repeat", "last-agent", "learned", "learned-boost")
METHODS = (*FREE_METHODS, "all-at-once", "step-by-step", "binary-search")
#: overseer.experiments.monitor.ENVS
ENVS = ("whodunit-asym", "whodunit-sym", "govsim", "codegen")
#: overseer.prune.ATTACKS
ATTACKS = ("none", "prompt", "replace")
