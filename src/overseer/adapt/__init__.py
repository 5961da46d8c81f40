"""MASFly: teams built from retrieved SOPs, a Watcher with an experience pool, distillation.

Exported is what a user needs to run MASFly (`MASFly`, `MASFlyConfig`), keep its SOP
repository (`Repository`, `RepositoryError`, `Case`, `SOP`, `SOPAgent`, `Need`,
`starter_cases`), its Watcher and experience (`Watcher`, `ExperiencePool`, `Experience`),
distil it (`Distiller`, `LeakageError`) and choose an embedder (`Embedder`, `TextEmbedder`).
Retrieval, instantiation and SOP conversion stay in their submodules (`overseer.adapt.sop`,
`.retrieve`, `.instantiate`, `.masfly`, `.watcher`, `.distill`, `.embed`); MASFly as bench
configurations and distillation campaigns are in `overseer.experiments`.
"""

from overseer.adapt.distill import Distiller, LeakageError
from overseer.adapt.embed import Embedder, TextEmbedder
from overseer.adapt.experience import Experience, ExperiencePool
from overseer.adapt.masfly import MASFly, MASFlyConfig
from overseer.adapt.repository import Case, Repository, RepositoryError
from overseer.adapt.sop import SOP, Need, SOPAgent
from overseer.adapt.starter import starter_cases
from overseer.adapt.watcher import Watcher

__all__ = [
    "SOP",
    "Case",
    "Distiller",
    "Embedder",
    "Experience",
    "ExperiencePool",
    "LeakageError",
    "MASFly",
    "MASFlyConfig",
    "Need",
    "Repository",
    "RepositoryError",
    "SOPAgent",
    "TextEmbedder",
    "Watcher",
    "starter_cases",
]
