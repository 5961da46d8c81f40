"""AgentPrune: learn spatial-temporal edge masks by policy gradient, prune the team once.

Exported is the experiment a user runs (`learn_and_prune`, `RunSettings`, `TrainConfig`,
`PruneResult`, `VARIANTS`, `build_team`, `spec_solver`, `spec_digest`, `save_trained`,
`load_trained`), the attacks it is measured under (`ATTACKS`, `apply_attack`), the pruning
itself (`EdgeMasks`, `prune_team`, `DialoguePruner`) and the cost model (`estimate_costs`).
The trainer, masks, attacks and cost internals stay in their submodules
(`overseer.prune.trainer`, `.masks`, `.attacks`, `.cost`, `.prune`, `.pipeline`).
"""

from overseer.prune.attacks import ATTACKS, apply_attack
from overseer.prune.cost import estimate_costs
from overseer.prune.masks import EdgeMasks
from overseer.prune.pipeline import (
    VARIANTS,
    PruneResult,
    RunSettings,
    build_team,
    learn_and_prune,
    load_trained,
    save_trained,
    spec_digest,
    spec_solver,
)
from overseer.prune.prune import prune_team
from overseer.prune.trainer import DialoguePruner, TrainConfig

__all__ = [
    "ATTACKS",
    "VARIANTS",
    "DialoguePruner",
    "EdgeMasks",
    "PruneResult",
    "RunSettings",
    "TrainConfig",
    "apply_attack",
    "build_team",
    "estimate_costs",
    "learn_and_prune",
    "load_trained",
    "prune_team",
    "save_trained",
    "spec_digest",
    "spec_solver",
]
