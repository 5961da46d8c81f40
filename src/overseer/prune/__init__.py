"""AgentPrune: learn spatial-temporal edge masks by policy gradient, prune the team once.

Exported is the training (`TrainConfig`, `DialoguePruner`), the attacks it is measured under
(`ATTACKS`, `apply_attack`), the pruning itself (`EdgeMasks`, `prune_team`) and the cost model
(`estimate_costs`). The trainer, masks, attacks and cost internals stay in their submodules
(`overseer.prune.trainer`, `.masks`, `.attacks`, `.cost`, `.prune`). Learning and pruning on
benchmark tasks (`learn_and_prune`, `RunSettings`, ...) is `overseer.experiments.prune_runs`.
"""

from overseer.prune.attacks import ATTACKS, apply_attack
from overseer.prune.cost import estimate_costs
from overseer.prune.masks import EdgeMasks
from overseer.prune.prune import prune_team
from overseer.prune.trainer import DialoguePruner, TrainConfig

__all__ = [
    "ATTACKS",
    "DialoguePruner",
    "EdgeMasks",
    "TrainConfig",
    "apply_attack",
    "estimate_costs",
    "prune_team",
]
