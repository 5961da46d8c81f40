"""Multi-agent environments where one rogue agent can sink the team: WhoDunitEnv, GovSim,
CodeGen."""

from overseer.envs._attributes import ATTRIBUTES, attribute_table
from overseer.envs._loop import GameResult, call_seed, decide, play_whodunit
from overseer.envs.codegen import CodeGenConfig, CodeGenResult, codegen_splits, play_codegen
from overseer.envs.govsim import GovSimConfig, GovSimResult, govsim_splits, play_govsim
from overseer.envs.whodunit import (
    SPLITS,
    Game,
    WhoDunitConfig,
    action_schema,
    generate_games,
    system_prompt,
    user_prompt,
)

__all__ = [
    "ATTRIBUTES",
    "SPLITS",
    "CodeGenConfig",
    "CodeGenResult",
    "Game",
    "GameResult",
    "GovSimConfig",
    "GovSimResult",
    "WhoDunitConfig",
    "action_schema",
    "attribute_table",
    "call_seed",
    "codegen_splits",
    "decide",
    "generate_games",
    "govsim_splits",
    "play_codegen",
    "play_govsim",
    "play_whodunit",
    "system_prompt",
    "user_prompt",
]
