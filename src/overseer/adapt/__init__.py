"""MASFly: teams built from retrieved SOPs, a Watcher with an experience pool, distillation."""

from overseer.adapt.distill import Distiller, DistillRecord, LeakageError, training_ids
from overseer.adapt.embed import Embedder, TextEmbedder, cosine
from overseer.adapt.experience import Experience, ExperiencePool
from overseer.adapt.instantiate import Instantiation, instantiate
from overseer.adapt.masfly import MASFly, MASFlyConfig, Outcome, Plan, plant_attack
from overseer.adapt.repository import Case, Hit, Repository, RepositoryError
from overseer.adapt.retrieve import NeedAnalysis, Retriever, analyse_need
from overseer.adapt.sop import (
    SOP,
    AgentLesson,
    Need,
    Reflection,
    SOPAgent,
    SOPError,
    sop_to_team,
    team_to_sop,
)
from overseer.adapt.starter import starter_cases
from overseer.adapt.watcher import WatchDecision, Watcher

__all__ = [
    "SOP",
    "AgentLesson",
    "Case",
    "DistillRecord",
    "Distiller",
    "Embedder",
    "Experience",
    "ExperiencePool",
    "Hit",
    "Instantiation",
    "LeakageError",
    "MASFly",
    "MASFlyConfig",
    "Need",
    "NeedAnalysis",
    "Outcome",
    "Plan",
    "Reflection",
    "Repository",
    "RepositoryError",
    "Retriever",
    "SOPAgent",
    "SOPError",
    "TextEmbedder",
    "WatchDecision",
    "Watcher",
    "analyse_need",
    "cosine",
    "instantiate",
    "plant_attack",
    "sop_to_team",
    "starter_cases",
    "team_to_sop",
    "training_ids",
]
